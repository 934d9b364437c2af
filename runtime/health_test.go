package runtime

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// ProbeHealth sends the caller's headers, returns the status and headers
// as they came, and reads no more of the body than an error message needs.
func TestProbeHealth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" || r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set(HeaderPID, "42")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Repeat("x", 3*maxHealthBody)))
	}))
	defer srv.Close()
	a, err := ProbeHealth(context.Background(), srv.Client(), srv.URL, http.Header{"Authorization": {"Bearer k"}})
	if err != nil || a.Ready() || a.Status != http.StatusServiceUnavailable || a.Header.Get(HeaderPID) != "42" || len(a.Body) != maxHealthBody {
		t.Fatalf("answer %d %v (%d body bytes), %v", a.Status, a.Header, len(a.Body), err)
	}
	if a, err := ProbeHealth(context.Background(), srv.Client(), srv.URL, nil); err != nil || a.Status != http.StatusNotFound {
		t.Fatalf("without credentials: %d, %v", a.Status, err)
	}
	srv.Close()
	if _, err := ProbeHealth(context.Background(), srv.Client(), srv.URL, nil); err == nil {
		t.Fatal("a closed server answered")
	}
}
