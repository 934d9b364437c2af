package client

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
)

func f(v float64) *float64 { return &v }

func TestContinuationLogprob(t *testing.T) {
	// "Answer:" + " B" echoed as ["Answer", ":", " B"] plus one generated token.
	lp := Logprobs{
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
	short := Logprobs{Tokens: []string{"a"}, TokenLogprobs: []*float64{f(-1)}}
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
		kind ErrorKind
	}{
		{`{"choices":[{"text":""}]}`, KindEmpty},
		{`{"choices":[]}`, KindBadResponse},
		{`{"choices":[{"index":0}]}`, KindBadResponse},
		{`[1,2]`, KindBadResponse},
	}
	for _, tt := range tests {
		if _, err := ParseCompletion([]byte(tt.body)); err == nil || err.Kind != tt.kind {
			t.Errorf("%s: got %v, want %s", tt.body, err, tt.kind)
		}
	}
	if r, err := ParseChat([]byte(`{"choices":[{"message":{"role":"assistant","content":"B"}}]}`)); err != nil || r.Text != "B" {
		t.Errorf("chat: %+v %v", r, err)
	}
	if _, err := ParseChat([]byte(`{"choices":[{"message":{"content":null}}]}`)); err == nil || err.Kind != KindBadResponse {
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
		_ = errorMessage(raw)
	})
}

func newTestClient(t *testing.T, url string, api API) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: url + "/v1", Model: "m", API: api, MaxRetries: 3, Timeout: 300 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRetriesAndErrors(t *testing.T) {
	var calls atomic.Int64
	var mode atomic.Value
	mode.Store("flaky")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		if r.Header.Get("Authorization") != "" {
			w.WriteHeader(500)
			return
		}
		switch mode.Load().(string) {
		case "flaky":
			if n < 3 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"error":{"message":"queue full","type":"rate_limit","code":429}}`))
				return
			}
			if stop, _ := req["stop"].([]any); len(stop) != 2 {
				t.Errorf("stop sequences %v", req["stop"])
			}
			w.Write([]byte(`{"choices":[{"text":"ok"}]}`))
		case "bad-request":
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"message":"prompt too long","type":"invalid_request_error","code":400}}`))
		case "error-200":
			w.Write([]byte(`{"error":{"message":"engine died"}}`))
		case "slow":
			time.Sleep(time.Second)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, Completions)
	inst := evalsuite.Instance{Kind: evalsuite.KindGenerate, Context: "Q", Gen: &evalsuite.GenKwargs{Until: []string{"a", "b"}, MaxGenToks: 5}}
	r, _, err := c.Do(context.Background(), inst)
	if err != nil || r.Text != "ok" || calls.Load() != 3 {
		t.Fatalf("flaky: %+v %v after %d calls", r, err, calls.Load())
	}
	for _, tc := range []struct {
		mode     string
		kind     ErrorKind
		calls    int64
		contains string
	}{
		{"bad-request", KindHTTP, 1, "prompt too long"},
		{"error-200", KindBadResponse, 1, "engine died"},
		{"slow", KindTimeout, 3, "no answer within"},
	} {
		if testing.Short() && tc.mode == "slow" {
			continue
		}
		mode.Store(tc.mode)
		calls.Store(0)
		_, _, err := c.Do(context.Background(), inst)
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != tc.kind || !strings.Contains(ce.Msg, tc.contains) || calls.Load() != tc.calls {
			t.Errorf("%s: %v after %d calls, want %s containing %q after %d", tc.mode, err, calls.Load(), tc.kind, tc.contains, tc.calls)
		}
	}
	chat := newTestClient(t, srv.URL, Chat)
	if _, _, err := chat.Do(context.Background(), evalsuite.Instance{Kind: evalsuite.KindLoglikelihood}); err == nil {
		t.Error("log-likelihood over chat must be refused")
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{{BaseURL: "localhost:8000", Model: "m"}, {BaseURL: "http://x", Model: ""}, {BaseURL: "http://x", Model: "m", API: "grpc"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("want an error for %+v", cfg)
		}
	}
	c, err := New(Config{BaseURL: "http://h:1/v1/completions/", Model: "m"})
	if err != nil || c.BaseURL() != "http://h:1" {
		t.Errorf("root %q, %v", c.BaseURL(), err)
	}
}

func TestTenacityBackoff(t *testing.T) {
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := TenacityBackoff(i + 1); got != w {
			t.Errorf("retry %d: %v, want %v", i+1, got, w)
		}
	}
}
