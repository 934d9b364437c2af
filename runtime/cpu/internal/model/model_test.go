package model

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// storiesPrompt is "Once upon a time" with BOS, as llama.cpp tokenizes it.
var storiesPrompt = []int{1, 403, 407, 261, 378}

// storiesText is llama.cpp's greedy continuation (README of shared/models).
const storiesText = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it,"

// findSharedModels returns ../shared/models beside the module root when
// it holds stories260K.
func findSharedModels() (string, error) {
	p, err := testbin.SharedPath("models/stories260K-f32.gguf")
	return filepath.Dir(p), err
}

// sharedModels returns the shared models directory or skips the test when
// this checkout has none (a fresh clone).
func sharedModels(t testing.TB) string {
	t.Helper()
	dir, err := findSharedModels()
	if err != nil {
		t.Skipf("shared test models not present (a fresh clone has none): %v", err)
	}
	return dir
}

// testModels lists the models the shape-independent tests run on: the
// synthetic tiny model (always, written to a temp dir) and stories260K when
// the shared models are present.
func testModels(t *testing.T) []string {
	t.Helper()
	tiny := filepath.Join(t.TempDir(), "tiny-q8_0.gguf")
	if err := synth.Create(tiny, synth.Options{Preset: "tiny", Type: gguf.TypeQ8_0, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	paths := []string{tiny}
	if dir, err := findSharedModels(); err == nil {
		paths = append(paths, filepath.Join(dir, "stories260K-f32.gguf"))
	}
	return paths
}

func openModel(t testing.TB, path string) (*gguf.File, *Model) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := Load(f)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return f, m
}

// decodeVocab turns ids into text with the GGUF vocabulary: SentencePiece's
// "▁" is a space and <0xXX> tokens are bytes. The test needs no tokenizer
// package for this.
func decodeVocab(t *testing.T, f *gguf.File, ids []int) string {
	t.Helper()
	vocab, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok {
		t.Fatal("tokenizer.ggml.tokens missing")
	}
	var b strings.Builder
	for _, id := range ids {
		tok := vocab[id]
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">") {
			v, err := strconv.ParseUint(tok[3:5], 16, 8)
			if err == nil {
				b.WriteByte(byte(v))
				continue
			}
		}
		b.WriteString(strings.ReplaceAll(tok, "▁", " "))
	}
	return b.String()
}

// greedy runs the prompt in chunks of chunk tokens, then n greedy steps.
func greedy(t *testing.T, r *Runner, c *Cache, prompt []int, n, chunk int) (ids []int, first []float32) {
	t.Helper()
	var b Batch
	var logits []float32
	var err error
	for start := 0; start < len(prompt); start += chunk {
		end := min(start+chunk, len(prompt))
		b.Reset()
		for i := start; i < end; i++ {
			b.Add(c, prompt[i], i, i == len(prompt)-1)
		}
		if logits, err = r.Forward(&b); err != nil {
			t.Fatal(err)
		}
	}
	first = append([]float32(nil), logits...)
	for range n {
		next := kernels.Argmax(logits)
		ids = append(ids, next)
		b.Reset()
		b.Add(c, next, c.Len(), true)
		if logits, err = r.Forward(&b); err != nil {
			t.Fatal(err)
		}
	}
	return ids, first
}

func TestStoriesGreedyMatchesLlamaCpp(t *testing.T) {
	dir := sharedModels(t)
	pool := kernels.NewPool(2)
	defer pool.Close()
	var ref []float32
	for _, tc := range []struct {
		file string
		// tol bounds the first step's logits against F32: F16 rounds the
		// weights (~3 decimal digits), Q8_0 also quantizes activations.
		tol float64
	}{
		{"stories260K-f32.gguf", 0},
		{"stories260K-f16.gguf", 0.02},
		{"stories260K-q8_0.gguf", 0.5},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, m := openModel(t, filepath.Join(dir, tc.file))
			r := NewRunner(m, pool, 64)
			ids, first := greedy(t, r, m.NewCache(m.Cfg.ContextLength), storiesPrompt, 48, 64)
			if ref == nil {
				ref = first
			} else {
				var worst float64
				for i := range ref {
					worst = max(worst, math.Abs(float64(ref[i]-first[i])))
				}
				t.Logf("max |logit - f32 logit| = %.5f", worst)
				if worst > tc.tol {
					t.Errorf("first-step logits differ from F32 by %.5f, tolerance %.3f", worst, tc.tol)
				}
			}
			if tc.file == "stories260K-f16.gguf" {
				return // the README gives no F16 reference text
			}
			if got := decodeVocab(t, f, ids); got != storiesText {
				t.Errorf("greedy text\n got %q\nwant %q\nids %v", got, storiesText, ids)
			}
		})
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var worst float64
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	return worst
}

// batchTolerance bounds logits of the same token computed in different
// batch shapes: only the float summation order may differ.
const batchTolerance = 1e-4

