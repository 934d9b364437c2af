package serve

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/runtime/sim"
)

// noCapability is a backend that serves nothing the front door knows.
type noCapability struct{}

func (noCapability) Info() runtime.Info { return runtime.Info{Model: "m"} }
func (noCapability) Close() error       { return nil }

func TestSetBackendRefusesABackendThatServesNothing(t *testing.T) {
	s, err := New(Config{Model: "m", MaxConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetBackend(noCapability{}); !errors.Is(err, errNoCapability) {
		t.Fatalf("SetBackend = %v, want errNoCapability", err)
	}
	if s.Ready() {
		t.Error("the server is ready with a backend that serves nothing")
	}
}

// TestRoutesFollowCapabilities: what a backend can do decides the routes
// it serves, in one place. A route the backend cannot serve is refused
// with 404, naming what the unit serves, before its credentials are
// looked at; a route it serves asks for them.
func TestRoutesFollowCapabilities(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte("k1"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(auth.ModeAPIKey, secret, auth.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	image, err := sim.NewMedia(sim.MediaConfig{Model: "img", Task: runtime.TaskImage, Runner: "tt-sdxl-trace", Workers: [][]int{{0}},
		ImageSizes: []string{"512x512"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { image.Close() })
	text := startServer(t, Config{Model: "m", MaxConcurrency: 1, Auth: v}, newSim(t))
	media := startServer(t, Config{Model: "img", MaxConcurrency: 1, Auth: v}, image)
	for _, c := range []struct {
		name, url, method, path string
		code                    int
		says                    string
	}{
		{"text unit, its route", text, "POST", "/v1/completions", 401, ""},
		{"text unit, a media route", text, "POST", "/v1/images/generations", 404, "a text model on runtime sim; it does not serve /v1/images/generations"},
		{"text unit, not an Embedder", text, "POST", "/v1/embeddings", 404, "it does not serve /v1/embeddings"},
		{"media unit, its route", media, "POST", "/v1/images/generations", 401, ""},
		{"media unit, the model list", media, "GET", "/v1/models", 401, ""},
		{"media unit, a text route", media, "POST", "/v1/chat/completions", 404, "image model; /v1/chat/completions is for text models"},
		{"media unit, another task", media, "POST", "/v1/audio/speech", 404, "it does not serve /v1/audio/speech (its routes: POST /v1/images/"},
		{"no backend forwards", text, "GET", "/v1/responses", 404, "no route for GET /v1/responses"},
	} {
		req, _ := http.NewRequest(c.method, c.url+c.path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, resp.StatusCode, body, c.code, c.says)
		}
	}
}
