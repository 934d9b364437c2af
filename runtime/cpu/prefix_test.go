package cpu

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// promptOf returns n deterministic token ids of the tiny vocabulary,
// varied by salt.
func promptOf(n, salt int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 3 + (i*131+salt*977)%500
	}
	return p
}

func greedy(prompt []int, maxTokens int) *runtime.Request {
	return &runtime.Request{Prompt: prompt, MaxTokens: maxTokens, IgnoreEOS: true, Logprobs: 0, PromptLogprobs: -1}
}

// run generates req to its end and returns the stream and its tokens.
func run(t *testing.T, e *Engine, req *runtime.Request) (*runtime.Stream, []runtime.Token) {
	t.Helper()
	st := mustGenerate(t, e, req)
	toks, _, err := collect(t, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, toks
}

// sameTokens checks that a prompt continued from cached keys and values
// gives the tokens that computing it whole gives. Token ids must be equal;
// logprobs may differ in the last bits, as they already do between a prompt
// computed alone and one sharing a batch with other sequences: the rows of a
// batch fall to different register tiles (4x3, 4x1, row dots) whose sums
// are ordered differently.
func sameTokens(t *testing.T, what string, got, want []runtime.Token) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tokens, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i].Logprob), float64(want[i].Logprob)
		if got[i].ID != want[i].ID || math.Abs(g-w) > 1e-5*max(1, math.Abs(w)) {
			t.Fatalf("%s: token %d is %d (logprob %g), without the prefix cache %d (%g)", what, i, got[i].ID, g, want[i].ID, w)
		}
	}
}

func TestPrefixCacheReusesAFinishedSequence(t *testing.T) {
	path := tinyModel(t)
	cached := newEngine(t, path, Options{MaxSeqs: 2})
	plain := newEngine(t, path, Options{MaxSeqs: 2, NoPrefixCache: true})
	shared := promptOf(70, 1)
	a := append(slices.Clone(shared), promptOf(9, 2)...)
	b := append(slices.Clone(shared), promptOf(5, 3)...)

	st, _ := run(t, cached, greedy(a, 12))
	if n := st.CachedTokens(); n != 0 {
		t.Errorf("first request: %d cached tokens, want 0", n)
	}
	st, got := run(t, cached, greedy(b, 12))
	if n := st.CachedTokens(); n != len(shared) {
		t.Errorf("second request: %d cached tokens, want the %d shared", n, len(shared))
	}
	_, want := run(t, plain, greedy(b, 12))
	sameTokens(t, "shared prefix", got, want)

	// The whole of an earlier prompt and its output continue a chat turn:
	// everything but the last prompt token is cached.
	turn := append(slices.Clone(b), ids(got)...)
	turn = append(turn, promptOf(4, 4)...)
	st, got = run(t, cached, greedy(turn, 6))
	if n := st.CachedTokens(); n < len(b)+len(got)-1 {
		t.Errorf("next chat turn: %d cached tokens, want at least %d", n, len(b)+10)
	}
	_, want = run(t, plain, greedy(turn, 6))
	sameTokens(t, "chat turn", got, want)

	// The same prompt again computes only its last token.
	st, got = run(t, cached, greedy(turn, 6))
	if n := st.CachedTokens(); n != len(turn)-1 {
		t.Errorf("repeated prompt: %d cached tokens, want %d", n, len(turn)-1)
	}
	sameTokens(t, "repeated prompt", got, want)
}

func TestPrefixCacheCopiesFromARunningSequence(t *testing.T) {
	path := tinyModel(t)
	cached := newEngine(t, path, Options{MaxSeqs: 2})
	plain := newEngine(t, path, Options{MaxSeqs: 2, NoPrefixCache: true})
	shared := promptOf(48, 5)
	long := mustGenerate(t, cached, greedy(append(slices.Clone(shared), 7), 300))
	// Wait until the long sequence has produced a token: its prompt is in
	// its cache.
	if toks, done, _, err := long.Recv(t.Context(), nil); done || err != nil || len(toks) == 0 {
		t.Fatalf("long sequence: %d tokens, done %v, err %v", len(toks), done, err)
	}
	b := append(slices.Clone(shared), promptOf(6, 6)...)
	st, got := run(t, cached, greedy(b, 10))
	if n := st.CachedTokens(); n != len(shared) {
		t.Errorf("%d cached tokens, want %d copied from the running sequence", n, len(shared))
	}
	if _, _, err := collect(t, long); err != nil {
		t.Fatal(err)
	}
	_, want := run(t, plain, greedy(b, 10))
	sameTokens(t, "copied prefix", got, want)
}

