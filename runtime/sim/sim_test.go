package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/units/catalog"
)

func TestTokenizerRoundTrip(t *testing.T) {
	tok := newTokenizer()
	cases := []string{"", "hello world", "The quick brown fox.\n\nNew line", "naïve café 日本語 🙂", "<s> </s> literal", "\x00\x01\xff invalid \xc3", "  two  spaces  "}
	for _, c := range cases {
		ids, err := tok.Encode(c, true)
		if err != nil {
			t.Fatal(err)
		}
		if ids[0] != bosID {
			t.Errorf("Encode(%q, true) does not start with BOS", c)
		}
		if got := tok.Decode(ids, true); got != c {
			t.Errorf("round trip %q -> %v -> %q", c, ids, got)
		}
		var cat []byte
		for _, id := range ids {
			cat = append(cat, tok.TokenBytes(id)...)
		}
		if string(cat) != c {
			t.Errorf("TokenBytes concatenation of %q = %q", c, cat)
		}
	}
	// Words compress: a sentence of vocabulary words is one token a word.
	ids, _ := tok.Encode("the water is cold", false)
	if len(ids) != 4 {
		t.Errorf("Encode(%q) = %d tokens, want 4", "the water is cold", len(ids))
	}
	if !tok.IsSpecial(eosID) || tok.IsSpecial(firstWordID) || tok.EOS()[0] != eosID {
		t.Error("special tokens are wrong")
	}
	if got := tok.Decode([]int{bosID, eosID}, false); got != "<s></s>" {
		t.Errorf("Decode specials = %q", got)
	}
}

func FuzzTokenizerRoundTrip(f *testing.F) {
	f.Add("hello world")
	f.Add("日本語\xff")
	f.Add(strings.Repeat(" sentence", 40))
	tok := newTokenizer()
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Decode(ids, true); got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		// The bound the server judges prompts by before tokenizing them.
		if per := tok.MaxTokenBytes(); len(ids) < (len(s)+per-1)/per {
			t.Fatalf("%q (%d bytes) encodes to %d tokens, fewer than its length allows at %d bytes a token", s, len(s), len(ids), per)
		}
	})
}

func TestChatPrompt(t *testing.T) {
	tok := newTokenizer()
	got, err := tok.ChatPrompt([]runtime.ChatMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n"; got != want {
		t.Errorf("ChatPrompt = %q, want %q", got, want)
	}
	if _, err := tok.ChatPrompt([]runtime.ChatMessage{{Role: "tool", Content: "x"}}, true); err == nil {
		t.Error("unknown role accepted")
	}
}

