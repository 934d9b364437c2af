package serve

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// gatedEngine is an engine whose tokenizer counts its Encode calls, and
// whose Encode and Generate calls can be held, to see what admission did
// before any work.
type gatedEngine struct {
	runtime.Engine
	tok *gatedTok
	// gen, when not nil, holds every Generate until it is closed.
	gen chan struct{}
}

type gatedTok struct {
	runtime.Tokenizer
	encodes atomic.Int64
	// hold, when not nil, holds every Encode until it is closed; entered
	// receives one value per Encode that began.
	hold    chan struct{}
	entered chan struct{}
}

func (t *gatedTok) Encode(s string, addSpecial bool) ([]int, error) {
	t.encodes.Add(1)
	if t.hold != nil {
		t.entered <- struct{}{}
		<-t.hold
	}
	return t.Tokenizer.Encode(s, addSpecial)
}

func (t *gatedTok) MaxTokenBytes() int { return t.Tokenizer.(runtime.TextBounder).MaxTokenBytes() }

func (e *gatedEngine) Tokenizer() runtime.Tokenizer { return e.tok }

func (e *gatedEngine) Generate(ctx context.Context, req *runtime.Request) (*runtime.Stream, error) {
	if e.gen != nil {
		select {
		case <-e.gen:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.Engine.Generate(ctx, req)
}

func newGated(t *testing.T) *gatedEngine {
	sim := newSimF(t) // MaxContext 512
	return &gatedEngine{Engine: sim, tok: &gatedTok{Tokenizer: sim.Tokenizer()}}
}

// errorOf posts body and returns the status and the error's param and
// message ("" when the answer is not an error).
func errorOf(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	code, v := postJSON(t, url, body)
	e, _ := v["error"].(map[string]any)
	if e == nil {
		return code, "", ""
	}
	p, _ := e["param"].(string)
	m, _ := e["message"].(string)
	return code, p, m
}

// TestSizeJudgedBeforeTokenizing: a prompt that cannot fit the context
// window is refused from its length in bytes, without tokenizing it; one
// its length cannot rule out is tokenized and then judged exactly.
func TestSizeJudgedBeforeTokenizing(t *testing.T) {
	eng := newGated(t)
	url := startServer(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 4}, eng)
	per := eng.tok.MaxTokenBytes()
	huge := strings.Repeat("x", 512*per+1) // at least 513 tokens
	for _, c := range []struct {
		name, path, body, param, want string
		encodes                       int64
	}{
		{"completion over the window by its bytes", "/v1/completions", `{"prompt":"` + huge + `"}`, "prompt", "at least 513 in the prompt", 0},
		{"chat over the window by its bytes", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + huge + `"}]}`, "messages", "at least", 0},
		{"prompt list, second over the window", "/v1/completions", `{"prompt":["hi","` + huge + `"]}`, "prompt", "at least 513", 0},
		{"max_tokens over what the bytes leave", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 300*per) + `","max_tokens":300}`, "max_tokens", "at least 600 tokens", 0},
		{"token ids over the window", "/v1/completions", `{"prompt":[` + strings.Repeat("300,", 600) + `300]}`, "prompt", "you requested 617 tokens (601 in the prompt", 0},
		{"over the window once tokenized", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 600) + `"}`, "prompt", "you requested 617 tokens (601 in the prompt, 16 in the completion)", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := eng.tok.encodes.Load()
			code, param, msg := errorOf(t, url+c.path, c.body)
			if code != 400 || param != c.param || !strings.Contains(msg, c.want) || !strings.Contains(msg, "maximum context length is 512") {
				t.Errorf("%d %q %q, want 400 naming %q containing %q", code, param, msg, c.param, c.want)
			}
			if got := eng.tok.encodes.Load() - before; got != c.encodes {
				t.Errorf("%d prompts tokenized, want %d", got, c.encodes)
			}
		})
	}
	// What fits is served.
	if code, v := postJSON(t, url+"/v1/completions", `{"prompt":"the water","max_tokens":2}`); code != 200 {
		t.Errorf("short prompt: %d %v", code, v)
	}
}

