package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// script is a fake server's answer: SSE events with a delay before each.
type script struct {
	status int
	body   string
	events []string
	delay  time.Duration
	// noDone leaves out the final [DONE].
	noDone bool
}

func serve(t *testing.T, sc script, check func(map[string]any)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tokenize":
			var in struct {
				Prompt string `json:"prompt"`
			}
			_ = json.NewDecoder(r.Body).Decode(&in)
			ids := make([]int, len(strings.Fields(in.Prompt)))
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids)})
			return
		case "/v1/completions", "/v1/chat/completions":
		default:
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		if check != nil {
			check(body)
		}
		if sc.status != 0 {
			w.WriteHeader(sc.status)
			_, _ = io.WriteString(w, sc.body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range sc.events {
			time.Sleep(sc.delay)
			_, _ = io.WriteString(w, ev)
			fl.Flush()
		}
		if !sc.noDone {
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func data(s string) string { return "data: " + s + "\n\n" }

func newServer(t *testing.T, url string) *openai.Client {
	t.Helper()
	srv, err := Config{BaseURL: url + "/v1/"}.Server(4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, url string, api openai.API, counter TextCounter) *Client {
	t.Helper()
	c, err := New(newServer(t, url), Config{API: api, Model: "m", ContinuousUsage: true, IgnoreEOS: true, RequestTimeout: 10 * time.Second}, counter)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDoContinuousUsageMultiTokenChunks(t *testing.T) {
	sc := script{delay: 5 * time.Millisecond, events: []string{
		data(`{"choices":[{"text":"a","finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":1}}`),
		data(`{"choices":[{"text":" b c","finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`),
		": keep-alive\n\n",
		data(`{"choices":[{"text":" d","finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":4}}`),
		data(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4}}`),
	}}
	srv := serve(t, sc, func(b map[string]any) {
		if b["max_tokens"] != 4.0 || b["ignore_eos"] != true || b["stream"] != true || b["prompt"] != "hi there" {
			t.Errorf("body %v", b)
		}
		so, _ := b["stream_options"].(map[string]any)
		if so["include_usage"] != true || so["continuous_usage_stats"] != true {
			t.Errorf("stream_options %v", so)
		}
	})
	rec := newClient(t, srv.URL, openai.Completions, nil).Do(context.Background(), Prompt{Text: "hi there", PromptTokens: 2, OutputTokens: 4}, "r1")
	if !rec.Success {
		t.Fatalf("failed: %s", rec.Error)
	}
	if fmt.Sprint(rec.ChunkTokens) != "[1 2 1]" || rec.OutputTokens != 4 || rec.PromptTokens != 7 ||
		rec.OutputTokensSource != metrics.SourceUsage || rec.ChunkTokensSource != metrics.SourceUsage || rec.GeneratedText != "a b c d" {
		t.Errorf("record %+v", rec)
	}
	for i := 1; i < len(rec.ChunkTimesS); i++ {
		if rec.ChunkTimesS[i] < rec.ChunkTimesS[i-1] {
			t.Errorf("chunk times not monotonic: %v", rec.ChunkTimesS)
		}
	}
}

func TestDoChatRoleChunkAndTokenizeFallback(t *testing.T) {
	sc := script{events: []string{
		data(`{"choices":[{"delta":{"role":"assistant","content":""}}]}`),
		data(`{"choices":[{"delta":{"content":"one two"}}]}`),
		data(`{"choices":[{"delta":{"content":" three"}}]}`),
		data(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`),
	}}
	srv := serve(t, sc, func(b map[string]any) {
		if _, ok := b["messages"]; !ok || b["max_completion_tokens"] != 8.0 {
			t.Errorf("chat body %v", b)
		}
	})
	tok := newServer(t, srv.URL).Tokenizer("m")
	rec := newClient(t, srv.URL, openai.Chat, tok).Do(context.Background(), Prompt{Text: "q", PromptTokens: 1, OutputTokens: 8}, "")
	if !rec.Success {
		t.Fatalf("failed: %s", rec.Error)
	}
	// The role chunk and the finish-only chunk carry no token.
	if len(rec.ChunkTimesS) != 2 || rec.OutputTokens != 3 || rec.OutputTokensSource != metrics.SourceTokenize ||
		rec.ChunkTokensSource != "one-per-chunk" || rec.PromptTokens != 1 {
		t.Errorf("record %+v", rec)
	}
}

func TestDoFailures(t *testing.T) {
	tests := []struct {
		name string
		sc   script
		want string
	}{
		{"http 404", script{status: 404, body: `{"error":{"message":"The model 'x' does not exist.","type":"NotFoundError","code":404}}`}, "HTTP 404: The model 'x' does not exist."},
		{"http 500 plain", script{status: 500, body: "oops"}, "HTTP 500: oops"},
		{"truncated", script{noDone: true, events: []string{data(`{"choices":[{"text":"a"}]}`)}}, "stream ended before [DONE]"},
		{"cut mid event", script{noDone: true, events: []string{data(`{"choices":[{"text":"a"}]}`), "data: {\"cho"}}, "stream ended before [DONE]"},
		{"malformed", script{events: []string{data(`{"choices":[{"text":"a"}`)}}, "malformed SSE chunk"},
		{"in-stream error", script{events: []string{data(`{"choices":[{"text":"a"}]}`), data(`{"error":{"message":"device hang"}}`)}}, "server error in stream: device hang"},
		{"no tokens", script{events: []string{data(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}`)}}, "never received a token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.sc, nil)
			rec := newClient(t, srv.URL, openai.Completions, nil).Do(context.Background(), Prompt{Text: "x", OutputTokens: 2}, "")
			if rec.Success || !strings.HasPrefix(rec.Error, tc.want) {
				t.Errorf("success %v error %q, want error starting %q", rec.Success, rec.Error, tc.want)
			}
		})
	}
}

func TestDoServerDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	rec := newClient(t, url, openai.Completions, nil).Do(context.Background(), Prompt{Text: "x", OutputTokens: 2}, "")
	if rec.Success || !strings.HasPrefix(rec.Error, "request failed:") {
		t.Errorf("record %+v", rec)
	}
}

// A server that refuses continuous_usage_stats (as ttis's own does) gets
// the request again without it, and later requests leave it out.
func TestDoContinuousUsageFallback(t *testing.T) {
	var withFlag, without int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		if so, _ := b["stream_options"].(map[string]any); so["continuous_usage_stats"] == true {
			withFlag++
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":{"message":"stream_options.continuous_usage_stats: continuous_usage_stats is not supported","type":"BadRequestError","code":400}}`)
			return
		}
		without++
		_, _ = io.WriteString(w, data(`{"choices":[{"text":"a"}]}`)+data(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)+"data: [DONE]\n\n")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, openai.Completions, nil)
	for range 3 {
		if rec := c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 1}, ""); !rec.Success || rec.ChunkTokensSource != "one-per-chunk" {
			t.Fatalf("record %+v", rec)
		}
	}
	if withFlag != 1 || without != 3 {
		t.Errorf("requests with the flag %d, without %d; want 1 and 3", withFlag, without)
	}
}

// Requests in flight together when the server refuses
// continuous_usage_stats are each sent again, not only the first to learn
// it: none of them may fail.
func TestDoContinuousUsageFallbackConcurrent(t *testing.T) {
	const n = 8
	var arrived sync.WaitGroup
	arrived.Add(n)
	var mu sync.Mutex
	var withFlag int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		if so, _ := b["stream_options"].(map[string]any); so["continuous_usage_stats"] == true {
			mu.Lock()
			withFlag++
			mu.Unlock()
			// Hold every flagged request until all n have arrived, so that
			// all are on the wire before the first refusal is read.
			arrived.Done()
			arrived.Wait()
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"error":{"message":"stream_options.continuous_usage_stats: continuous_usage_stats is not supported","type":"BadRequestError","code":400}}`)
			return
		}
		_, _ = io.WriteString(w, data(`{"choices":[{"text":"a"}]}`)+data(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)+"data: [DONE]\n\n")
	}))
	defer srv.Close()
	conns, err := Config{BaseURL: srv.URL + "/v1/"}.Server(n) // all n on the wire at once
	if err != nil {
		t.Fatal(err)
	}
	defer conns.Close()
	c, err := New(conns, Config{Model: "m", ContinuousUsage: true, RequestTimeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]metrics.Request, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i] = c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 1}, "")
		}()
	}
	wg.Wait()
	for i, rec := range recs {
		if !rec.Success {
			t.Errorf("request %d failed: %s", i, rec.Error)
		}
	}
	if withFlag != n {
		t.Errorf("%d requests carried the flag, want %d", withFlag, n)
	}
}

// Without per-chunk usage, a final usage above the chunk count is spread
// over the chunks by text length.
func TestDoSpreadsUsageOverChunks(t *testing.T) {
	sc := script{events: []string{
		data(`{"choices":[{"text":"a"}]}`),
		data(`{"choices":[{"text":"bbbbbbbbb"}]}`),
		data(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":6}}`),
	}}
	srv := serve(t, sc, nil)
	c, err := New(newServer(t, srv.URL), Config{Model: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 6}, "")
	if !rec.Success || fmt.Sprint(rec.ChunkTokens) != "[1 5]" || rec.ChunkTokensSource != "estimated-from-text" || rec.OutputTokens != 6 {
		t.Errorf("record %+v", rec)
	}
}

func TestSpreadTokens(t *testing.T) {
	for _, tc := range []struct {
		counts, text []int
		total        int
		want         string
	}{
		{[]int{1, 1, 1}, []int{0, 0, 0}, 7, "[3 2 2]"},
		{[]int{1, 1}, []int{3, 1}, 6, "[4 2]"},
		{[]int{1, 1}, []int{3, 1}, 2, "[1 1]"},
	} {
		spreadTokens(tc.counts, tc.text, tc.total)
		if got := fmt.Sprint(tc.counts); got != tc.want {
			t.Errorf("spread to %d over %v: %s, want %s", tc.total, tc.text, got, tc.want)
		}
	}
}