func TestChunkedPrefillMatchesTokenByToken(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, m := openModel(t, path)
			pool := kernels.NewPool(2)
			defer pool.Close()
			r := NewRunner(m, pool, 64)
			// 300 positions: past the first size of the caches and of the
			// attention score buffers, which must grow mid-sequence.
			prompt := make([]int, 290)
			prompt[0] = 1
			for i := 1; i < len(prompt); i++ {
				prompt[i] = (i*37 + 11) % m.Cfg.Vocab
			}
			refIDs, refLogits := greedy(t, r, m.NewCache(512), prompt, 10, 1)
			for _, chunk := range []int{3, 64} {
				ids, logits := greedy(t, r, m.NewCache(512), prompt, 10, chunk)
				if d := maxAbsDiff(refLogits, logits); d > batchTolerance {
					t.Errorf("chunk %d: last prompt logits differ from token-by-token by %g", chunk, d)
				}
				if !slices.Equal(ids, refIDs) {
					t.Errorf("chunk %d: greedy tokens %v, token-by-token %v", chunk, ids, refIDs)
				}
			}
		})
	}
}

func TestBatchedDecodeMatchesSingle(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, m := openModel(t, path)
			pool := kernels.NewPool(2)
			defer pool.Close()
			r := NewRunner(m, pool, 64)
			const seqs, steps = 8, 12
			prompts := make([][]int, seqs)
			for i := range prompts {
				// Different lengths and contents per sequence.
				prompts[i] = []int{1, 403 + i, 407, 261 + 3*i}[:2+i%3]
			}
			// One at a time.
			single := make([][]int, seqs)
			singleLogits := make([][]float32, seqs)
			for i, p := range prompts {
				ids, _ := greedy(t, r, m.NewCache(64), p, steps, len(p))
				single[i] = ids
			}
			// All together: every prompt in one mixed batch, then one decode token
			// per sequence per step.
			caches := make([]*Cache, seqs)
			var b Batch
			for i, p := range prompts {
				caches[i] = m.NewCache(64)
				for j, tok := range p {
					b.Add(caches[i], tok, j, j == len(p)-1)
				}
			}
			logits, err := r.Forward(&b)
			if err != nil {
				t.Fatal(err)
			}
			vocab := m.Cfg.Vocab
			batched := make([][]int, seqs)
			for step := range steps {
				b.Reset()
				for i := range seqs {
					next := kernels.Argmax(logits[i*vocab : (i+1)*vocab])
					batched[i] = append(batched[i], next)
					b.Add(caches[i], next, caches[i].Len(), true)
				}
				if logits, err = r.Forward(&b); err != nil {
					t.Fatal(err)
				}
				if step == steps-1 {
					for i := range seqs {
						singleLogits[i] = append([]float32(nil), logits[i*vocab:(i+1)*vocab]...)
					}
				}
			}
			for i := range seqs {
				if !slices.Equal(batched[i], single[i]) {
					t.Errorf("sequence %d: batched %v, alone %v", i, batched[i], single[i])
				}
			}
			// The last step's logits of sequence 0 against a lone run.
			c := m.NewCache(64)
			_, _ = greedy(t, r, c, prompts[0], steps-1, len(prompts[0]))
			b.Reset()
			b.Add(c, batched[0][steps-1], c.Len(), true)
			lone, err := r.Forward(&b)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(lone, singleLogits[0]); d > batchTolerance {
				t.Errorf("batched logits differ from a lone decode by %g", d)
			}
		})
	}
}

func TestForwardRejectsBadBatches(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, m := openModel(t, path)
			pool := kernels.NewPool(1)
			defer pool.Close()
			r := NewRunner(m, pool, 4)
			tests := []struct {
				name string
				fill func(b *Batch)
				want string
			}{
				{"gap in positions", func(b *Batch) { b.Add(m.NewCache(8), 1, 1, true) }, "does not continue"},
				{"token out of vocabulary", func(b *Batch) { b.Add(m.NewCache(8), 512, 0, true) }, "outside the vocabulary"},
				{"past the cache", func(b *Batch) {
					c := m.NewCache(1)
					b.Add(c, 1, 0, false)
					b.Add(c, 1, 1, true)
				}, "outside the cache"},
				{"too many tokens", func(b *Batch) {
					c := m.NewCache(8)
					for i := range 5 {
						b.Add(c, 1, i, false)
					}
				}, "exceeds"},
			}
			for _, tt := range tests {
				var b Batch
				tt.fill(&b)
				if _, err := r.Forward(&b); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
				}
			}
		})
	}
}

// TestFusedMatchesSeparate checks the stacked Q/K/V and gate/up products
// against the separate ones.
func TestFusedMatchesSeparate(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, fused := openModel(t, path)
			_, plain := openModel(t, path)
			if !fused.fusedQKV || !fused.fusedGateUp {
				t.Fatalf("small model %s was not fused", path)
			}
			plain.fusedQKV, plain.fusedGateUp = false, false
			for i := range plain.layers {
				plain.layers[i].qkv, plain.layers[i].gateUp = nil, nil
			}
			pool := kernels.NewPool(2)
			defer pool.Close()
			prompt := []int{1, 403, 407, 261, 378}
			fIDs, fLogits := greedy(t, NewRunner(fused, pool, 8), fused.NewCache(64), prompt, 6, 8)
			pIDs, pLogits := greedy(t, NewRunner(plain, pool, 8), plain.NewCache(64), prompt, 6, 8)
			if d := maxAbsDiff(fLogits, pLogits); d > batchTolerance {
				t.Errorf("fused logits differ from separate products by %g", d)
			}
			if !slices.Equal(fIDs, pIDs) {
				t.Errorf("fused greedy %v, separate %v", fIDs, pIDs)
			}
		})
	}
}
