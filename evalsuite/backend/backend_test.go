package backend

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

func f(v float64) *float64 { return &v }

func TestContinuationLogprob(t *testing.T) {
	// "Answer:" + " B" echoed as ["Answer", ":", " B"] plus one generated token.
	lp := openai.Logprobs{
		Tokens:        []string{"Answer", ":", " B", " The"},
		TokenLogprobs: []*float64{nil, f(-0.5), f(-1.25), f(-3)},
		TopLogprobs:   []map[string]float64{nil, {":": -0.5}, {" A": -0.2}, {" The": -3}},
		TextOffset:    []int{0, 6, 7, 9},
	}
	ll, greedy, err := ContinuationLogprob(lp, 7, 9)
	if err != nil || ll != -1.25 || greedy {
		t.Fatalf("got %v %v %v, want -1.25 not greedy", ll, greedy, err)
	}
	lp.TopLogprobs[2] = map[string]float64{" B": -1.25}
	if _, greedy, _ = ContinuationLogprob(lp, 7, 9); !greedy {
		t.Error("the top token was the continuation: greedy")
	}
	// A token straddling the boundary belongs to the continuation.
	ll, _, err = ContinuationLogprob(lp, 8, 9)
	if err != nil || ll != -1.25 {
		t.Errorf("straddling token: %v %v", ll, err)
	}
	if _, _, err := ContinuationLogprob(lp, 9, 9); err == nil {
		t.Error("an empty continuation covers no token")
	}
	lp.TokenLogprobs[2] = nil
	if _, _, err := ContinuationLogprob(lp, 7, 9); err == nil {
		t.Error("a null continuation logprob must be an error")
	}
	short := openai.Logprobs{Tokens: []string{"a"}, TokenLogprobs: []*float64{f(-1)}}
	if _, _, err := ContinuationLogprob(short, 0, 1); err == nil {
		t.Error("missing text_offset must be an error")
	}
}

func TestParseResponses(t *testing.T) {
	if r, err := ParseCompletion([]byte(`{"choices":[{"text":" 42"}]}`)); err != nil || r.Text != " 42" {
		t.Errorf("completion: %+v %v", r, err)
	}
	tests := []struct {
		body string
		kind openai.ErrorKind
	}{
		{`{"choices":[{"text":""}]}`, openai.KindEmpty},
		{`{"choices":[]}`, openai.KindBadResponse},
		{`{"choices":[{"index":0}]}`, openai.KindBadResponse},
		{`[1,2]`, openai.KindBadResponse},
	}
	for _, tt := range tests {
		if _, err := ParseCompletion([]byte(tt.body)); err == nil || err.Kind != tt.kind {
			t.Errorf("%s: got %v, want %s", tt.body, err, tt.kind)
		}
	}
	if r, err := ParseChat([]byte(`{"choices":[{"message":{"role":"assistant","content":"B"}}]}`)); err != nil || r.Text != "B" {
		t.Errorf("chat: %+v %v", r, err)
	}
	if _, err := ParseChat([]byte(`{"choices":[{"message":{"content":null}}]}`)); err == nil || err.Kind != openai.KindBadResponse {
		t.Errorf("chat null content: %v", err)
	}
}

func FuzzParseResponses(f *testing.F) {
	f.Add([]byte(`{"choices":[{"text":"x","logprobs":{"tokens":["a","b"],"token_logprobs":[null,-1],"top_logprobs":[null,{"b":-1}],"text_offset":[0,1]}}]}`), 1, 2)
	f.Add([]byte(`{"choices":[{"message":{"content":"hi"}}]}`), 0, 0)
	f.Add([]byte(`{"error":{"message":"x"}}`), 3, 1)
	f.Fuzz(func(t *testing.T, raw []byte, ctx, prompt int) {
		if r, err := ParseCompletion(raw); err == nil && r.Text == "" {
			t.Fatal("an empty completion must be reported")
		}
		if r, err := ParseChat(raw); err == nil && r.Text == "" {
			t.Fatal("an empty chat answer must be reported")
		}
		if r, err := ParseLoglikelihood(raw, ctx, prompt); err == nil && (math.IsNaN(r.LogLikelihood) || r.LogLikelihood > 1e-6) {
			t.Fatalf("log-likelihood %v", r.LogLikelihood)
		}
	})
}

