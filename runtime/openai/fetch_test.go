package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Fetch hands back whatever the server answered: an empty 200 (vLLM's
// /health) and a 503 alike, with the client's credentials sent.
func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "loading")
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]struct {
		status int
		body   string
	}{"/health": {200, ""}, "/down": {503, "loading"}} {
		resp, err := c.Fetch(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.status || string(b) != want.body {
			t.Errorf("%s: %d %q, want %d %q", path, resp.StatusCode, b, want.status, want.body)
		}
	}
}
