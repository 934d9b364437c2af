package model

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// storiesPrompt is "Once upon a time" with BOS, as llama.cpp tokenizes it.
var storiesPrompt = []int{1, 403, 407, 261, 378}

// storiesText is llama.cpp's greedy continuation (README of shared/models).
const storiesText = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it,"

// sharedModels returns ../shared/models next to the repository root, or
// skips the test when this checkout has none (a fresh clone).
func sharedModels(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the package directory")
		}
		dir = parent
	}
	models := filepath.Join(dir, "..", "shared", "models")
	if _, err := os.Stat(filepath.Join(models, "stories260K-f32.gguf")); err != nil {
		t.Skipf("shared test models not present at %s (a fresh clone has none): %v", models, err)
	}
	return models
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

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
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
		next := argmax(logits)
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
