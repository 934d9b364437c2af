package serve

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime/cpu"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
	"github.com/ttis-dev/ttis/runtime/vllm"
)

// legacyPost posts a legacy request and returns the status and body.
func legacyPost(t *testing.T, url, body string) (int, string, []string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.TransferEncoding
}

// TestLegacyAPIOnUpstream serves the legacy API of a vllm-runtime unit: the
// request becomes a streamed /v1/completions request to the upstream
// (here a sim-backed ttis server behind the vllm proxy), whose text
// events come back raw.
func TestLegacyAPIOnUpstream(t *testing.T) {
	upSrv, err := New(Config{Model: "up", MaxConcurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := upSrv.SetBackend(newSim(t)); err != nil {
		t.Fatal(err)
	}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go upSrv.Serve(upLn)
	defer upSrv.srv.Shutdown()
	front, err := New(Config{Model: "up", MaxConcurrency: 2, LegacyRoute: "/inference/up"})
	if err != nil {
		t.Fatal(err)
	}
	if err := front.SetBackend(proxyUpstream{Proxy: vllm.NewProxy(upLn.Addr().String(), 10*time.Second), done: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go front.Serve(ln)
	defer front.srv.Shutdown()
	url := "http://" + ln.Addr().String() + "/inference/up"
	code, body, te := legacyPost(t, url, `{"text":"The sun","max_tokens":"8","top_k":1}`)
	if code != 200 || !strings.HasSuffix(body, "<|endoftext|>") || len(body) <= len("<|endoftext|>") || len(te) == 0 || te[0] != "chunked" {
		t.Fatalf("%d %v %q", code, te, body)
	}
	if code, body, _ := legacyPost(t, url, `{"text":"x","top_p":2}`); code != 400 || !strings.Contains(body, `"status_code":400`) {
		t.Errorf("bounds on upstream: %d %s", code, body)
	}
	// Structured-output and tool fields pass through to the upstream
	// untouched (vLLM applies them; here the upstream ttis does).
	code, v := postJSON(t, "http://"+ln.Addr().String()+"/v1/chat/completions",
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":30,"guided_choice":["alpha","beta"]}`)
	if out := chatContent(t, v); code != 200 || (out != "alpha" && out != "beta") {
		t.Errorf("guided_choice through the upstream: %d %v", code, v)
	}
	if got := front.m.running.Load(); got != 0 {
		t.Errorf("running = %d after legacy requests", got)
	}
}

// TestLegacyAPIOnCPU serves the legacy API from the cpu engine (tiny
// synthetic model).
func TestLegacyAPIOnCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	eng, err := cpu.New(path, cpu.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	url := startServer(t, Config{Model: "m", MaxConcurrency: 2, LegacyRoute: "/inference/tiny"}, eng)
	code, body, _ := legacyPost(t, url+"/inference/tiny", `{"text":"Once upon a time","max_tokens":"12","temperature":"0.7"}`)
	if code != 200 || !strings.HasSuffix(body, "<|endoftext|>") {
		t.Fatalf("%d %q", code, body)
	}
	// A prompt past the context window is a bad request in the legacy
	// shape.
	long := strings.Repeat("word ", 2600)
	if code, body, _ := legacyPost(t, url+"/inference/tiny", `{"text":"`+long+`","max_tokens":100}`); code != 400 || !strings.Contains(body, `"status_code":400,"message":"This model's maximum context length`) {
		t.Errorf("too long: %d %.200s", code, body)
	}
}

// FuzzLegacyRequest: any body is either refused with a legacy error or
// yields parameters within the original's bounds.
func FuzzLegacyRequest(f *testing.F) {
	f.Add(`{"text":"hi","temperature":"1","top_k":"40","top_p":"0.9","max_tokens":"32","stop_sequence":"."}`)
	f.Add(`{"text":5,"max_tokens":1.9,"return_prompt":"no"}`)
	f.Add(`{"text":"x","temperature":"nan"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBody([]byte(body))
		r, e := parseLegacy(&ctx)
		if e != nil {
			if e.status != 400 || e.msg == "" {
				t.Fatalf("error %+v", e)
			}
			return
		}
		if r.text == "" || !(r.temperature >= 0.01 && r.temperature <= 100) || !(r.topP >= 0.01 && r.topP <= 1) ||
			r.topK < 1 || r.topK > 1000 || r.maxTokens < 1 || r.maxTokens > 2048 {
			t.Fatalf("accepted %+v from %s", r, body)
		}
	})
}