func TestPrefixCacheLimits(t *testing.T) {
	path := tinyModel(t)
	e := newEngine(t, path, Options{MaxSeqs: 1})
	a := promptOf(40, 7)
	run(t, e, greedy(a, 2))
	// Prompt logprobs need every position computed.
	req := greedy(slices.Clone(a), 2)
	req.PromptLogprobs = 0
	if st, _ := run(t, e, req); st.CachedTokens() != 0 {
		t.Errorf("prompt logprobs: %d cached tokens, want 0", st.CachedTokens())
	}
	if st, _ := run(t, e, greedy(slices.Clone(a), 2)); st.CachedTokens() != len(a)-1 {
		t.Errorf("after prompt logprobs: %d cached tokens, want %d", st.CachedTokens(), len(a)-1)
	}
	// One slot: another prompt evicts a's prefix (least recently used).
	run(t, e, greedy(promptOf(40, 8), 2))
	if st, _ := run(t, e, greedy(slices.Clone(a), 2)); st.CachedTokens() != 0 {
		t.Errorf("after eviction: %d cached tokens, want 0", st.CachedTokens())
	}
	// A one-token prompt has nothing to reuse.
	if st, _ := run(t, e, greedy(a[:1], 2)); st.CachedTokens() != 0 {
		t.Errorf("one-token prompt: %d cached tokens", st.CachedTokens())
	}
}

// TestPrefixHashesChain checks that a block's hash covers every token
// before it and that hashing continues where it left off.
func TestPrefixHashesChain(t *testing.T) {
	e := newEngine(t, tinyModel(t), Options{})
	p := promptOf(5*prefixBlock+3, 9)
	all := prefixHashes(e.seed, nil, p)
	if len(all) != 5 {
		t.Fatalf("%d block hashes for %d tokens", len(all), len(p))
	}
	part := prefixHashes(e.seed, nil, p[:2*prefixBlock])
	if cont := prefixHashes(e.seed, part, p); !slices.Equal(cont, all) {
		t.Errorf("continued hashing differs: %x vs %x", cont, all)
	}
	q := slices.Clone(p)
	q[0]++
	other := prefixHashes(e.seed, nil, q)
	for i := range all {
		if other[i] == all[i] {
			t.Errorf("block %d hash ignores a change in block 0", i)
		}
	}
}

// BenchmarkPrefixCacheTTFT measures the time to first token of a request
// whose 1,000-token prompt prefix is cached against the first request that
// computed it, on the 24m Q8_0 preset with 2 threads (each iteration uses
// a new prefix, so the first request is always cold):
//
//	go test -run '^$' -bench PrefixCacheTTFT -benchtime 3x ./runtime/cpu/
func BenchmarkPrefixCacheTTFT(b *testing.B) {
	path := filepath.Join(b.TempDir(), "model.gguf")
	if err := synth.Create(path, synth.Options{Preset: "24m", Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	e, err := New(path, Options{Threads: 2, MaxSeqs: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ttft := func(prompt []int) (time.Duration, int) {
		start := time.Now()
		st := mustGenerate(b, e, &runtime.Request{Prompt: prompt, MaxTokens: 1, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
		if _, _, err := collect(b, st); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), st.CachedTokens()
	}
	var cold, warm time.Duration
	for i := 0; b.Loop(); i++ {
		shared := make([]int, 1000)
		for p := range shared {
			shared[p] = 1 + (p*7919+i*104729)%31000
		}
		first, _ := ttft(append(slices.Clone(shared), 11, 12, 13))
		second, hit := ttft(append(slices.Clone(shared), 21, 22, 23, 24))
		if hit != len(shared) {
			b.Fatalf("second request: %d cached tokens, want %d", hit, len(shared))
		}
		cold += first
		warm += second
	}
	b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "cold-ttft-ms")
	b.ReportMetric(float64(warm.Microseconds())/1000/float64(b.N), "warm-ttft-ms")
	b.ReportMetric(float64(warm)/float64(cold), "warm/cold")
}
