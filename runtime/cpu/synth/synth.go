// Package synth writes synthetic Llama-architecture GGUF models: seeded
// random weights in a chosen tensor type and a generated SentencePiece-style
// vocabulary, so demos, tests and benchmarks of the cpu runtime need no
// download. The weights are not trained: generated text is noise, but the
// compute (shapes, types, memory traffic) is that of a real model.
package synth

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/google/renameio/v2"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// Preset is a model shape.
type Preset struct {
	Name       string
	Dim        int // embedding length
	Layers     int
	Heads      int
	KVHeads    int
	FFN        int // feed-forward hidden size
	Vocab      int
	Context    int
	RopeTheta  float32
	RMSEpsilon float32
}

var presets = []Preset{
	// tiny is small enough for CI: grouped-query attention. Its 2048
	// tokens hold the chat template with tools (the Llama 3.1 tool prompt
	// alone is about 660 of its tokens) and a short exchange; the KV cache
	// stays at 256 bytes a token.
	{Name: "tiny", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 512, Context: 2048, RopeTheta: 10000, RMSEpsilon: 1e-5},
	// 24m and 134m follow the TinyStories/llama2.c shapes of those sizes.
	{Name: "24m", Dim: 288, Layers: 6, Heads: 6, KVHeads: 6, FFN: 768, Vocab: 32000, Context: 2048, RopeTheta: 10000, RMSEpsilon: 1e-5},
	{Name: "134m", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 2048, Vocab: 32000, Context: 2048, RopeTheta: 10000, RMSEpsilon: 1e-5},
}

// Presets lists the built-in shapes.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// LookupPreset returns the preset with the given name.
func LookupPreset(name string) (Preset, error) {
	var names []string
	for _, p := range presets {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("unknown preset %q (have %s)", name, strings.Join(names, ", "))
}

// HeadDim is the size of one attention head.
func (p Preset) HeadDim() int { return p.Dim / p.Heads }

// Params is the number of weights of the model.
func (p Preset) Params() int64 {
	kv := int64(p.HeadDim() * p.KVHeads)
	d, f := int64(p.Dim), int64(p.FFN)
	perLayer := 2*d + d*d*2 + 2*d*kv + 3*d*f
	return int64(p.Layers)*perLayer + 2*d*int64(p.Vocab) + d
}

func (p Preset) validate() error {
	switch {
	case p.Dim <= 0 || p.Layers <= 0 || p.Heads <= 0 || p.KVHeads <= 0 || p.FFN <= 0 || p.Context <= 0:
		return fmt.Errorf("preset %q: sizes must be positive", p.Name)
	case p.Dim%p.Heads != 0 || p.HeadDim()%2 != 0:
		return fmt.Errorf("preset %q: dim %d must split into %d heads of even size", p.Name, p.Dim, p.Heads)
	case p.Heads%p.KVHeads != 0:
		return fmt.Errorf("preset %q: %d heads are not a multiple of %d KV heads", p.Name, p.Heads, p.KVHeads)
	}
	return nil
}

// Options configure a synthetic model.
type Options struct {
	// Preset names a built-in shape ("tiny", "24m", "134m"); Shape, when
	// its Dim is set, is used instead.
	Preset string
	Shape  Preset
	// Type is the type of the 2-D weight matrices (F32 when zero). Norm
	// weights stay F32; a matrix whose rows are not a whole number of the
	// type's blocks falls back to another type as llama-quantize does (see
	// FallbackType and Fallbacks).
	Type gguf.TensorType
	// Seed seeds the weights; the same seed gives the same file.
	Seed uint64
	// Name is general.name (default "ttis-synthetic-<preset>").
	Name string
}

// fileTypes maps a weight type to general.file_type (llama.cpp's
// LLAMA_FTYPE_* numbering; the K-quants are the _S variants, every matrix
// of one type).
var fileTypes = map[gguf.TensorType]uint32{
	gguf.TypeF32: 0, gguf.TypeF16: 1, gguf.TypeQ4_0: 2, gguf.TypeQ8_0: 7,
	gguf.TypeQ5_0: 8, gguf.TypeQ5_1: 9, gguf.TypeQ4_K: 14, gguf.TypeQ5_K: 16,
	gguf.TypeQ6_K: 18, gguf.TypeBF16: 32,
}

// Types lists the weight types Create can write, by ggml name.
func Types() []string {
	var out []string
	for t := range fileTypes {
		out = append(out, strings.ToLower(t.String()))
	}
	sort.Strings(out)
	return out
}

// ParseType maps a lower- or upper-case ggml type name ("q8_0") to its type.
func ParseType(name string) (gguf.TensorType, error) {
	for t := range fileTypes {
		if strings.EqualFold(t.String(), name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unsupported weight type %q (have %s)", name, strings.Join(Types(), ", "))
}

// Create writes a synthetic model to path. The file appears atomically: it
// is written under a temporary name in the same directory and renamed.
func Create(path string, opts Options) error {
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(0o644))
	if err != nil {
		return fmt.Errorf("create synthetic model %s: %w", path, err)
	}
	defer f.Cleanup() // no-op after the replace
	if err := Write(f, opts); err != nil {
		return fmt.Errorf("create synthetic model %s: %w", path, err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("create synthetic model %s: %w", path, err)
	}
	return nil
}

// Write streams a synthetic model in GGUF to w, one tensor at a time.
func Write(w io.Writer, opts Options) error {
	p, err := opts.shape()
	if err != nil {
		return err
	}
	ftype, ok := fileTypes[opts.Type]
	if !ok {
		return fmt.Errorf("unsupported weight type %s (have %s)", opts.Type, strings.Join(Types(), ", "))
	}
	vocab, err := NewVocabulary(p.Vocab)
	if err != nil {
		return err
	}
	name := opts.Name
	if name == "" {
		name = "ttis-synthetic-" + p.Name
	}
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: name},
		{Key: "general.description", Value: "synthetic model with seeded random weights (ttisctl model create); not trained"},
		{Key: "general.file_type", Value: ftype},
		{Key: "general.quantization_version", Value: uint32(2)},
		{Key: "llama.context_length", Value: uint32(p.Context)},
		{Key: "llama.embedding_length", Value: uint32(p.Dim)},
		{Key: "llama.block_count", Value: uint32(p.Layers)},
		{Key: "llama.feed_forward_length", Value: uint32(p.FFN)},
		{Key: "llama.attention.head_count", Value: uint32(p.Heads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(p.KVHeads)},
		{Key: "llama.rope.dimension_count", Value: uint32(p.HeadDim())},
		{Key: "llama.rope.freq_base", Value: p.RopeTheta},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: p.RMSEpsilon},
		{Key: "llama.vocab_size", Value: uint32(p.Vocab)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: vocab.Tokens},
		{Key: "tokenizer.ggml.scores", Value: vocab.Scores},
		{Key: "tokenizer.ggml.token_type", Value: vocab.Types},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(UnkID)},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(BOSID)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(EOSID)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
	}
	tensors := plan(p, opts.Type)
	specs := make([]gguf.TensorSpec, len(tensors))
	for i, t := range tensors {
		specs[i] = t.spec
	}
	gw, err := gguf.NewWriter(w, kv, specs)
	if err != nil {
		return err
	}
	for i, t := range tensors {
		data, err := t.generate(opts.Seed, uint64(i))
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.spec.Name, err)
		}
		if err := gw.WriteTensor(data); err != nil {
			return err
		}
	}
	return gw.Close()
}

