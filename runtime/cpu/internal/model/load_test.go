package model

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// rewrite parses the tiny synthetic model, lets edit change its metadata
// and tensors, and parses the result again.
func rewrite(t *testing.T, edit func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData)) *gguf.File {
	t.Helper()
	var src bytes.Buffer
	if err := synth.Write(&src, synth.Options{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(src.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	kv := append([]gguf.KV(nil), f.KV...)
	var ts []gguf.TensorData
	for _, ti := range f.Tensors {
		ts = append(ts, gguf.TensorData{TensorSpec: gguf.TensorSpec{Name: ti.Name, Type: ti.Type, Dims: ti.Dims}, Data: ti.Data})
	}
	kv, ts = edit(kv, ts)
	var out bytes.Buffer
	if err := gguf.Write(&out, kv, ts); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func setKV(kv []gguf.KV, key string, v any) []gguf.KV {
	for i := range kv {
		if kv[i].Key == key {
			kv[i].Value = v
			return kv
		}
	}
	return append(kv, gguf.KV{Key: key, Value: v})
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData)
		want string
	}{
		{"unsupported architecture", func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			return setKV(kv, "general.architecture", "gpt2"), ts
		}, `architecture "gpt2" is not supported`},
		{"missing tensor", func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			var out []gguf.TensorData
			for _, t := range ts {
				if t.Name != "blk.1.ffn_up.weight" {
					out = append(out, t)
				}
			}
			return kv, out
		}, "tensor blk.1.ffn_up.weight is missing"},
		{"unsupported tensor type", func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			for i := range ts {
				if ts[i].Name == "blk.0.attn_k.weight" {
					// A valid ggml type the kernels do not compute with.
					rb, _ := gguf.TypeQ4_1.RowBytes(ts[i].Dims[0])
					ts[i].Type = gguf.TypeQ4_1
					ts[i].Data = make([]byte, rb*ts[i].Dims[1])
				}
			}
			return kv, ts
		}, "tensor blk.0.attn_k.weight: weight of type Q4_1: unsupported"},
		{"wrong shape", func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			return setKV(kv, "llama.feed_forward_length", uint32(96)), ts
		}, "tensor blk.0.ffn_gate.weight has shape [64 128], want [64 96]"},
		{"missing hyper-parameter", func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			var out []gguf.KV
			for _, e := range kv {
				if e.Key != "llama.block_count" {
					out = append(out, e)
				}
			}
			return out, ts
		}, "llama.block_count"},
		{"unknown rope scaling", func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			return setKV(kv, "llama.rope.scaling.type", "yarn"), ts
		}, `rope scaling type "yarn" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(rewrite(t, tt.edit))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLlama3RopeScaling(t *testing.T) {
	f := rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		kv = setKV(kv, "llama.rope.scaling.type", "llama3")
		kv = setKV(kv, "llama.rope.scaling.factor", float32(8))
		kv = setKV(kv, "llama.rope.scaling.original_context_length", uint32(64))
		return kv, ts
	})
	m, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Load(rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) { return kv, ts }))
	if err != nil {
		t.Fatal(err)
	}
	// Head dim 16: 8 pairs. Wavelengths 2π/θ^(-2i/16): short ones (< 64/4)
	// are kept, long ones (> 64/1) divided by 8, the band in between mixed.
	for i, f := range m.Cfg.InvFreq {
		base := plain.Cfg.InvFreq[i]
		wavelen := 2 * 3.141592653589793 / float64(base)
		switch {
		case wavelen < 16:
			if f != base {
				t.Errorf("pair %d (wavelength %.1f): %v, want unscaled %v", i, wavelen, f, base)
			}
		case wavelen > 64:
			if d := f - base/8; d > 1e-7 || d < -1e-7 {
				t.Errorf("pair %d (wavelength %.1f): %v, want %v", i, wavelen, f, base/8)
			}
		default:
			if !(f < base && f > base/8) {
				t.Errorf("pair %d (wavelength %.1f): %v not between %v and %v", i, wavelen, f, base/8, base)
			}
		}
	}
}

// toNeox reorders the rows of a Q or K matrix from llama's interleaved
// rope layout (pair i of a head at rows 2i, 2i+1) to the NEOX layout (rows
// i, i+half), undoing llama.cpp's conversion permute.
func toNeox(data []byte, rowBytes, heads, headDim int) []byte {
	out := make([]byte, len(data))
	half := headDim / 2
	for h := range heads {
		for i := range half {
			for c := range 2 {
				src := h*headDim + 2*i + c
				dst := h*headDim + c*half + i
				copy(out[dst*rowBytes:(dst+1)*rowBytes], data[src*rowBytes:(src+1)*rowBytes])
			}
		}
	}
	return out
}

// asNeox rewrites the tiny llama model as arch (qwen2 or qwen3): metadata
// keys renamed, Q/K rows moved to the NEOX rope layout, zero Q/K/V biases
// for qwen2 and all-ones per-head Q/K norms for qwen3.
func asNeox(t *testing.T, arch string, cfg Config) *gguf.File {
	return rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		for i := range kv {
			if strings.HasPrefix(kv[i].Key, "llama.") {
				kv[i].Key = arch + "." + strings.TrimPrefix(kv[i].Key, "llama.")
			}
		}
		kv = setKV(kv, "general.architecture", arch)
		ones := make([]byte, 4*cfg.HeadDim)
		for i := 0; i < len(ones); i += 4 {
			copy(ones[i:], []byte{0, 0, 0x80, 0x3f}) // 1.0f
		}
		var out []gguf.TensorData
		for _, td := range ts {
			heads := 0
			switch {
			case strings.HasSuffix(td.Name, "attn_q.weight"):
				heads = cfg.Heads
			case strings.HasSuffix(td.Name, "attn_k.weight"):
				heads = cfg.KVHeads
			}
			if heads > 0 {
				rb := len(td.Data) / td.Dims[1]
				td.Data = toNeox(td.Data, rb, heads, cfg.HeadDim)
				base := strings.TrimSuffix(td.Name, ".weight")
				if arch == "qwen2" {
					out = append(out, gguf.TensorData{TensorSpec: gguf.TensorSpec{Name: base + ".bias", Type: gguf.TypeF32, Dims: []int{td.Dims[1]}}, Data: make([]byte, 4*td.Dims[1])})
				} else {
					out = append(out, gguf.TensorData{TensorSpec: gguf.TensorSpec{Name: base + "_norm.weight", Type: gguf.TypeF32, Dims: []int{cfg.HeadDim}}, Data: ones})
				}
			}
			out = append(out, td)
		}
		return kv, out
	})
}

// TestQwen2MatchesPermutedLlama checks the NEOX rope layout and the qwen2
// loader: a llama model whose Q/K rows are moved to the NEOX layout, loaded
// as qwen2 with zero biases, computes the same function.
func TestQwen2MatchesPermutedLlama(t *testing.T) {
	llama := rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) { return kv, ts })
	ref, err := Load(llama)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(asNeox(t, "qwen2", ref.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Cfg.RopeNeox || m.layers[0].bq == nil || m.layers[0].bk == nil {
		t.Fatalf("qwen2 config %+v: NEOX rope and biases expected", m.Cfg)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	prompt := []int{1, 40, 41, 300, 7, 9}
	refIDs, refLogits := greedy(t, NewRunner(ref, pool, 16), ref.NewCache(64), prompt, 8, 16)
	ids, logits := greedy(t, NewRunner(m, pool, 16), m.NewCache(64), prompt, 8, 16)
	if d := maxAbsDiff(refLogits, logits); d > batchTolerance {
		t.Errorf("qwen2 logits differ from the llama original by %g", d)
	}
	if !slices.Equal(ids, refIDs) {
		t.Errorf("qwen2 greedy %v, llama %v", ids, refIDs)
	}
}

// TestQwen3HeadNorms checks that qwen3 loads its per-head Q/K norms and
// applies them: a one-token prompt attends to itself only, so the norms
// cannot change its output, while a longer prompt's attention weights and
// so its logits do change.
func TestQwen3HeadNorms(t *testing.T) {
	ref, err := Load(rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) { return kv, ts }))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(asNeox(t, "qwen3", ref.Cfg))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Cfg.QKNorm || m.layers[0].qNorm == nil {
		t.Fatalf("qwen3 config %+v: Q/K norms expected", m.Cfg)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	_, refOne := greedy(t, NewRunner(ref, pool, 16), ref.NewCache(64), []int{1}, 0, 16)
	_, one := greedy(t, NewRunner(m, pool, 16), m.NewCache(64), []int{1}, 0, 16)
	if d := maxAbsDiff(refOne, one); d > batchTolerance {
		t.Errorf("one-token qwen3 logits differ from llama by %g", d)
	}
	prompt := []int{1, 40, 41, 300}
	_, refMany := greedy(t, NewRunner(ref, pool, 16), ref.NewCache(64), prompt, 0, 16)
	_, many := greedy(t, NewRunner(m, pool, 16), m.NewCache(64), prompt, 0, 16)
	if d := maxAbsDiff(refMany, many); d < 1e-3 {
		t.Errorf("Q/K norms left a 4-token prompt's logits unchanged (diff %g)", d)
	}
}

func TestForwardDoesNotAllocate(t *testing.T) {
	f := rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) { return kv, ts })
	m, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(2)
	defer pool.Close()
	r := NewRunner(m, pool, 8)
	caches := []*Cache{m.NewCache(512), m.NewCache(512)}
	for _, c := range caches {
		c.Reserve(512)
	}
	var b Batch
	pos := 0
	step := func() {
		b.Reset()
		for _, c := range caches {
			b.Add(c, 5, pos, true)
		}
		if _, err := r.Forward(&b); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	step() // sizes the logits buffer
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("a batched decode step allocates %v times", n)
	}
}
