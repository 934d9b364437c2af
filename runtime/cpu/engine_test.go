package cpu

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
	"github.com/ttis-dev/ttis/units"
)

// storiesText is llama.cpp's greedy continuation of "Once upon a time"
// (README of shared/models).
const storiesText = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it,"

// sharedModel returns the path of a model in ../shared/models beside the
// module root, or skips the test when this checkout has none.
func sharedModel(t testing.TB, name string) string {
	t.Helper()
	return testbin.Shared(t, "models/"+name)
}

// tinyModel writes the synthetic "tiny" llama model (random weights, no
// shared files needed) into the test's temp dir.
func tinyModel(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return path
}

func newEngine(t testing.TB, path string, opt Options) *Engine {
	t.Helper()
	if opt.Threads == 0 {
		opt.Threads = 2
	}
	e, err := New(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// collect reads a stream to its end, bounded by a deadline.
func collect(t testing.TB, st *runtime.Stream) ([]runtime.Token, runtime.FinishReason, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var toks []runtime.Token
	for {
		var done bool
		var reason runtime.FinishReason
		var err error
		toks, done, reason, err = st.Recv(ctx, toks)
		if ctx.Err() != nil {
			t.Fatalf("stream did not finish: %v", ctx.Err())
		}
		if done {
			return toks, reason, err
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

func TestEngineStoriesGreedy(t *testing.T) {
	for _, file := range []string{"stories260K-f32.gguf", "stories260K-q8_0.gguf"} {
		t.Run(file, func(t *testing.T) {
			e := newEngine(t, sharedModel(t, file), Options{PrefillChunk: 2})
			tok := e.Tokenizer()
			prompt, err := tok.Encode("Once upon a time", true)
			if err != nil {
				t.Fatal(err)
			}
			if want := []int{1, 403, 407, 261, 378}; !slices.Equal(prompt, want) {
				t.Fatalf("prompt tokens %v, want %v", prompt, want)
			}
			st, err := e.Generate(context.Background(), &runtime.Request{Prompt: prompt, MaxTokens: 48, Logprobs: -1, PromptLogprobs: -1})
			if err != nil {
				t.Fatal(err)
			}
			toks, reason, err := collect(t, st)
			if err != nil || reason != runtime.FinishLength {
				t.Fatalf("finish %v %v, want length", reason, err)
			}
			if got := tok.Decode(ids(toks), true); got != storiesText {
				t.Errorf("text\n got %q\nwant %q", got, storiesText)
			}
			for i := 1; i < len(toks); i++ {
				if toks[i].Time.Before(toks[i-1].Time) || toks[i].Time.IsZero() {
					t.Fatalf("token %d time %v is before token %d's %v", i, toks[i].Time, i-1, toks[i-1].Time)
				}
			}
		})
	}
}

func TestEngineInfoAndOpen(t *testing.T) {
	path := sharedModel(t, "stories260K-f32.gguf")
	eng, err := Open(context.Background(), &units.Unit{Name: "stories", Model: path, CPU: units.CPU{Threads: 1}, Limits: units.Limits{MaxContext: 100, MaxConcurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	info := eng.Info()
	if info.Model != "stories" || info.Runtime != "cpu" || info.MaxContext != 100 || info.Simulated || info.Version == "" {
		t.Errorf("info %+v", info)
	}
	if _, err := Open(context.Background(), &units.Unit{Name: "missing", Model: filepath.Join(t.TempDir(), "none.gguf")}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("opening a missing file: %v", err)
	}
}

func TestEngineConcurrentMatchesSequential(t *testing.T) {
	path := tinyModel(t)
	prompts := []string{"Once upon a time", "The cat", "Lily and Ben", "One day, a little", "Tom was sad", "The sun", "A big dog", "She saw a bird"}
	run := func(e *Engine, concurrent bool) [][]int {
		out := make([][]int, len(prompts))
		var wg sync.WaitGroup
		for i, p := range prompts {
			ids0, err := e.Tokenizer().Encode(p, true)
			if err != nil {
				t.Fatal(err)
			}
			gen := func() {
				st, err := e.Generate(context.Background(), &runtime.Request{Prompt: ids0, MaxTokens: 20, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
				if err != nil {
					t.Error(err)
					return
				}
				toks, _, _ := collect(t, st)
				out[i] = ids(toks)
			}
			if concurrent {
				wg.Go(gen)
			} else {
				gen()
			}
		}
		wg.Wait()
		return out
	}
	seq := run(newEngine(t, path, Options{MaxSeqs: 1}), false)
	con := run(newEngine(t, path, Options{MaxSeqs: 8, PrefillChunk: 7}), true)
	for i := range prompts {
		if len(seq[i]) != 20 || !slices.Equal(seq[i], con[i]) {
			t.Errorf("prompt %q: alone %v, batched %v", prompts[i], seq[i], con[i])
		}
	}
}

// eosTokenizer reports a chosen id as the end of sequence.
type eosTokenizer struct {
	runtime.Tokenizer
	eos int
}

func (e eosTokenizer) EOS() []int { return []int{e.eos} }

func TestEngineFinishReasons(t *testing.T) {
	path := tinyModel(t)
	prompt := []int{1, 403, 407, 261, 378}
	base := newEngine(t, path, Options{})
	first, _, _ := collect(t, mustGenerate(t, base, &runtime.Request{Prompt: prompt, MaxTokens: 1, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1}))
	if len(first) != 1 {
		t.Fatalf("one greedy token: got %v", ids(first))
	}
	// The first greedy token serves as stop token and, for a second
	// engine, as EOS.
	stop := first[0].ID
	eosEngine := newEngine(t, path, Options{Tokenizer: eosTokenizer{base.Tokenizer(), stop}})
	tests := []struct {
		name   string
		e      *Engine
		req    runtime.Request
		reason runtime.FinishReason
		n      int
	}{
		{"max tokens", base, runtime.Request{MaxTokens: 7, IgnoreEOS: true}, runtime.FinishLength, 7},
		{"stop token", base, runtime.Request{MaxTokens: 7, StopTokenIDs: []int{stop}}, runtime.FinishStop, 1},
		{"eos", eosEngine, runtime.Request{MaxTokens: 7}, runtime.FinishStop, 1},
		{"ignore eos", eosEngine, runtime.Request{MaxTokens: 7, IgnoreEOS: true}, runtime.FinishLength, 7},
		{"zero tokens", base, runtime.Request{MaxTokens: 0}, runtime.FinishLength, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Prompt, req.Logprobs, req.PromptLogprobs = prompt, -1, -1
			toks, reason, err := collect(t, mustGenerate(t, tt.e, &req))
			if reason != tt.reason || err != nil || len(toks) != tt.n {
				t.Errorf("finished %v (%v) after %d tokens, want %v after %d", reason, err, len(toks), tt.reason, tt.n)
			}
		})
	}
}

func TestEngineContextWindow(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{MaxContext: 12})
	toks, reason, _ := collect(t, mustGenerate(t, e, &runtime.Request{Prompt: []int{1, 403, 407, 261, 378}, MaxTokens: 100, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1}))
	if reason != runtime.FinishLength || len(toks) != 12-5 {
		t.Errorf("finished %v after %d tokens, want length after %d", reason, len(toks), 12-5)
	}
	_, err := e.Generate(context.Background(), &runtime.Request{Prompt: make([]int, 13)})
	if !errors.Is(err, runtime.ErrContextLength) {
		t.Errorf("13-token prompt in a 12-token window: %v", err)
	}
	for _, bad := range []*runtime.Request{{}, {Prompt: []int{1, 100000}}, {Prompt: []int{1}, MaxTokens: -1}} {
		if _, err := e.Generate(context.Background(), bad); err == nil {
			t.Errorf("request %+v was accepted", bad)
		}
	}
}

func mustGenerate(t testing.TB, e *Engine, req *runtime.Request) *runtime.Stream {
	t.Helper()
	st, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestEngineCancelFreesSlot(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{MaxSeqs: 1})
	ctx, cancel := context.WithCancel(context.Background())
	long, err := e.Generate(ctx, &runtime.Request{Prompt: []int{1, 403}, MaxTokens: 400, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The second request waits for the only slot.
	short := mustGenerate(t, e, &runtime.Request{Prompt: []int{1, 403}, MaxTokens: 3, Logprobs: -1, PromptLogprobs: -1})
	if toks, done, _, err := long.Recv(context.Background(), nil); done || err != nil || len(toks) == 0 {
		t.Fatalf("first Recv: %d tokens, done %v, err %v", len(toks), done, err)
	}
	cancel()
	_, reason, err := collect(t, long)
	if reason != runtime.FinishAbort || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled stream finished %v (%v), want abort (context canceled)", reason, err)
	}
	if toks, reason, err := collect(t, short); reason != runtime.FinishLength || err != nil || len(toks) != 3 {
		t.Errorf("queued stream finished %v (%v) after %d tokens", reason, err, len(toks))
	}
}

func TestEngineCloseAbortsStreams(t *testing.T) {
	e, err := New(tinyModel(t), Options{Threads: 1, MaxSeqs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var streams []*runtime.Stream
	for range 3 { // one running, two queued
		streams = append(streams, mustGenerate(t, e, &runtime.Request{Prompt: []int{1}, MaxTokens: 500, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1}))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for i, st := range streams {
		if _, reason, err := collect(t, st); reason != runtime.FinishAbort || !errors.Is(err, ErrClosed) {
			t.Errorf("stream %d finished %v (%v), want abort", i, reason, err)
		}
	}
	if _, err := e.Generate(context.Background(), &runtime.Request{Prompt: []int{1}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Generate after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestEnginePromptLogprobs(t *testing.T) {
	path := tinyModel(t)
	prompt := []int{1, 403, 407, 261, 378, 11, 271}
	var ref []runtime.Token
	for _, chunk := range []int{256, 3} {
		e := newEngine(t, path, Options{PrefillChunk: chunk})
		st := mustGenerate(t, e, &runtime.Request{Prompt: prompt, MaxTokens: 2, Logprobs: 3, PromptLogprobs: 2})
		toks, _, err := collect(t, st)
		if err != nil {
			t.Fatal(err)
		}
		lp := st.PromptLogprobs()
		if len(lp) != len(prompt) || lp[0].ID != 1 || lp[0].Logprob != 0 || lp[0].Top != nil {
			t.Fatalf("chunk %d: prompt logprobs %+v", chunk, lp)
		}
		for i := 1; i < len(lp); i++ {
			if lp[i].ID != prompt[i] || lp[i].Logprob > 0 || len(lp[i].Top) != 2 || lp[i].Top[0].Logprob < lp[i].Logprob {
				t.Errorf("chunk %d: prompt logprob %d = %+v", chunk, i, lp[i])
			}
		}
		for _, tk := range toks {
			// Greedy: the sampled token is the most likely one.
			if len(tk.Top) != 3 || tk.Top[0].ID != tk.ID || tk.Top[0].Logprob != tk.Logprob {
				t.Errorf("token %+v: top %+v", tk, tk.Top)
			}
		}
		if ref == nil {
			ref = lp
			continue
		}
		for i := range lp {
			if d := lp[i].Logprob - ref[i].Logprob; d > 1e-4 || d < -1e-4 {
				t.Errorf("prompt logprob %d: chunk 3 gives %v, one chunk %v", i, lp[i].Logprob, ref[i].Logprob)
			}
		}
	}
}

func TestEngineSeededSampling(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{})
	run := func(seed int64) []int {
		toks, _, _ := collect(t, mustGenerate(t, e, &runtime.Request{
			Prompt: []int{1, 403}, MaxTokens: 24, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1,
			Sampling: runtime.Sampling{Temperature: 1.5, Seed: seed, HasSeed: true},
		}))
		return ids(toks)
	}
	a, b, c := run(11), run(11), run(12)
	if !slices.Equal(a, b) {
		t.Errorf("seed 11 gave %v then %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 11 and 12 gave the same tokens %v", a)
	}
}

// TestEnginePrefillInterleavesDecode checks that a long prompt is read in
// chunks while a running sequence keeps producing a token per step. The
// clock advances one tick per scheduler step, so token times count steps.
func TestEnginePrefillInterleavesDecode(t *testing.T) {
	var ticks atomic.Int64
	e := newEngine(t, tinyModel(t), Options{PrefillChunk: 4, Now: func() time.Time { return time.Unix(0, ticks.Add(1)) }})
	running := mustGenerate(t, e, &runtime.Request{Prompt: []int{1}, MaxTokens: 30, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	long := make([]int, 40)
	for i := range long {
		long[i] = 1 + i
	}
	reading := mustGenerate(t, e, &runtime.Request{Prompt: long, MaxTokens: 1, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
	first, _, _ := collect(t, reading)
	toks, _, _ := collect(t, running)
	if len(first) != 1 || len(toks) != 30 {
		t.Fatalf("got %d and %d tokens, want 1 and 30", len(first), len(toks))
	}
	before := 0
	for _, tk := range toks {
		if tk.Time.Before(first[0].Time) {
			before++
		}
	}
	// 40 prompt tokens in chunks of 4 take 10 steps, each also decoding
	// the running sequence.
	if before < 9 {
		t.Errorf("the running sequence produced %d tokens while a 40-token prompt was read in chunks of 4, want ≥ 9", before)
	}
}

// TestEngineConcurrentPromptLogprobs scores three long prompts at once,
// which the scheduler spreads over several steps (a bounded number of
// logits rows per step), and compares each with the prompt scored alone.
func TestEngineConcurrentPromptLogprobs(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{})
	prompts := make([][]int, 3)
	for i := range prompts {
		prompts[i] = make([]int, 100+i*7)
		for j := range prompts[i] {
			prompts[i][j] = 1 + (j*31+i*101)%500
		}
	}
	score := func(p []int) *runtime.Stream {
		return mustGenerate(t, e, &runtime.Request{Prompt: p, MaxTokens: 0, Logprobs: -1, PromptLogprobs: 0})
	}
	alone := make([][]runtime.Token, len(prompts))
	for i, p := range prompts {
		st := score(p)
		collect(t, st)
		alone[i] = st.PromptLogprobs()
	}
	streams := make([]*runtime.Stream, len(prompts))
	for i, p := range prompts {
		streams[i] = score(p)
	}
	for i, st := range streams {
		if _, reason, err := collect(t, st); reason != runtime.FinishLength || err != nil {
			t.Fatalf("prompt %d finished %v (%v)", i, reason, err)
		}
		got := st.PromptLogprobs()
		if len(got) != len(prompts[i]) {
			t.Fatalf("prompt %d: %d logprobs for %d tokens", i, len(got), len(prompts[i]))
		}
		for j := range got {
			if d := got[j].Logprob - alone[i][j].Logprob; d > 1e-4 || d < -1e-4 || got[j].ID != prompts[i][j] {
				t.Fatalf("prompt %d position %d: %+v together, %+v alone", i, j, got[j], alone[i][j])
			}
		}
	}
}

// TestKVCacheTypeOption checks that the engine names its cache type and
// size in its version string, sizes it by the type, refuses an unknown
// type, and generates the same greedy tokens with either type on the tiny
// model (F16 rounding is far below its logit gaps).
func TestKVCacheTypeOption(t *testing.T) {
	path := tinyModel(t)
	var toks [2][]runtime.Token
	for i, kv := range []string{"", "f32"} {
		e, err := New(path, Options{Threads: 1, MaxSeqs: 2, MaxContext: 256, KVCacheType: kv})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"": "KV cache f16, 0.2 KiB per token, at most 128.0 KiB", "f32": "KV cache f32, 0.5 KiB per token, at most 256.0 KiB"}[kv]
		if v := e.Info().Version; !strings.Contains(v, want) {
			t.Errorf("kv %q: version %q lacks %q", kv, v, want)
		}
		st, err := e.Generate(context.Background(), &runtime.Request{Prompt: []int{1, 300, 301, 302}, MaxTokens: 16, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for {
			var done bool
			toks[i], done, _, err = st.Recv(ctx, toks[i])
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
		}
		cancel()
		e.Close()
	}
	if len(toks[0]) != 16 || len(toks[1]) != 16 {
		t.Fatalf("generated %d and %d tokens, want 16", len(toks[0]), len(toks[1]))
	}
	for k := range toks[0] {
		if toks[0][k].ID != toks[1][k].ID {
			t.Errorf("token %d: f16 cache %d, f32 cache %d", k, toks[0][k].ID, toks[1][k].ID)
		}
	}
	if _, err := New(path, Options{Threads: 1, KVCacheType: "q8_0"}); err == nil || !strings.Contains(err.Error(), `want "f16" or "f32"`) {
		t.Errorf("kv cache type q8_0: err %v", err)
	}
}