// tensorPlan is one tensor and how to initialise it: std 0 means all ones
// (norm weights), otherwise normal with that standard deviation.
type tensorPlan struct {
	spec gguf.TensorSpec
	std  float64
}

// chunkElems is how many values one goroutine generates and encodes at a
// time. It is a multiple of every block size (32, 256), so chunks start on
// block boundaries.
const chunkElems = 1 << 18

// generate returns the encoded tensor. Chunks are generated and encoded in
// parallel; each chunk has its own PCG stream derived from the seed, the
// tensor index and the chunk index, so the result does not depend on the
// number of goroutines.
func (t tensorPlan) generate(seed, index uint64) ([]byte, error) {
	n := 1
	for _, d := range t.spec.Dims {
		n *= d
	}
	size, err := t.spec.Type.RowBytes(n)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	chunks := (n + chunkElems - 1) / chunkElems
	errs := make([]error, chunks)
	work := make(chan int, chunks)
	for c := 0; c < chunks; c++ {
		work <- c
	}
	close(work)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), chunks); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := make([]float32, chunkElems)
			for c := range work {
				lo, hi := c*chunkElems, min((c+1)*chunkElems, n)
				v := vals[:hi-lo]
				t.fill(v, seed, index, uint64(c))
				enc, err := kernels.Quantize(t.spec.Type, v)
				if err != nil {
					errs[c] = err
					continue
				}
				off, _ := t.spec.Type.RowBytes(lo)
				copy(out[off:], enc)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// fill writes one chunk's values: ones for norm weights, otherwise normal
// values with the plan's standard deviation.
func (t tensorPlan) fill(dst []float32, seed, index, chunk uint64) {
	if t.std == 0 {
		for i := range dst {
			dst[i] = 1
		}
		return
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^(index<<32|chunk)))
	for i := range dst {
		dst[i] = float32(rng.NormFloat64() * t.std)
	}
}

