package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestNormalizeBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1":                        "http://h:1",
		"http://h:1/":                       "http://h:1",
		"http://h:1/v1":                     "http://h:1",
		"http://h:1/v1/chat/completions":    "http://h:1",
		"http://h:1/v1/completions?x=1":     "http://h:1",
		"https://h/p/v1/":                   "https://h/p",
		" http://127.0.0.1:8000 ":           "http://127.0.0.1:8000",
		"http://[::1]:8000/v1/completions/": "http://[::1]:8000",
	} {
		if got, err := NormalizeBaseURL(in); err != nil || got != want {
			t.Errorf("NormalizeBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "h:1", "ftp://h", "http://", "127.0.0.1:8000"} {
		if _, err := NormalizeBaseURL(bad); err == nil {
			t.Errorf("NormalizeBaseURL(%q) accepted", bad)
		}
	}
}

// oneRequestServer answers the first request of each connection with a
// kept-alive 200 and closes the connection, unanswered, when a second
// request arrives on it: the race a client loses when a server's keep-alive
// timeout fires just as it reuses the connection. With closeFirst, it
// closes every connection without answering at all.
func oneRequestServer(t *testing.T, closeFirst bool) (url string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil || closeFirst {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				body := `{"object":"list","data":[{"id":"m"}]}`
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				if req2, err := http.ReadRequest(br); err == nil {
					_, _ = io.Copy(io.Discard, req2.Body)
				}
			}(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String(), conns
}

// A request that went out on a kept-alive connection the server had closed
// is sent once more on a new connection, and counted.
func TestStaleConnectionIsRetriedOnce(t *testing.T) {
	url, conns := oneRequestServer(t, false)
	c, err := New(Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The retry's connection is not kept, so requests alternate: a fresh
	// connection in the pool, then its dead reuse and a retry.
	for i := range 4 {
		resp, retried, err := c.Stream(context.Background(), "/v1/completions", []byte(`{}`), nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if want := i%2 == 1; retried != want {
			t.Errorf("request %d: retried %v, want %v", i, retried, want)
		}
	}
	if got := c.StaleRetries(); got != 2 {
		t.Errorf("stale retries %d, want 2", got)
	}
	if got := conns.Load(); got != 4 {
		t.Errorf("%d connections, want 4", got)
	}
}

// A fresh connection closed without an answer is a server failure: it is
// not sent again.
func TestClosedFreshConnectionIsNotRetried(t *testing.T) {
	url, conns := oneRequestServer(t, true)
	c, err := New(Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, retried, err := c.Stream(context.Background(), "/v1/completions", []byte(`{}`), nil)
	if err == nil || retried {
		t.Fatalf("err %v retried %v; want an error and no retry", err, retried)
	}
	if conns.Load() != 1 || c.StaleRetries() != 0 {
		t.Errorf("%d connections, %d stale retries; want 1 and 0", conns.Load(), c.StaleRetries())
	}
}

func TestPostJSONRetriesAndErrors(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch r.URL.Path {
		case "/flaky":
			if n < 3 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `{"error":{"message":"warming up"}}`)
				return
			}
			_, _ = io.WriteString(w, `{"ok":true}`)
		case "/bad":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"max_tokens must be positive"}}`)
		case "/notjson":
			_, _ = io.WriteString(w, `<html>`)
		case "/inbody":
			_, _ = io.WriteString(w, `{"error":"model crashed"}`)
		case "/slow":
			time.Sleep(200 * time.Millisecond)
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, MaxAttempts: 3, Timeout: 50 * time.Millisecond, Backoff: func(int) time.Duration { return time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if raw, err := c.PostJSON(ctx, "/flaky", map[string]int{"a": 1}); err != nil || string(raw) != `{"ok":true}` {
		t.Errorf("flaky: %s %v", raw, err)
	}
	for path, want := range map[string]struct {
		kind     ErrorKind
		status   int
		attempts int
		msg      string
	}{
		"/bad":     {KindHTTP, 400, 1, "max_tokens must be positive"},
		"/notjson": {KindBadResponse, 0, 1, "not JSON"},
		"/inbody":  {KindBadResponse, 0, 1, "model crashed"},
		"/slow":    {KindTimeout, 0, 3, "no answer within"},
	} {
		_, err := c.PostJSON(ctx, path, nil)
		var oe *Error
		if !errors.As(err, &oe) || oe.Kind != want.kind || oe.Status != want.status || oe.Attempts != want.attempts || !strings.Contains(oe.Msg, want.msg) {
			t.Errorf("%s: %#v, want %+v", path, err, want)
		}
	}
}

func TestTenacityBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second, 5: 8 * time.Second, 6: 10 * time.Second} {
		if got := TenacityBackoff(n); got != want {
			t.Errorf("TenacityBackoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	for in, want := range map[string]string{
		`{"error":{"message":"nested"}}`: "nested",
		`{"error":"flat"}`:               "flat",
		`{"message":"top"}`:              "top",
		`plain text`:                     "plain text",
		``:                               "(empty body)",
	} {
		if got := ErrorMessage([]byte(in)); got != want {
			t.Errorf("ErrorMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// tokenizerServer answers /tokenize in one of the two shapes, splitting on
// spaces; the other shape's field is ignored, as each real server ignores
// it (vLLM refuses a body without "prompt" or "messages"; llama.cpp answers
// one without "content" with no tokens).
func tokenizerServer(t *testing.T, api TokenizerAPI) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		switch {
		case r.URL.Path == "/apply-template" && api == TokenizerLlamaCpp:
			msgs, _ := in["messages"].([]any)
			var b strings.Builder
			for _, m := range msgs {
				mm, _ := m.(map[string]any)
				fmt.Fprintf(&b, "<%v> %v ", mm["role"], mm["content"])
			}
			b.WriteString("<assistant>")
			_ = json.NewEncoder(w).Encode(map[string]string{"prompt": b.String()})
		case r.URL.Path == "/tokenize" && api == TokenizerVLLM:
			text, ok := in["prompt"].(string)
			if msgs, isChat := in["messages"].([]any); isChat {
				text, ok = fmt.Sprint(msgs)+" <assistant>", true
			}
			if !ok {
				http.Error(w, `{"error":{"message":"field required: prompt"}}`, http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": make([]int, len(strings.Fields(text))), "count": 0})
		case r.URL.Path == "/tokenize" && api == TokenizerLlamaCpp:
			text, _ := in["content"].(string)
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": make([]int, len(strings.Fields(text)))})
		case r.URL.Path == "/detokenize":
			key := "prompt"
			if api == TokenizerLlamaCpp {
				key = "content"
			}
			ids, _ := in["tokens"].([]any)
			_ = json.NewEncoder(w).Encode(map[string]string{key: strings.Repeat("x", len(ids))})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTokenizerFindsTheServersShape(t *testing.T) {
	for _, api := range []TokenizerAPI{TokenizerVLLM, TokenizerLlamaCpp} {
		t.Run(string(api), func(t *testing.T) {
			c, err := New(Config{BaseURL: tokenizerServer(t, api).URL})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tok := c.Tokenizer("m")
			ctx := context.Background()
			if ids, err := tok.Tokenize(ctx, "", true); err != nil || len(ids) != 0 || tok.API() != "" {
				t.Fatalf("empty text: %v %v, api %q (an empty text must not decide the shape)", ids, err, tok.API())
			}
			if n, err := tok.CountTokens(ctx, "one two three"); err != nil || n != 3 {
				t.Fatalf("CountTokens: %d %v", n, err)
			}
			if tok.API() != api || !strings.Contains(tok.Name(), string(api)) {
				t.Errorf("API %q, name %q; want %q", tok.API(), tok.Name(), api)
			}
			if ids, err := tok.TokenizeChat(ctx, "hello there"); err != nil || len(ids) < 3 {
				t.Errorf("TokenizeChat: %v %v", ids, err)
			}
			if s, err := tok.Detokenize(ctx, []int{1, 2}); err != nil || s != "xx" {
				t.Errorf("Detokenize: %q %v", s, err)
			}
		})
	}
	// A chat tokenization first also finds llama.cpp's shape.
	c, err := New(Config{BaseURL: tokenizerServer(t, TokenizerLlamaCpp).URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok := c.Tokenizer("m")
	if ids, err := tok.TokenizeChat(context.Background(), "hi"); err != nil || len(ids) != 3 || tok.API() != TokenizerLlamaCpp {
		t.Errorf("chat first: %v %v api %q", ids, err, tok.API())
	}
}

func TestModelsAndPick(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"no key"}}`, http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"a","max_model_len":4096},{"id":"b","runtime":"sim","simulated":true}]}`)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	cards, err := c.Models(context.Background())
	if err != nil || len(cards) != 2 {
		t.Fatalf("%v %v", cards, err)
	}
	if card, ok := Pick(cards, "b"); !ok || !card.Simulated || card.Runtime != "sim" {
		t.Errorf("pick b: %+v %v", card, ok)
	}
	if card, ok := Pick(cards, ""); !ok || card.ID != "a" || card.MaxModelLen != 4096 {
		t.Errorf("pick first: %+v %v", card, ok)
	}
	if _, ok := Pick(cards, "c"); ok {
		t.Error("picked a model that is not served")
	}
	bad, _ := New(Config{BaseURL: srv.URL})
	if _, err := bad.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("unauthorized: %v", err)
	}
}

// FuzzParseEmbeddings: any answer gives n finite vectors, each placed
// once, or an error.
func FuzzParseEmbeddings(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3]}]}`), 2)
	f.Add([]byte(`{"data":[{"embedding":[0.5]}]}`), 1)
	f.Add([]byte(`{"data":[{"index":0,"embedding":[]}]}`), 1)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vecs, err := ParseEmbeddings(raw, n)
		if err != nil {
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d inputs", len(vecs), n)
		}
		for i, v := range vecs {
			if len(v) == 0 {
				t.Fatalf("vector %d empty", i)
			}
		}
	})
}