func newFast(t *testing.T, seed int64) *Engine {
	t.Helper()
	e, err := New(Config{Model: "m", MaxContext: 256, MaxConcurrency: 4, TimeScale: 0, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// collect reads a stream to its end.
func collect(t *testing.T, st *runtime.Stream) ([]runtime.Token, runtime.FinishReason) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var all []runtime.Token
	for {
		toks, done, reason, err := st.Recv(ctx, nil)
		if err != nil && !done {
			t.Fatalf("Recv: %v", err)
		}
		all = append(all, toks...)
		if done {
			return all, reason
		}
	}
}

func ids(toks []runtime.Token) []int {
	out := make([]int, len(toks))
	for i, t := range toks {
		out[i] = t.ID
	}
	return out
}

func TestGenerateDeterministicAndLimits(t *testing.T) {
	e := newFast(t, 7)
	prompt, _ := e.tok.Encode("the sun is", true)
	run := func(e *Engine, req runtime.Request) ([]runtime.Token, runtime.FinishReason) {
		st, err := e.Generate(context.Background(), &req)
		if err != nil {
			t.Fatal(err)
		}
		return collect(t, st)
	}
	sampled := runtime.Request{Prompt: prompt, MaxTokens: 40, Sampling: runtime.Sampling{Temperature: 1, Seed: 42, HasSeed: true}, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1}
	a, ra := run(e, sampled)
	b, _ := run(e, sampled)
	if len(a) != 40 || ra != runtime.FinishLength {
		t.Fatalf("got %d tokens, %v; want 40, length", len(a), ra)
	}
	if !equal(ids(a), ids(b)) {
		t.Error("same seed gave different output")
	}
	other := newFast(t, 8)
	c, _ := run(other, sampled)
	if equal(ids(a), ids(c)) {
		t.Error("different sim seeds gave the same output")
	}
	sampled.Sampling.Seed = 43
	d, _ := run(e, sampled)
	if equal(ids(a), ids(d)) {
		t.Error("different request seeds gave the same output")
	}
	for _, tk := range a {
		if tk.ID == eosID {
			t.Error("EOS generated despite IgnoreEOS")
		}
	}
	// Without IgnoreEOS, sampling ends with EOS well before a long limit.
	stops := 0
	for seed := range int64(20) {
		r := sampled
		r.IgnoreEOS, r.MaxTokens, r.Sampling.Seed = false, 2000, seed
		toks, reason := run(e, r)
		if reason == runtime.FinishStop {
			stops++
			if toks[len(toks)-1].ID != eosID {
				t.Error("FinishStop without a final EOS")
			}
		}
	}
	if stops < 15 {
		t.Errorf("only %d of 20 sampled sequences ended with EOS", stops)
	}
	// max_tokens = 0 generates nothing.
	zero := sampled
	zero.MaxTokens = 0
	if toks, reason := run(e, zero); len(toks) != 0 || reason != runtime.FinishLength {
		t.Errorf("max_tokens 0: %d tokens, %v", len(toks), reason)
	}
	// Stop token ids end the sequence.
	greedy := runtime.Request{Prompt: prompt, MaxTokens: 50, Logprobs: -1, PromptLogprobs: -1}
	g, _ := run(e, greedy)
	stopAt := g[3].ID
	greedy.StopTokenIDs = []int{stopAt}
	g2, reason := run(e, greedy)
	if reason != runtime.FinishStop || g2[len(g2)-1].ID != stopAt || len(g2) > 4 {
		t.Errorf("stop token: %v %v", ids(g2), reason)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLogprobsAreADistribution(t *testing.T) {
	e := newFast(t, 1)
	// Summing the mixture over the whole vocabulary gives 1.
	for _, prev := range []int{bosID, firstWordID + 30, firstByteID + 'a'} {
		sum := 0.0
		for id := 0; id < e.tok.VocabSize(); id++ {
			sum += math.Exp(e.model.logprob(prev, id))
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("probabilities after %d sum to %v", prev, sum)
		}
	}
	prompt, _ := e.tok.Encode("the water is", true)
	st, err := e.Generate(context.Background(), &runtime.Request{Prompt: prompt, MaxTokens: 5, Logprobs: 3, PromptLogprobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := collect(t, st)
	for _, tk := range toks {
		if tk.Logprob >= 0 || len(tk.Top) != 3 || tk.Top[0].Logprob < tk.Top[1].Logprob {
			t.Errorf("token logprobs %+v", tk)
		}
		// Greedy picks the most likely token.
		if tk.ID != tk.Top[0].ID || tk.Logprob != tk.Top[0].Logprob {
			t.Errorf("greedy token %d is not the top alternative %d", tk.ID, tk.Top[0].ID)
		}
	}
	plp := st.PromptLogprobs()
	if len(plp) != len(prompt) || plp[0].Logprob != 0 || plp[0].Top != nil || len(plp[1].Top) != 2 {
		t.Fatalf("prompt logprobs %+v", plp)
	}
	for i := 1; i < len(plp); i++ {
		if want := float32(e.model.logprob(prompt[i-1], prompt[i])); plp[i].Logprob != want || want >= 0 {
			t.Errorf("prompt logprob %d = %v, want %v", i, plp[i].Logprob, want)
		}
	}
}

func TestGenerateRejectsBadRequests(t *testing.T) {
	e := newFast(t, 1)
	long := make([]int, 300)
	for _, c := range []struct {
		name string
		req  runtime.Request
	}{
		{"empty", runtime.Request{}},
		{"too long", runtime.Request{Prompt: long, MaxTokens: 1}},
		{"bad id", runtime.Request{Prompt: []int{1 << 20}}},
		{"negative max", runtime.Request{Prompt: []int{0}, MaxTokens: -1}},
	} {
		if _, err := e.Generate(context.Background(), &c.req); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := e.Generate(context.Background(), &runtime.Request{Prompt: long}); !errors.Is(err, runtime.ErrContextLength) {
		t.Errorf("long prompt error %v is not ErrContextLength", err)
	}
}

func TestCancelAndClose(t *testing.T) {
	e, err := New(Config{Model: "m", MaxContext: 1024, MaxConcurrency: 2, TimeScale: 1, Timing: Timing{TTFT: time.Millisecond, TargetISL: 10, Step: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := e.Generate(ctx, &runtime.Request{Prompt: []int{0, 300}, MaxTokens: 1000, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := e.Generate(context.Background(), &runtime.Request{Prompt: []int{0, 300}, MaxTokens: 1000, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	if _, reason := collect(t, st); reason != runtime.FinishAbort {
		t.Errorf("cancelled stream ended with %v", reason)
	}
	e.Close()
	if _, reason := collect(t, st2); reason != runtime.FinishAbort {
		t.Errorf("stream ended with %v after Close", reason)
	}
	if _, err := e.Generate(context.Background(), &runtime.Request{Prompt: []int{0}}); err == nil {
		t.Error("Generate after Close succeeded")
	}
}

// fakeClock advances instantly and records every sleep.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	// late is added to every positive sleep, like a timer firing late on a
	// loaded host.
	late time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	if d > 0 {
		c.now = c.now.Add(d + c.late)
	}
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return ctx.Err()
}

func TestTimingFollowsTargets(t *testing.T) {
	timing, err := TimingFromTargets([]catalog.PerfTarget{
		{ISL: 128, OSL: 128, Concurrency: 32, TTFTms: 400, TputUser: 15},
		{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	if timing.TTFT != 50*time.Millisecond || timing.TargetISL != 128 || timing.Step != 50*time.Millisecond {
		t.Fatalf("timing %+v", timing)
	}
	if _, err := TimingFromTargets(nil); err == nil {
		t.Error("no targets accepted")
	}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	e, err := New(Config{Model: "m", MaxContext: 1024, MaxConcurrency: 2, TimeScale: 2, Timing: timing, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := make([]int, 64) // half the target ISL
	st, err := e.Generate(context.Background(), &runtime.Request{Prompt: prompt, MaxTokens: 4, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := collect(t, st)
	if len(toks) != 4 {
		t.Fatalf("%d tokens", len(toks))
	}
	// Prefill: 50ms × 64/128 × time_scale 2 = 50ms; then 100ms steps.
	if d := toks[0].Time.Sub(time.Unix(1000, 0)); d != 50*time.Millisecond {
		t.Errorf("first token after %v, want 50ms", d)
	}
	for i := 1; i < len(toks); i++ {
		if d := toks[i].Time.Sub(toks[i-1].Time); d != 100*time.Millisecond {
			t.Errorf("token %d after %v, want 100ms", i, d)
		}
	}
}

// Late timers must not add up: the device schedule makes up each late
// wake-up on the next step, so the mean step stays the target's.
func TestLateTimersDoNotDrift(t *testing.T) {
	timing := Timing{TTFT: 50 * time.Millisecond, TargetISL: 128, Step: 10 * time.Millisecond}
	clk := &fakeClock{now: time.Unix(1000, 0), late: 3 * time.Millisecond}
	e, err := New(Config{Model: "m", MaxContext: 1024, MaxConcurrency: 2, TimeScale: 1, Timing: timing, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, err := e.Generate(context.Background(), &runtime.Request{Prompt: make([]int, 128), MaxTokens: 101, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := collect(t, st)
	if len(toks) != 101 {
		t.Fatalf("%d tokens", len(toks))
	}
	// Each sleep ends 3ms late, but only the last one's lateness remains.
	mean := toks[100].Time.Sub(toks[0].Time) / 100
	if mean < 10*time.Millisecond || mean > 10*time.Millisecond+60*time.Microsecond {
		t.Errorf("mean step %v, want 10ms (+ at most one late wake-up spread over 100 steps)", mean)
	}
}

func TestOutputIsText(t *testing.T) {
	e := newFast(t, 3)
	prompt, _ := e.tok.Encode("hello", true)
	st, _ := e.Generate(context.Background(), &runtime.Request{Prompt: prompt, MaxTokens: 30, Sampling: runtime.Sampling{Temperature: 0.8, TopP: 0.9, TopK: 5, MinP: 0.01, PresencePenalty: 0.5, FrequencyPenalty: 0.5, RepetitionPenalty: 1.2, Seed: 1, HasSeed: true}, Logprobs: -1, PromptLogprobs: -1})
	toks, _ := collect(t, st)
	text := e.tok.Decode(ids(toks), true)
	if !utf8.ValidString(text) || len(text) == 0 {
		t.Errorf("generated %q", text)
	}
	if info := e.Info(); !info.Simulated || info.Runtime != "sim" {
		t.Errorf("info %+v", info)
	}
}

func TestRealClockSleep(t *testing.T) {
	var c RealClock
	start := time.Now()
	if err := c.Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Errorf("Sleep(20ms) returned after %v", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err == nil {
		t.Error("Sleep with a cancelled context returned nil")
	}
}
