package target

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime/openai"
)

// fakeClock is an injected clock whose sleeps advance it without waiting.
type fakeClock struct {
	now    time.Time
	sleeps int
	onSlp  func(n int)
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	c.sleeps++
	if c.onSlp != nil {
		c.onSlp(c.sleeps)
	}
	return nil
}

// loadingServer answers /health with 503 for its first `loading` probes,
// then 200 (a ttis unit building its model), and lists one model.
func loadingServer(t *testing.T, loading int64, health int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			if probes.Add(1) <= loading {
				http.Error(w, `{"error":{"message":"model loading"}}`, http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(health)
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"served"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &probes
}

func client(t *testing.T, url string) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestWaitReadyWhileLoading(t *testing.T) {
	srv, probes := loadingServer(t, 20, http.StatusOK)
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	var lines []string
	r := Ready{Timeout: 5 * time.Minute, Poll: 5 * time.Second, Report: 30 * time.Second, Now: clk.Now, Sleep: clk.Sleep,
		Progress: func(l string) { lines = append(lines, l) }}
	if err := WaitReady(context.Background(), client(t, srv.URL), r); err != nil {
		t.Fatal(err)
	}
	if probes.Load() != 21 || clk.sleeps != 20 {
		t.Errorf("%d probes, %d sleeps; want 21 and 20", probes.Load(), clk.sleeps)
	}
	// One line at the first failure, then one per 30 s of waiting, and the
	// end of the wait.
	if len(lines) != 5 || !strings.Contains(lines[0], "(0s of 5m0s): http_status 503: GET /health: model loading") ||
		!strings.Contains(lines[1], "(30s of 5m0s)") || lines[4] != srv.URL+" is ready after 1m40s" {
		t.Errorf("progress lines:\n%s", strings.Join(lines, "\n"))
	}
}

func TestWaitReadyBounded(t *testing.T) {
	srv, probes := loadingServer(t, 1<<30, http.StatusOK)
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	err := WaitReady(context.Background(), client(t, srv.URL), Ready{Timeout: time.Minute, Poll: 10 * time.Second, Now: clk.Now, Sleep: clk.Sleep})
	if err == nil || !strings.Contains(err.Error(), "was not ready after 1m0s (7 probes)") || !strings.Contains(err.Error(), "--wait-ready") ||
		!strings.Contains(err.Error(), "model loading") || probes.Load() != 7 {
		t.Errorf("after the bound: %v (%d probes)", err, probes.Load())
	}
}

// A port nobody listens on yet, then a server that starts there: a vLLM
// container does not listen until its model is loaded.
func TestWaitReadyUntilListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	t.Cleanup(func() { _ = srv.Close() })
	clk := &fakeClock{now: time.Unix(1e9, 0), onSlp: func(n int) {
		if n == 3 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return
			}
			go func() { _ = srv.Serve(l) }()
		}
	}}
	var lines []string
	err = WaitReady(context.Background(), client(t, "http://"+addr), Ready{Timeout: time.Minute, Now: clk.Now, Sleep: clk.Sleep,
		Progress: func(l string) { lines = append(lines, l) }})
	if err != nil || clk.sleeps != 3 || len(lines) != 2 || !strings.Contains(lines[0], "refused") {
		t.Errorf("err %v after %d sleeps, lines %q", err, clk.sleeps, lines)
	}
}

func TestWaitReadyFailsAtOnce(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"bad token"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(refuse.Close)
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	err := WaitReady(context.Background(), client(t, refuse.URL), Ready{Timeout: time.Hour, Now: clk.Now, Sleep: clk.Sleep})
	if err == nil || !strings.Contains(err.Error(), "401") || clk.sleeps != 0 {
		t.Errorf("401: %v after %d sleeps", err, clk.sleeps)
	}
	// No /health at all: the model list decides.
	noHealth := ttisServer(t, nil)
	if err := WaitReady(context.Background(), client(t, noHealth.URL), Ready{Timeout: time.Hour, Now: clk.Now, Sleep: clk.Sleep}); err != nil || clk.sleeps != 0 {
		t.Errorf("server without /health: %v after %d sleeps", err, clk.sleeps)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv, _ := loadingServer(t, 1<<30, http.StatusOK)
	if err := WaitReady(ctx, client(t, srv.URL), Ready{Timeout: time.Hour}); err == nil {
		t.Error("a cancelled wait returned nil")
	}
}

// Resolve waits when the query asks it to.
func TestResolveWaitsForAStartingServer(t *testing.T) {
	srv, probes := loadingServer(t, 2, http.StatusOK)
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	tgt, err := Resolve(context.Background(), Query{URL: srv.URL, Ready: Ready{Timeout: time.Minute, Now: clk.Now, Sleep: clk.Sleep}})
	if err != nil || tgt.Model != "served" || probes.Load() != 3 {
		t.Errorf("Resolve = %+v, %v after %d probes", tgt, err, probes.Load())
	}
	if _, err := Resolve(context.Background(), Query{URL: srv.URL + "x", Ready: Ready{Timeout: time.Minute, Now: clk.Now, Sleep: clk.Sleep}}); err == nil {
		t.Error("Resolve of a bad URL succeeded")
	}
}