// TestQueueFullBeforeTokenizing: with every slot busy and the queue full,
// a request is refused before its prompt is tokenized.
func TestQueueFullBeforeTokenizing(t *testing.T) {
	eng := newGated(t)
	eng.gen = make(chan struct{})
	s, addr := serveEngine(t, Config{Model: "m", MaxConcurrency: 1, MaxQueue: 0}, eng)
	url := "http://" + addr
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"the","max_tokens":1}`))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	waitFor(t, func() bool { return s.m.running.Load() == 1 })
	before := eng.tok.encodes.Load()
	code, _, msg := errorOf(t, url+"/v1/completions", `{"prompt":"`+strings.Repeat("water ", 80)+`","max_tokens":1}`)
	if code != 429 || !strings.Contains(msg, "limits.max_queue = 0") {
		t.Errorf("second request: %d %q, want 429", code, msg)
	}
	if got := eng.tok.encodes.Load() - before; got != 0 {
		t.Errorf("the refused request was tokenized (%d calls)", got)
	}
	close(eng.gen)
	if code := <-first; code != 200 {
		t.Errorf("first request: %d", code)
	}
}

// TestReadingBudget: request bytes being decoded and tokenized are bounded
// by MaxInflightBytes; a request over the budget waits in the queue, or
// is refused with 429 when the queue is full, and the budget returns to
// zero when the requests end.
func TestReadingBudget(t *testing.T) {
	eng := newGated(t)
	eng.tok.hold = make(chan struct{})
	eng.tok.entered = make(chan struct{}, 8)
	const body = 4 << 10
	s, addr := serveEngine(t, Config{Model: "m", MaxConcurrency: 4, MaxQueue: 1, MaxBodyBytes: body, MaxInflightBytes: body}, eng)
	url := "http://" + addr + "/v1/completions"
	prompt := `{"prompt":"` + strings.Repeat("water ", 290) + `","max_tokens":1}` // 1.8 KB
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	post := func() {
		defer wg.Done()
		resp, err := http.Post(url, "application/json", strings.NewReader(prompt))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}
	wg.Add(2)
	go post()
	go post()
	// Two 1.8 KB bodies fit the 4 KiB budget: both are being tokenized.
	<-eng.tok.entered
	<-eng.tok.entered
	if got := s.m.readingBytes.Load(); got != 2*int64(len(prompt)) {
		t.Errorf("reading %d bytes, want %d", got, 2*len(prompt))
	}
	// A third waits for the budget in the queue's one place; a fourth
	// finds the queue full.
	wg.Add(1)
	go post()
	waitFor(t, func() bool { return s.m.waiting.Load() == 1 })
	code, _, msg := errorOf(t, url, prompt)
	if code != 429 || !strings.Contains(msg, "limits.max_inflight_bytes = 4096") {
		t.Errorf("fourth request: %d %q, want 429 naming limits.max_inflight_bytes", code, msg)
	}
	close(eng.tok.hold)
	<-eng.tok.entered // the third, once the budget freed
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("status %d, want 200", c)
		}
	}
	if got := s.m.readingBytes.Load(); got != 0 {
		t.Errorf("%d bytes still held after every request ended", got)
	}
	if got := s.m.waiting.Load(); got != 0 {
		t.Errorf("%d still waiting", got)
	}
}

func TestInflightBytesConfig(t *testing.T) {
	s, err := New(Config{Model: "m", MaxConcurrency: 1, MaxBodyBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.MaxInflightBytes != 2<<20 {
		t.Errorf("default MaxInflightBytes %d, want twice the body limit", s.cfg.MaxInflightBytes)
	}
	_, err = New(Config{Model: "m", MaxConcurrency: 1, MaxBodyBytes: 1 << 20, MaxInflightBytes: 1 << 10})
	if err == nil || !strings.Contains(err.Error(), "max_inflight_bytes") {
		t.Errorf("a budget below the body limit: %v", err)
	}
}

// TestMinTokensBound: the bound prompts are judged by never exceeds the
// tokens a prompt encodes to.
func TestMinTokensBound(t *testing.T) {
	tok := newSimF(t).Tokenizer()
	for _, s := range []string{"", "x", "the water", strings.Repeat("sentence ", 50), "日本語\xff"} {
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatal(err)
		}
		if lo := minTokens(tok, s); lo > len(ids) {
			t.Errorf("%q: bound %d over its %d tokens", s, lo, len(ids))
		}
	}
}

// heldUpstream answers every forwarded request once release is closed.
type heldUpstream struct {
	release chan struct{}
	calls   atomic.Int64
	dead    chan struct{}
}

func (u *heldUpstream) Forward(ctx *fasthttp.RequestCtx, _ func(int), done func(error)) {
	u.calls.Add(1)
	<-u.release
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"choices":[]}`)
	if done != nil {
		done(nil)
	}
}
func (*heldUpstream) Model() string           { return "up" }
func (u *heldUpstream) Done() <-chan struct{} { return u.dead }
func (*heldUpstream) Err() error              { return nil }
func (*heldUpstream) Close() error            { return nil }

// TestUpstreamReadingBudget: a request for an upstream (which tokenizes
// what it is sent) holds its bytes of the reading budget until it holds
// its slot, so the bodies queued for an upstream are bounded too.
func TestUpstreamReadingBudget(t *testing.T) {
	up := &heldUpstream{release: make(chan struct{}), dead: make(chan struct{})}
	const body = 4 << 10
	s, err := New(Config{Model: "up", MaxConcurrency: 1, MaxQueue: 1, MaxBodyBytes: body, MaxInflightBytes: body})
	if err != nil {
		t.Fatal(err)
	}
	s.SetUpstream(up)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.srv.Shutdown()
	url := "http://" + ln.Addr().String() + "/v1/completions"
	prompt := `{"prompt":"` + strings.Repeat("x", 2500) + `"}`
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	post := func() {
		defer wg.Done()
		resp, err := http.Post(url, "application/json", strings.NewReader(prompt))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}
	wg.Add(1)
	go post() // takes the slot and gives its bytes back
	waitFor(t, func() bool { return up.calls.Load() == 1 })
	if got := s.m.readingBytes.Load(); got != 0 {
		t.Errorf("%d bytes held by a request the upstream has", got)
	}
	wg.Add(1)
	go post() // waits for the slot, holding its 2.5 KB
	waitFor(t, func() bool { return s.m.waiting.Load() == 1 && s.m.readingBytes.Load() == int64(len(prompt)) })
	code, _, msg := errorOf(t, url, prompt)
	if code != 429 || !strings.Contains(msg, "limits.max_inflight_bytes = 4096") {
		t.Errorf("third request: %d %q, want 429 naming limits.max_inflight_bytes", code, msg)
	}
	close(up.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("status %d, want 200", c)
		}
	}
	if got := s.m.readingBytes.Load(); got != 0 {
		t.Errorf("%d bytes still held", got)
	}
}
