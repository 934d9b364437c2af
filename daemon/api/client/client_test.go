package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/units"
)

func TestErrorPredicates(t *testing.T) {
	nf := &Error{Status: 404, Code: api.CodeNotFound, Message: "no such unit"}
	if !IsNotFound(nf) || IsNotFound(&Error{Code: api.CodeConflict}) || IsNotFound(errors.New("x")) {
		t.Error("IsNotFound")
	}
	un := &UnreachableError{Socket: "/s", Err: errors.New("refused")}
	if !IsUnreachable(un) || IsUnreachable(nf) {
		t.Error("IsUnreachable")
	}
	if got := un.Error(); got != "cannot reach ttisd at /s: is it running? (refused)" {
		t.Errorf("message %q", got)
	}
}

// busyServer answers 503 busy to the first busy requests, then 200, and
// counts the requests.
func busyServer(t *testing.T, busy int) (*Client, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(n.Add(1)) <= busy {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeBusy, Message: "ttisd is serving its limit of 1 status queries at once"}})
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/logs"):
			_ = json.NewEncoder(w).Encode(api.LogLine{Text: "l"})
		default:
			_ = json.NewEncoder(w).Encode(api.UnitDetail{Unit: api.Unit{View: units.View{Name: "a"}}})
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return New(sock), &n
}

// A query that finds the daemon busy is sent again until it is answered;
// an action and a log stream are not.
func TestBusyRetries(t *testing.T) {
	ctx := context.Background()
	cl, n := busyServer(t, 2)
	if u, err := cl.Unit(ctx, "a", 0); err != nil || u.Name != "a" || n.Load() != 3 {
		t.Fatalf("Unit = %+v, %v after %d requests; want an answer on the third", u, err, n.Load())
	}
	cl, n = busyServer(t, 1)
	if _, err := cl.Restart(ctx, "a"); !IsBusy(err) || n.Load() != 1 {
		t.Fatalf("Restart: %v after %d requests; want busy after one", err, n.Load())
	}
	cl, n = busyServer(t, 1)
	err := cl.Logs(ctx, "a", 1, true, func(api.LogLine) error { return nil })
	if !IsBusy(err) || n.Load() != 1 || !strings.Contains(err.Error(), "limit of 1 status queries") {
		t.Fatalf("Logs -f: %v after %d requests; want busy after one", err, n.Load())
	}
	// Retries end with the caller's context.
	cl, n = busyServer(t, 1000)
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := cl.Units(ctx); !IsBusy(err) || n.Load() < 2 {
		t.Fatalf("Units against a daemon busy for ever: %v after %d requests; want busy after a retry", err, n.Load())
	}
}
