package serve

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzHandler drives whole non-streaming requests through the handler with
// a fast sim engine: whatever the body, the answer is a 2xx or a 4xx in
// OpenAI's shape, never a 500 (a recovered panic) and never a hang.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":3}`,
		`{"prompt":[[1,2],[3]],"n":2,"max_tokens":2,"logprobs":2,"echo":true}`,
		`{"prompt":"the sun","max_tokens":0,"echo":true,"logprobs":1}`,
		`{"prompt":"a","stop":["x","y"],"stop_token_ids":[5],"max_tokens":4,"temperature":0.5,"top_k":3,"seed":1}`,
	} {
		f.Add("/v1/completions", []byte(s))
	}
	f.Add("/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"logprobs":true,"top_logprobs":2}`))
	f.Add("/tokenize", []byte(`{"prompt":"x"}`))
	f.Add("/detokenize", []byte(`{"tokens":[1,2,3]}`))
	s, err := New(Config{Model: "m", MaxConcurrency: 8, MaxQueue: 0})
	if err != nil {
		f.Fatal(err)
	}
	e := newSimF(f)
	if err := s.SetBackend(e); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		switch path {
		case "/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize":
		default:
			return
		}
		if len(body) > 1<<16 {
			return
		}
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(path)
		ctx.Request.SetBody(body)
		// Streaming writes to a real connection; the non-streaming path
		// covers decoding and validation the same way.
		if hasStreamTrue(body) {
			return
		}
		s.handle(&ctx)
		code := ctx.Response.StatusCode()
		if code >= 500 || (code >= 300 && code < 400) {
			t.Fatalf("%s %s: %d %s", path, body, code, ctx.Response.Body())
		}
		if got := s.m.running.Load(); got != 0 {
			t.Fatalf("%d slots still held after %s", got, body)
		}
	})
}

func hasStreamTrue(b []byte) bool {
	for i := 0; i+6 <= len(b); i++ {
		if string(b[i:i+6]) == "stream" {
			return true
		}
	}
	return false
}