// FallbackType is the type a matrix with rows of cols elements is stored in
// when want was asked for. It mirrors llama-quantize's rule for tensors
// whose row length is not a multiple of the type's block size
// (llama_tensor_get_type in llama.cpp's src/llama-quant.cpp, commit
// c392e509: "convert_incompatible_tensor"): Q4_K falls back to Q5_0, Q5_K
// to Q5_1, Q6_K to Q8_0, and a row that does not fit the fallback's 32-element
// blocks either is stored as F16. llama-quantize refuses such a tensor for
// the 32-block types (Q4_0, Q5_0, Q5_1, Q8_0: "Unsupported tensor size");
// a synthetic model stores it as F16 instead, and says so.
func FallbackType(want gguf.TensorType, cols int) gguf.TensorType {
	if cols%want.BlockSize() == 0 {
		return want
	}
	t := gguf.TypeF16
	switch want {
	case gguf.TypeQ4_K:
		t = gguf.TypeQ5_0
	case gguf.TypeQ5_K:
		t = gguf.TypeQ5_1
	case gguf.TypeQ6_K:
		t = gguf.TypeQ8_0
	}
	if cols%t.BlockSize() != 0 {
		t = gguf.TypeF16
	}
	return t
}

// shape is the preset or explicit shape of opts, validated.
func (opts Options) shape() (Preset, error) {
	p := opts.Shape
	if p.Dim == 0 {
		var err error
		if p, err = LookupPreset(opts.Preset); err != nil {
			return Preset{}, err
		}
	}
	if err := p.validate(); err != nil {
		return Preset{}, err
	}
	return p, nil
}

// Fallback is a matrix stored in another type than the one asked for.
type Fallback struct {
	Tensor string          `json:"tensor"`
	Cols   int             `json:"cols"`
	Want   gguf.TensorType `json:"-"`
	Got    gguf.TensorType `json:"-"`
}

// Fallbacks lists the matrices Create stores in another type than
// opts.Type (FallbackType), in file order, and the number of matrices.
func Fallbacks(opts Options) ([]Fallback, int, error) {
	p, err := opts.shape()
	if err != nil {
		return nil, 0, err
	}
	typ := opts.Type
	var out []Fallback
	matrices := 0
	for _, t := range plan(p, typ) {
		if len(t.spec.Dims) != 2 {
			continue
		}
		matrices++
		if t.spec.Type != typ {
			out = append(out, Fallback{Tensor: t.spec.Name, Cols: t.spec.Dims[0], Want: typ, Got: t.spec.Type})
		}
	}
	return out, matrices, nil
}

// plan lists the tensors in file order with llama.cpp's names. Residual
// projections (attn_output, ffn_down) get the GPT-2 style 1/sqrt(2*layers)
// scaling so activations keep their size through the stack.
func plan(p Preset, typ gguf.TensorType) []tensorPlan {
	const std = 0.02
	residual := std / math.Sqrt(2*float64(p.Layers))
	kvDim := p.HeadDim() * p.KVHeads
	matrix := func(name string, cols, rows int, s float64) tensorPlan {
		t := FallbackType(typ, cols)
		return tensorPlan{spec: gguf.TensorSpec{Name: name, Type: t, Dims: []int{cols, rows}}, std: s}
	}
	norm := func(name string) tensorPlan {
		return tensorPlan{spec: gguf.TensorSpec{Name: name, Type: gguf.TypeF32, Dims: []int{p.Dim}}}
	}
	out := []tensorPlan{
		matrix("token_embd.weight", p.Dim, p.Vocab, std),
		norm("output_norm.weight"),
		matrix("output.weight", p.Dim, p.Vocab, std),
	}
	for l := 0; l < p.Layers; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		out = append(out,
			norm(b+"attn_norm.weight"),
			matrix(b+"attn_q.weight", p.Dim, p.Dim, std),
			matrix(b+"attn_k.weight", p.Dim, kvDim, std),
			matrix(b+"attn_v.weight", p.Dim, kvDim, std),
			matrix(b+"attn_output.weight", p.Dim, p.Dim, residual),
			norm(b+"ffn_norm.weight"),
			matrix(b+"ffn_gate.weight", p.Dim, p.FFN, std),
			matrix(b+"ffn_up.weight", p.Dim, p.FFN, std),
			matrix(b+"ffn_down.weight", p.FFN, p.Dim, residual),
		)
	}
	return out
}