// recorder answers like a server and keeps the last request body.
func recorder(t *testing.T, answer string) (*openai.Client, *map[string]any) {
	t.Helper()
	var last map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last = nil
		_ = json.NewDecoder(r.Body).Decode(&last)
		last["path"] = r.URL.Path
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return c, &last
}

// The requests are lm-eval's: generation kwargs as sent by its
// local-completions and local-chat-completions models, stop sequences cut
// to four on chat, log-likelihood as echo with logprobs and one token.
func TestRequestsAsLMEvalSendsThem(t *testing.T) {
	gen := &evalsuite.GenKwargs{Until: []string{"a", "b", "c", "d", "e"}, MaxGenToks: 5}
	srv, last := recorder(t, `{"choices":[{"text":"ok","message":{"content":"ok"}}]}`)
	comp, err := New(srv, Config{Model: "m", API: openai.Completions, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err := comp.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindGenerate, Context: "Q", Gen: gen}); err != nil || r.Text != "ok" {
		t.Fatalf("%+v %v", r, err)
	}
	if b := *last; b["path"] != "/v1/completions" || b["prompt"] != "Q" || b["max_tokens"] != 5.0 || b["seed"] != 7.0 || b["model"] != "m" || len(b["stop"].([]any)) != 5 {
		t.Errorf("completions body %v", b)
	}
	chat, _ := New(srv, Config{Model: "m", API: openai.Chat, Seed: 7})
	if _, _, err := chat.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindGenerate, Context: "Q", Gen: gen}); err != nil {
		t.Fatal(err)
	}
	if b := *last; b["path"] != "/v1/chat/completions" || len(b["stop"].([]any)) != 4 || b["messages"] == nil {
		t.Errorf("chat body %v", b)
	}
	if _, _, err := chat.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindLoglikelihood}); err == nil {
		t.Error("log-likelihood over chat must be refused")
	}
	// With the chat template, completions-API generation goes through the
	// chat endpoint, the whole prompt as one user turn, even when the
	// task built a multi-turn few-shot conversation.
	tmpl, _ := New(srv, Config{Model: "m", API: openai.Completions, Seed: 7, ApplyChatTemplate: true})
	inst := evalsuite.Instance{Kind: evalsuite.KindGenerate, Context: "Q1 A1\nQ2", Gen: gen,
		Messages: []evalsuite.Message{{Role: "user", Content: "Q1"}, {Role: "assistant", Content: "A1"}, {Role: "user", Content: "Q2"}}}
	if _, _, err := tmpl.Do(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	if b := *last; b["path"] != "/v1/chat/completions" || len(b["messages"].([]any)) != 1 ||
		b["messages"].([]any)[0].(map[string]any)["content"] != "Q1 A1\nQ2" {
		t.Errorf("chat-template body %v", b)
	}
	llSrv, last := recorder(t, `{"choices":[{"logprobs":{"tokens":["Q"," A"," x"],"token_logprobs":[null,-0.5,-2],"text_offset":[0,1,3]}}]}`)
	ll, _ := New(llSrv, Config{Model: "m", API: openai.Completions, Seed: 7})
	r, _, err := ll.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindLoglikelihood, Context: "Q", Continuation: " A"})
	if err != nil || r.LogLikelihood != -0.5 {
		t.Fatalf("%+v %v", r, err)
	}
	if b := *last; b["echo"] != true || b["logprobs"] != 1.0 || b["max_tokens"] != 1.0 || b["prompt"] != "Q A" {
		t.Errorf("log-likelihood body %v", b)
	}
}

func TestNewValidates(t *testing.T) {
	srv, _ := recorder(t, `{}`)
	if _, err := New(srv, Config{API: openai.Completions}); err == nil {
		t.Error("want an error for an empty model")
	}
	if _, err := New(srv, Config{Model: "m", API: "grpc"}); err == nil {
		t.Error("want an error for an unknown API")
	}
}
