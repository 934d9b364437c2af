package runner_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/backend"
	"github.com/ttis-dev/ttis/evalsuite/metric"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/limit"
)

// solve computes a generated word problem's answer from its text alone,
// independently of the generator.
func solve(q string) (int, bool) {
	nums := regexp.MustCompile(`\d+`).FindAllString(q, -1)
	n := make([]int, len(nums))
	for i, s := range nums {
		n[i], _ = strconv.Atoi(s)
	}
	if len(n) != 3 {
		return 0, false
	}
	switch {
	case strings.Contains(q, " buys "):
		return n[0] + n[1] - n[2], true
	case strings.Contains(q, " rows of "):
		return n[0]*n[1] - n[2], true
	case strings.Contains(q, " pages every day"):
		return n[0]*n[1] + n[2], true
	case strings.Contains(q, " shares "):
		return (n[0] - n[2]) / n[1], true
	}
	return 0, false
}

// bucket is the test server's deterministic choice of behaviour for a
// question: 0-5 answer in GSM8K format, 6-7 answer without "####", 8 give
// a wrong answer, 9 fail with HTTP 500.
func bucket(q string) int {
	s := sha256.Sum256([]byte(q))
	return int(s[0]) % 10
}

func lastQuestion(prompt string) string {
	i := strings.LastIndex(prompt, "Question: ")
	if i < 0 {
		return ""
	}
	q := prompt[i+len("Question: "):]
	q, _, _ = strings.Cut(q, "\nAnswer:")
	return q
}

var mcLine = regexp.MustCompile(`(?m)^([A-D])\. (\d+)$`)

// parseMC finds the last "What is X op Y?" block of a prompt and the
// letter of its correct option.
func parseMC(prompt string) (question string, gold string, ok bool) {
	i := strings.LastIndex(prompt, "What is ")
	if i < 0 {
		return "", "", false
	}
	block := prompt[i:]
	m := regexp.MustCompile(`^What is (\d+) ([-+*]) (\d+)\?`).FindStringSubmatch(block)
	if m == nil {
		return "", "", false
	}
	x, _ := strconv.Atoi(m[1])
	y, _ := strconv.Atoi(m[3])
	v := map[string]int{"+": x + y, "-": x - y, "*": x * y}[m[2]]
	for _, opt := range mcLine.FindAllStringSubmatch(block, -1) {
		if n, _ := strconv.Atoi(opt[2]); n == v {
			return m[0], opt[1], true
		}
	}
	return m[0], "", false
}

type testServer struct {
	*httptest.Server
	requests atomic.Int64
}

