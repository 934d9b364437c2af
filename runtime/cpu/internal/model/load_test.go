package model

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
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
					rb, _ := gguf.TypeQ5_0.RowBytes(ts[i].Dims[0])
					ts[i].Type = gguf.TypeQ5_0
					ts[i].Data = make([]byte, rb*ts[i].Dims[1])
				}
			}
			return kv, ts
		}, "tensor blk.0.attn_k.weight: weight of type Q5_0: unsupported"},
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
