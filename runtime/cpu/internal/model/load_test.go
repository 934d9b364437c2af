package model

import (
	"bytes"
	"math"
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

// TestRopeThetaScale checks when the rope takes ggml's angles: an unscaled
// rope gets powf(base, -2/ropeDim) as theta_scale and angles position ×
// theta_scale^pair within a float32 rounding per step of the plain
// frequencies; linear and llama3 scaling keep the scaled frequencies
// (theta_scale 0).
func TestRopeThetaScale(t *testing.T) {
	plain, err := Load(rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) { return kv, ts }))
	if err != nil {
		t.Fatal(err)
	}
	c := &plain.Cfg
	want := float32(math.Pow(10000, -2/float64(c.RopeDim)))
	if c.RopeThetaScale == 0 || math.Abs(float64(c.RopeThetaScale-want)) > 1e-7 {
		t.Fatalf("unscaled rope: theta_scale %v, want about %v", c.RopeThetaScale, want)
	}
	r := NewRunner(plain, kernels.NewPool(1), 4)
	var b Batch
	cache := plain.NewCache(8)
	for i := 0; i < 3; i++ {
		b.Add(cache, 1, i, false)
	}
	r.ropeTables(&b)
	half := c.RopeDim / 2
	for i := 0; i < 3; i++ {
		for j := 0; j < half; j++ {
			angle := float64(i) * float64(c.InvFreq[j])
			if d := math.Abs(float64(r.cos[i*half+j]) - math.Cos(angle)); d > 1e-5 {
				t.Errorf("position %d pair %d: cos %v, want about %v", i, j, r.cos[i*half+j], math.Cos(angle))
			}
			if d := math.Abs(float64(r.sin[i*half+j]) - math.Sin(angle)); d > 1e-5 {
				t.Errorf("position %d pair %d: sin %v, want about %v", i, j, r.sin[i*half+j], math.Sin(angle))
			}
		}
	}
	for _, scaling := range []string{"linear", "llama3"} {
		m, err := Load(rewrite(t, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			kv = setKV(kv, "llama.rope.scaling.type", scaling)
			kv = setKV(kv, "llama.rope.scaling.factor", float32(8))
			kv = setKV(kv, "llama.rope.scaling.original_context_length", uint32(64))
			return kv, ts
		}))
		if err != nil {
			t.Fatal(err)
		}
		if m.Cfg.RopeThetaScale != 0 {
			t.Errorf("%s rope scaling: theta_scale %v, want 0 (the scaled frequencies)", scaling, m.Cfg.RopeThetaScale)
		}
	}
}

// TestRopePairFusesLikeGGML checks the rotation against llama.cpp's ROPE
// output for two pairs of k256-q6_k's query at position 30 (F16 cache
// case, pairs 4 and 6; cos and sin are Sincosf of ggml's angles there),
// where the unfused x0*c - x1*s, x0*s + x1*c give other bits.
func TestRopePairFusesLikeGGML(t *testing.T) {
	for _, tc := range [][6]uint32{
		// x0, x1, cos, sin, llama.cpp's y0, y1
		{0x3efbbccc, 0xbe1a6d48, 0xbf7f81dc, 0xbd7e0346, 0xbf00054a, 0x3df5d03d},
		{0x3ec07a8f, 0xbe8d0b34, 0x3f15413a, 0xbf4ffced, 0xbb97c223, 0xbeee9cb9},
	} {
		f := func(i int) float32 { return math.Float32frombits(tc[i]) }
		y0, y1 := kernels.RopePair(f(0), f(1), f(2), f(3))
		if math.Float32bits(y0) != tc[4] || math.Float32bits(y1) != tc[5] {
			t.Errorf("RopePair(%v, %v, %v, %v) = %v, %v; llama.cpp %v, %v", f(0), f(1), f(2), f(3), y0, y1, f(4), f(5))
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