func newTestServer(t *testing.T) *testServer {
	ts := &testServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Prompt   string              `json:"prompt"`
			Echo     bool                `json:"echo"`
			Messages []evalsuite.Message `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/completions" && req.Echo:
			serveLogprobs(w, req.Prompt)
		case r.URL.Path == "/v1/completions":
			q := lastQuestion(req.Prompt)
			text, status := answer(q)
			if status != 200 {
				w.WriteHeader(status)
				fmt.Fprint(w, `{"error":{"message":"simulated failure","type":"server_error","code":500}}`)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": text, "index": 0}}})
		case r.URL.Path == "/v1/chat/completions":
			last := req.Messages[len(req.Messages)-1].Content
			q, gold, ok := parseMC(last)
			if !ok {
				http.Error(w, "cannot parse", 400)
				return
			}
			reply := gold
			if bucket(q) >= 7 {
				reply = map[string]string{"A": "B", "B": "C", "C": "D", "D": "A"}[gold]
			}
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": " " + reply + "\nbecause"}}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func answer(q string) (string, int) {
	v, ok := solve(q)
	if !ok {
		return "I cannot parse this.", 200
	}
	switch b := bucket(q); {
	case b <= 5:
		return fmt.Sprintf(" Let me think.\n#### %d", v), 200
	case b <= 7:
		return fmt.Sprintf(" so the answer is %d.", v), 200
	case b == 8:
		return fmt.Sprintf(" #### %d", v+1), 200
	default:
		return "", 500
	}
}

var tokenRE = regexp.MustCompile(`\s*\S+`)

// serveLogprobs echoes the prompt as whitespace-led tokens; the scored
// letter gets a high log-probability when it is the correct one (or, for
// a quarter of the questions, when it is the next letter instead).
func serveLogprobs(w http.ResponseWriter, prompt string) {
	q, gold, ok := parseMC(prompt)
	if !ok {
		http.Error(w, "cannot parse", 400)
		return
	}
	favoured := gold
	if bucket(q) >= 7 {
		favoured = map[string]string{"A": "B", "B": "C", "C": "D", "D": "A"}[gold]
	}
	var toks []string
	var lps []any
	var offs []int
	var tops []any
	for _, loc := range tokenRE.FindAllStringIndex(prompt, -1) {
		tok := prompt[loc[0]:loc[1]]
		toks = append(toks, tok)
		offs = append(offs, loc[0])
		lp := -1.0
		if loc[1] == len(prompt) {
			lp = -2.5
			if strings.TrimSpace(tok) == favoured {
				lp = -0.1
			}
		}
		lps = append(lps, lp)
		tops = append(tops, map[string]float64{tok: lp})
	}
	lps[0] = nil
	toks = append(toks, " The")
	offs = append(offs, len(prompt))
	lps = append(lps, -0.5)
	tops = append(tops, map[string]float64{" The": -0.5})
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
		"text": prompt + " The", "logprobs": map[string]any{"tokens": toks, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offs},
	}}})
}

func newClient(t *testing.T, url string, api openai.API) *backend.Backend {
	srv, err := openai.New(openai.Config{BaseURL: url, MaxAttempts: 2, Timeout: 10 * time.Second,
		Backoff: func(int) time.Duration { return time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := backend.New(srv, backend.Config{Model: "test-model", API: api})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func value(t *testing.T, res *runner.Result, key string) evalsuite.Aggregate {
	t.Helper()
	for _, a := range res.Aggregates {
		if a.Key() == key {
			return a
		}
	}
	t.Fatalf("no result %s in %+v", key, res.Aggregates)
	return evalsuite.Aggregate{}
}

// TestArithEndToEnd runs ttis_arith against a local server whose answers
// are known and checks the exact scores of both filters and the errors.
func TestArithEndToEnd(t *testing.T) {
	srv := newTestServer(t)
	task, err := tasks.Build("ttis_arith", tasks.Source{Size: 60, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	var strict, flexible, errored []float64
	for _, d := range task.Docs {
		q, _ := d.Str("question")
		b := bucket(q)
		strict = append(strict, b2f(b <= 5))
		flexible = append(flexible, b2f(b <= 7))
		errored = append(errored, b2f(b == 9))
	}
	cache, err := runner.OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Completions), runner.Options{Concurrency: 4, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	s := value(t, res, "exact_match,strict-match")
	f := value(t, res, "exact_match,flexible-extract")
	if s.Value != metric.Mean(strict) || f.Value != metric.Mean(flexible) {
		t.Errorf("strict %v flexible %v, want %v %v", s.Value, f.Value, metric.Mean(strict), metric.Mean(flexible))
	}
	if math.Abs(s.Stderr-metric.MeanStderr(strict)) > 1e-12 {
		t.Errorf("strict stderr %v, want %v", s.Stderr, metric.MeanStderr(strict))
	}
	if want := int(sum(errored)); res.Errors.Errored != want || res.Errors.ByKind["http_status"] != want {
		t.Errorf("errors %+v, want %d http_status", res.Errors, want)
	}
	if s.N != 60 {
		t.Errorf("N = %d: errored samples must stay in the denominator under the default policy", s.N)
	}
	t.Logf("strict %.4f±%.4f flexible %.4f errored %d", s.Value, s.Stderr, f.Value, res.Errors.Errored)
	if res.Errors.Errored == 0 || sum(strict) == 0 {
		t.Fatal("the generated set should exercise every server behaviour")
	}

	// A second run is served from the cache, except the failed requests.
	before := srv.requests.Load()
	res2, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Completions), runner.Options{Concurrency: 4, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.requests.Load() - before
	if want := int64(2 * sum(errored)); sent != want {
		t.Errorf("resumed run sent %d requests, want %d (only the failed ones, twice each)", sent, want)
	}
	if value(t, res2, "exact_match,strict-match").Value != s.Value || res2.FromCache != 60-int(sum(errored)) {
		t.Errorf("resumed run differs: %v, %d from cache", value(t, res2, "exact_match,strict-match").Value, res2.FromCache)
	}

	// Excluding errors shrinks the denominator and says so.
	res3, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Completions), runner.Options{Concurrency: 2, Cache: cache, ErrorPolicy: runner.ErrorsExcluded})
	if err != nil {
		t.Fatal(err)
	}
	s3 := value(t, res3, "exact_match,strict-match")
	if s3.N != 60-int(sum(errored)) || s3.Value != sum(strict)/float64(s3.N) || res3.Errors.Policy != runner.ErrorsExcluded {
		t.Errorf("exclude policy: %+v %+v", s3, res3.Errors)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func TestMultipleChoiceEndToEnd(t *testing.T) {
	srv := newTestServer(t)
	task, err := tasks.Build("ttis_arith_mc", tasks.Source{Size: 40, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for _, d := range task.Docs {
		q, _ := d.Str("question")
		want = append(want, b2f(bucket(q) < 7))
	}
	res, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Completions), runner.Options{Concurrency: 3, Limit: limit.Docs{Fraction: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if res.NEffective != 20 || res.NOriginal != 40 {
		t.Fatalf("limit 0.5 of 40 gave %d/%d", res.NEffective, res.NOriginal)
	}
	t.Logf("acc %.4f", value(t, res, "acc,none").Value)
	if got := value(t, res, "acc,none").Value; got != metric.Mean(want[:20]) {
		t.Errorf("acc %v, want %v", got, metric.Mean(want[:20]))
	}
	if got := value(t, res, "acc_norm,none").Value; got != metric.Mean(want[:20]) {
		t.Errorf("acc_norm %v, want %v", got, metric.Mean(want[:20]))
	}
	if res.Errors.Errored != 0 {
		t.Errorf("unexpected errors %+v", res.Errors)
	}
	// Chat endpoints cannot score log-likelihoods.
	if _, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Chat), runner.Options{}); err == nil {
		t.Error("multiple_choice over chat must be refused")
	}
}

func TestGenerativeLetterOverChat(t *testing.T) {
	srv := newTestServer(t)
	task, err := tasks.Build("ttis_arith_mc_generative", tasks.Source{Size: 30, NumFewShot: 2})
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for _, d := range task.Docs {
		q, _ := d.Str("question")
		want = append(want, b2f(bucket(q) < 7))
	}
	res, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Chat), runner.Options{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"exact_match,get_response", "exact_match,letter-extract"} {
		if got := value(t, res, key).Value; got != metric.Mean(want) {
			t.Errorf("%s = %v, want %v", key, got, metric.Mean(want))
		}
	}
	// Few-shot turns are sent as alternating user/assistant messages.
	if n := len(res.Samples[0].Requests[0].Messages); n != 5 {
		t.Errorf("%d messages, want 2 examples × 2 + 1", n)
	}
}

func TestInterruptedRunResumes(t *testing.T) {
	srv := newTestServer(t)
	task, err := tasks.Build("ttis_arith", tasks.Source{Size: 20, NumFewShot: 0})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := runner.OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := runner.Run(ctx, task, newClient(t, srv.URL, openai.Completions), runner.Options{Cache: cache}); err == nil {
		t.Fatal("a cancelled run must report the interruption")
	}
	res, err := runner.Run(context.Background(), task, newClient(t, srv.URL, openai.Completions), runner.Options{Cache: cache})
	if err != nil || res.NEffective != 20 {
		t.Fatal(res, err)
	}
}
