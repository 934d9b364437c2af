// Package model is the Llama-family transformer of the cpu runtime: it loads
// the architecture's hyper-parameters and weights from a GGUF file and runs
// batched forward passes over a per-sequence KV cache.
package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// Config holds the hyper-parameters the forward pass needs.
type Config struct {
	// Arch is general.architecture: llama, mistral, qwen2 or qwen3.
	Arch string
	// Name is general.name, or "" when absent.
	Name string

	Dim     int // embedding length
	Layers  int // block count
	Heads   int // query heads
	KVHeads int // key/value heads (grouped-query attention when < Heads)
	HeadDim int // per-head width of Q and K (and V)
	FFN     int // feed-forward hidden width
	Vocab   int
	// ContextLength is the trained context window.
	ContextLength int
	Eps           float32 // RMSNorm epsilon

	// RopeNeox selects the NEOX rotation layout (pairs x[i], x[i+d/2])
	// instead of llama's interleaved pairs (x[2i], x[2i+1]).
	RopeNeox bool
	// RopeDim is how many leading dimensions of each head are rotated.
	RopeDim int
	// InvFreq holds the rotation frequency of each of the RopeDim/2 pairs,
	// with any rope scaling already applied.
	InvFreq []float32
	// PosScale multiplies positions (linear rope scaling), 1 otherwise.
	PosScale float32
	// RopeThetaScale is llama.cpp's theta_scale, powf(freq_base,
	// -2.0f/RopeDim), when the rope is not scaled (0 otherwise): then the
	// rotation angles are computed as ggml's rope does (see ropeTables).
	RopeThetaScale float32

	// QKNorm is set for qwen3: per-head RMSNorm of Q and K before rope.
	QKNorm bool
}

// QDim is the width of the concatenated query heads.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of the concatenated key (or value) heads.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// supportedArch maps each architecture to whether it uses the NEOX rope
// layout and per-head Q/K norms.
var supportedArch = map[string]struct{ neox, qkNorm bool }{
	"llama":   {false, false},
	"mistral": {false, false},
	"qwen2":   {true, false},
	"qwen3":   {true, true},
}

