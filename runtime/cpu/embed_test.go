package cpu

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// withPooling copies the GGUF file at src with <arch>.pooling_type set.
func withPooling(t testing.TB, src string, p Pooling) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := append([]gguf.KV(nil), f.KV...)
	kv = append(kv, gguf.KV{Key: f.Architecture() + ".pooling_type", Value: uint32(p)})
	tensors := make([]gguf.TensorData, len(f.Tensors))
	for i, ti := range f.Tensors {
		tensors[i] = gguf.TensorData{TensorSpec: gguf.TensorSpec{Name: ti.Name, Type: ti.Type, Dims: ti.Dims}, Data: ti.Data}
	}
	dst := filepath.Join(t.TempDir(), p.String()+".gguf")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(out, kv, tensors); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbeddings(t *testing.T) {
	base := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.Create(base, synth.Options{Preset: "tiny", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a long input that spans more than one forward batch ", 12)
	inputs := []string{"hello world", "hello world", "something else entirely", long, long + " and more"}
	byPool := map[Pooling][][]float32{}
	for _, p := range []Pooling{PoolNone, PoolMean, PoolCLS, PoolLast} {
		path := base
		if p != PoolNone {
			path = withPooling(t, base, p)
		}
		e, err := New(path, Options{Threads: 2, MaxContext: 512})
		if err != nil {
			t.Fatal(err)
		}
		want := p
		if p == PoolNone {
			want = PoolLast
		}
		if got := e.EmbeddingPooling(); got != want {
			t.Errorf("pooling_type %d read as %v", p, got)
		}
		out, err := e.Embed(context.Background(), &runtime.EmbedRequest{Inputs: inputs})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Vectors) != 5 || out.PromptTokens <= embedBatchTokens {
			t.Fatalf("%v: %d vectors, %d tokens", p, len(out.Vectors), out.PromptTokens)
		}
		for i, v := range out.Vectors {
			if len(v) != 64 || math.Abs(cosine(v, v)-1) > 1e-5 {
				t.Fatalf("%v: vector %d: %d dims, norm² %v", p, i, len(v), cosine(v, v))
			}
		}
		if c := cosine(out.Vectors[0], out.Vectors[1]); math.Abs(c-1) > 1e-5 {
			t.Errorf("%v: cosine(text, text) = %v", p, c)
		}
		// The same input alone gives the same vector as in a batch.
		one, err := e.Embed(context.Background(), &runtime.EmbedRequest{Inputs: []string{long}})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(one.Vectors[0], out.Vectors[3]); math.Abs(c-1) > 1e-4 {
			t.Errorf("%v: batched and alone differ: cosine %v", p, c)
		}
		byPool[p] = out.Vectors
		_ = e.Close()
	}
	if c := cosine(byPool[PoolMean][2], byPool[PoolLast][2]); c > 0.9999 {
		t.Errorf("mean and last pooling agree (cosine %v); pooling is not applied", c)
	}
	if c := cosine(byPool[PoolCLS][0], byPool[PoolCLS][2]); math.Abs(c-1) > 1e-5 {
		// CLS pools the first token (BOS), the same for every input in a
		// causal model.
		t.Errorf("CLS vectors of inputs with the same first token differ: %v", c)
	}
	e, err := New(base, Options{Threads: 1, MaxContext: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Embed(context.Background(), &runtime.EmbedRequest{Inputs: []string{long}}); err == nil || !strings.Contains(err.Error(), "context window") {
		t.Fatalf("over-long input: %v", err)
	}
	// One that cannot fit whatever it encodes to is refused from its
	// length, before it is tokenized.
	huge := strings.Repeat("x", 16*e.tok.(runtime.TextBounder).MaxTokenBytes()+1)
	if _, err := e.Embed(context.Background(), &runtime.EmbedRequest{Inputs: []string{"hi", huge}}); !errors.Is(err, runtime.ErrInputTooLong) || !strings.Contains(err.Error(), "input[1] is") || !strings.Contains(err.Error(), "bytes, at least 17 tokens") {
		t.Fatalf("input over the window by its length: %v", err)
	}
}

// BenchmarkEmbeddings reports embeddings/s on the 24m preset (Q8_0),
// batches of 16 short texts.
func BenchmarkEmbeddings(b *testing.B) {
	path := filepath.Join(b.TempDir(), "24m.gguf")
	if err := synth.Create(path, synth.Options{Preset: "24m", Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	e, err := New(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	inputs := make([]string, 16)
	for i := range inputs {
		inputs[i] = "the quick brown fox jumps over the lazy dog number " + strings.Repeat("x", i)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), &runtime.EmbedRequest{Inputs: inputs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(inputs))/b.Elapsed().Seconds(), "embeddings/s")
}
