package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/runtime/vllm"
)

// TestPassthroughOnUpstream serves routes the front door does not
// implement from the upstream (a stand-in for vLLM), with auth, admission
// and metrics in front.
func TestPassthroughOnUpstream(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" body="+string(b))
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/embeddings":
			if strings.Contains(string(b), "hold") {
				<-release
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}]}`)
		case "/v1/responses":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n")
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"Not Found"}`)
		}
	}))
	defer upstream.Close()

	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte("k1"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(auth.ModeAPIKey, secret, auth.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	front, err := New(Config{Model: "up", MaxConcurrency: 1, MaxQueue: 0, Auth: v, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	up := proxyUpstream{Proxy: vllm.NewProxy(strings.TrimPrefix(upstream.URL, "http://"), 10*time.Second), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() {
		runDone <- front.run(ctx, ln, func(context.Context) (runtime.Backend, error) { return up, nil })
	}()
	defer func() {
		cancel()
		<-runDone
	}()
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := get(t, url+"/health"); code != 200; code, _ = get(t, url+"/health") {
		if time.Now().After(deadline) {
			t.Fatal("front door never became healthy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	do := func(method, path, body, key string) (int, string) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := do("POST", "/v1/embeddings", `{"input":"hi"}`, ""); code != 401 {
		t.Errorf("no key: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/embeddings", `{"input":"hi"}`, "k1"); code != 200 || !strings.Contains(body, `"embedding":[0.1,0.2]`) {
		t.Errorf("embeddings: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/responses", `{"input":"hi","stream":true}`, "k1"); code != 200 || !strings.Contains(body, "response.completed") {
		t.Errorf("responses: %d %q", code, body)
	}
	// The upstream's own 404 comes back as it is.
	if code, body := do("GET", "/v1/unknown", "", "k1"); code != 404 || !strings.Contains(body, "Not Found") {
		t.Errorf("upstream 404: %d %s", code, body)
	}
	// Administrative routes stop at the front door.
	if code, body := do("POST", "/v1/load_lora_adapter", `{}`, "k1"); code != 403 || !strings.Contains(body, "does not pass it through") {
		t.Errorf("admin route: %d %s", code, body)
	}
	// Admission: with the one slot held by an embeddings request, the next
	// is refused (max_queue 0).
	held := make(chan int, 1)
	go func() {
		code, _ := do("POST", "/v1/embeddings", `{"input":"hold"}`, "k1")
		held <- code
	}()
	for front.m.running.Load() != 1 {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("the held request never took the slot")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := do("POST", "/v1/embeddings", `{"input":"x"}`, "k1"); code != 429 {
		t.Errorf("second request with the slot held: %d %s", code, body)
	}
	close(release)
	if code := <-held; code != 200 {
		t.Errorf("held request: %d", code)
	}
	// Admitted requests are in the latency metrics: the embeddings, the
	// responses and the held request.
	// (The last is observed once the proxy has finished, just after the
	// client has its answer.)
	for front.m.e2e.total.Load() != 3 {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("e2e observations = %d, want 3", front.m.e2e.total.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, "auth=Bearer") {
			t.Errorf("the client's credentials reached the upstream: %s", s)
		}
		if strings.Contains(s, "lora") {
			t.Errorf("admin route reached the upstream: %s", s)
		}
	}
}

func TestNoPassthroughOnEngine(t *testing.T) {
	s, err := New(Config{Model: "m", MaxConcurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.run(ctx, ln, func(context.Context) (runtime.Backend, error) { return newSim(t), nil })
	}()
	defer func() {
		cancel()
		<-done
	}()
	url := "http://" + ln.Addr().String()
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := get(t, url+"/health"); code != 200; code, _ = get(t, url+"/health") {
		if time.Now().After(deadline) {
			t.Fatal("server never became healthy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// /v1/responses is served by vLLM and not by ttis's engines.
	code, body := get(t, url+"/v1/responses")
	if code != 404 || !strings.Contains(body, "no route for GET /v1/responses") {
		t.Errorf("engine runtime: %d %s", code, body)
	}
}

func TestPassthroughRoute(t *testing.T) {
	for path, want := range map[string]bool{
		"/v1/embeddings": true, "/v1/responses": true, "/v1/audio/transcriptions": true, "/pooling": true, "/v2/rerank": true,
		"/v1/": false, "/v1/load_lora_adapter": false, "/admin": false, "/reset_prefix_cache": false, "/sleep": false,
	} {
		if got := passthroughRoute(path); got != want {
			t.Errorf("passthroughRoute(%q) = %v, want %v", path, got, want)
		}
	}
}