// readConfig reads the hyper-parameters from GGUF metadata.
func readConfig(f *gguf.File) (Config, error) {
	arch := f.Architecture()
	kind, ok := supportedArch[arch]
	if !ok {
		if arch == "" {
			return Config{}, fmt.Errorf("general.architecture is missing")
		}
		return Config{}, fmt.Errorf("architecture %q is not supported (supported: llama, mistral, qwen2, qwen3)", arch)
	}
	c := Config{Arch: arch, RopeNeox: kind.neox, QKNorm: kind.qkNorm, PosScale: 1}
	c.Name, _ = f.String("general.name")
	req := func(key string, dst *int) error {
		v, err := f.RequireUint(arch + "." + key)
		if err != nil {
			return err
		}
		if v == 0 || v > 1<<24 {
			return fmt.Errorf("metadata %s.%s = %d is out of range", arch, key, v)
		}
		*dst = int(v)
		return nil
	}
	for _, kv := range []struct {
		key string
		dst *int
	}{
		{"embedding_length", &c.Dim},
		{"block_count", &c.Layers},
		{"attention.head_count", &c.Heads},
		{"feed_forward_length", &c.FFN},
		{"context_length", &c.ContextLength},
	} {
		if err := req(kv.key, kv.dst); err != nil {
			return Config{}, err
		}
	}
	c.KVHeads = c.Heads
	if v, ok := f.Uint(arch + ".attention.head_count_kv"); ok {
		c.KVHeads = int(v)
	}
	if c.KVHeads <= 0 || c.Heads%c.KVHeads != 0 {
		return Config{}, fmt.Errorf("metadata %s.attention.head_count_kv = %d does not divide head_count %d", arch, c.KVHeads, c.Heads)
	}
	c.HeadDim = c.Dim / c.Heads
	if v, ok := f.Uint(arch + ".attention.key_length"); ok {
		c.HeadDim = int(v)
	}
	if v, ok := f.Uint(arch + ".attention.value_length"); ok && int(v) != c.HeadDim {
		return Config{}, fmt.Errorf("metadata %s.attention.value_length %d differs from key_length %d (unsupported)", arch, v, c.HeadDim)
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim > 1024 {
		return Config{}, fmt.Errorf("head dimension %d is not a positive even number ≤ 1024", c.HeadDim)
	}
	eps, ok := f.Float(arch + ".attention.layer_norm_rms_epsilon")
	if !ok {
		eps = 1e-5
	}
	c.Eps = float32(eps)
	c.RopeDim = c.HeadDim
	if v, ok := f.Uint(arch + ".rope.dimension_count"); ok {
		if v == 0 || int(v) > c.HeadDim || v%2 != 0 {
			return Config{}, fmt.Errorf("metadata %s.rope.dimension_count = %d must be even and ≤ head dimension %d", arch, v, c.HeadDim)
		}
		c.RopeDim = int(v)
	}
	base, ok := f.Float(arch + ".rope.freq_base")
	if !ok {
		base = 10000
	}
	c.InvFreq = make([]float32, c.RopeDim/2)
	for i := range c.InvFreq {
		c.InvFreq[i] = float32(math.Pow(base, -float64(2*i)/float64(c.RopeDim)))
	}
	plain := slices.Clone(c.InvFreq)
	if err := c.applyRopeScaling(f); err != nil {
		return Config{}, err
	}
	if c.PosScale == 1 && slices.Equal(plain, c.InvFreq) {
		c.RopeThetaScale = float32(math.Pow(float64(float32(base)), float64(float32(-2)/float32(c.RopeDim))))
	}
	return c, nil
}

// applyRopeScaling folds rope scaling into the frequencies: a
// rope_freqs.weight tensor (llama3 conversions store the per-pair divisors)
// wins, otherwise rope.scaling.type selects linear or llama3 scaling.
func (c *Config) applyRopeScaling(f *gguf.File) error {
	if t, ok := f.Tensor("rope_freqs.weight"); ok {
		if t.Type != gguf.TypeF32 || t.Elements() != len(c.InvFreq) {
			return fmt.Errorf("tensor rope_freqs.weight: want %d F32 values, have %d of %s", len(c.InvFreq), t.Elements(), t.Type)
		}
		for i := range c.InvFreq {
			div := math.Float32frombits(uint32(t.Data[4*i]) | uint32(t.Data[4*i+1])<<8 | uint32(t.Data[4*i+2])<<16 | uint32(t.Data[4*i+3])<<24)
			if !(div > 0) {
				return fmt.Errorf("tensor rope_freqs.weight: factor %d is %v, want > 0", i, div)
			}
			c.InvFreq[i] /= div
		}
		return nil
	}
	typ, _ := f.String(c.Arch + ".rope.scaling.type")
	factor, hasFactor := f.Float(c.Arch + ".rope.scaling.factor")
	switch typ {
	case "", "none":
		return nil
	case "linear":
		if !hasFactor || factor <= 0 {
			return fmt.Errorf("rope.scaling.type linear needs %s.rope.scaling.factor > 0", c.Arch)
		}
		c.PosScale = float32(1 / factor)
		return nil
	case "llama3":
		if !hasFactor || factor <= 0 {
			return fmt.Errorf("rope.scaling.type llama3 needs %s.rope.scaling.factor > 0", c.Arch)
		}
		low, ok := f.Float(c.Arch + ".rope.scaling.low_freq_factor")
		if !ok {
			low = 1
		}
		high, ok := f.Float(c.Arch + ".rope.scaling.high_freq_factor")
		if !ok {
			high = 4
		}
		orig, ok := f.Uint(c.Arch + ".rope.scaling.original_context_length")
		if !ok {
			orig = 8192
		}
		if high <= low {
			return fmt.Errorf("llama3 rope scaling: high_freq_factor %v must exceed low_freq_factor %v", high, low)
		}
		llama3Scale(c.InvFreq, factor, low, high, float64(orig))
		return nil
	}
	return fmt.Errorf("rope scaling type %q is not supported (supported: linear, llama3)", typ)
}

// llama3Scale applies Llama 3.1's frequency-dependent rope scaling: long
// wavelengths are divided by factor, short ones kept, and the band between
// interpolated smoothly.
func llama3Scale(inv []float32, factor, low, high, orig float64) {
	lowWavelen := orig / low
	highWavelen := orig / high
	for i, fr := range inv {
		freq := float64(fr)
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
		case wavelen > lowWavelen:
			freq /= factor
		default:
			smooth := (orig/wavelen - low) / (high - low)
			freq = (1-smooth)*freq/factor + smooth*freq
		}
		inv[i] = float32(freq)
	}
}

// ReadConfig reads and checks the model shape of a GGUF file without
// loading its tensors.
func ReadConfig(f *gguf.File) (Config, error) { return readConfig(f) }

// KVBytesPerToken is the key/value cache memory one position takes: keys
// and values of every layer's key/value heads, in elements of type kv.
func (c *Config) KVBytesPerToken(kv KVType) int64 {
	return int64(c.Layers) * 2 * int64(c.KVDim()) * kv.ElemBytes()
}
