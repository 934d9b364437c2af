package model

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// Model holds a loaded transformer. Matrices alias the GGUF file's mapping,
// so the file must stay open while the model is used. A Model is read-only
// and may be shared by several Runners.
type Model struct {
	Cfg Config

	tokEmbd *kernels.Weight // Vocab rows of Dim
	// tokRows reads token_embd's rows with pread (gguf.File.Sparse) when
	// the table is not also the output head: a forward pass reads a few of
	// its rows, and reading them through the mapping would make most of
	// the table resident. Nil when tied: the head reads every row anyway.
	tokRows io.ReaderAt
	layers  []layer
	outNorm []float32
	output  *kernels.Weight // Vocab rows of Dim (token_embd when tied)

	// fusedQKV and fusedGateUp are set when every layer has its
	// concatenated matrices (see fuse).
	fusedQKV, fusedGateUp bool
	mem                   *mappedMemory // holds the fused copies (mapped.go)
}

type layer struct {
	attnNorm     []float32
	wq, wk, wv   *kernels.Weight
	wo           *kernels.Weight
	bq, bk, bv   []float32 // qwen2 biases, nil otherwise
	qNorm, kNorm []float32 // qwen3 per-head norms, nil otherwise
	ffnNorm      []float32
	gate, up     *kernels.Weight
	down         *kernels.Weight
	// qkv stacks wq, wk and wv, gateUp stacks gate and up, when fused.
	qkv, gateUp *kernels.Weight
}

// Load reads the model from an open GGUF file. Unsupported architectures,
// missing tensors, wrong shapes and tensor types the kernels cannot compute
// with are errors naming the key or tensor.
func Load(f *gguf.File) (*Model, error) {
	cfg, err := readConfig(f)
	if err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg}
	l := loader{f: f}

	m.tokEmbd = l.matrix("token_embd.weight", -1, cfg.Dim)
	if l.err != nil {
		return nil, l.err
	}
	// The vocabulary size comes from the embedding (general metadata may
	// omit it); the tokenizer is checked against it by the engine.
	m.Cfg.Vocab = m.tokEmbd.Rows
	m.outNorm = l.vector("output_norm.weight", cfg.Dim)
	if _, ok := f.Tensor("output.weight"); ok {
		m.output = l.matrix("output.weight", m.Cfg.Vocab, cfg.Dim)
	} else {
		m.output = m.tokEmbd // tied embeddings
	}
	if m.output != m.tokEmbd {
		m.tokRows = f.Sparse(m.tokEmbd.Data)
	}
	qDim, kvDim := cfg.QDim(), cfg.KVDim()
	m.layers = make([]layer, cfg.Layers)
	for i := range m.layers {
		p := fmt.Sprintf("blk.%d.", i)
		ly := &m.layers[i]
		ly.attnNorm = l.vector(p+"attn_norm.weight", cfg.Dim)
		ly.wq = l.matrix(p+"attn_q.weight", qDim, cfg.Dim)
		ly.wk = l.matrix(p+"attn_k.weight", kvDim, cfg.Dim)
		ly.wv = l.matrix(p+"attn_v.weight", kvDim, cfg.Dim)
		ly.wo = l.matrix(p+"attn_output.weight", cfg.Dim, qDim)
		ly.bq = l.optionalVector(p+"attn_q.bias", qDim)
		ly.bk = l.optionalVector(p+"attn_k.bias", kvDim)
		ly.bv = l.optionalVector(p+"attn_v.bias", kvDim)
		if cfg.QKNorm {
			ly.qNorm = l.vector(p+"attn_q_norm.weight", cfg.HeadDim)
			ly.kNorm = l.vector(p+"attn_k_norm.weight", cfg.HeadDim)
		}
		ly.ffnNorm = l.vector(p+"ffn_norm.weight", cfg.Dim)
		ly.gate = l.matrix(p+"ffn_gate.weight", cfg.FFN, cfg.Dim)
		ly.up = l.matrix(p+"ffn_up.weight", cfg.FFN, cfg.Dim)
		ly.down = l.matrix(p+"ffn_down.weight", cfg.Dim, cfg.FFN)
		if l.err != nil {
			return nil, l.err
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	if m.WeightBytes() <= fuseLimit {
		if err := m.fuse(f.Evict); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// fuseLimit is the largest model whose Q/K/V and gate/up matrices are
// copied into stacked matrices. Stacking turns five matrix products per
// layer into two, which saves thread-pool dispatches and activation
// quantization; that matters for small models, where each product is
// short, and the copy (heap memory next to the mapped file) is cheap there.
const fuseLimit = 1 << 30

// fuse stacks the Q, K and V matrices of every layer into one, and gate and
// up into one, when their types and widths agree in every layer. The
// stacked copies, in one mapping advised for huge pages (mapHuge), are
// what the forward pass reads, so each original is evicted as soon as it
// is copied: its mapped pages leave the resident set rather than count
// twice, and the peak stays one layer's matrices above the file.
func (m *Model) fuse(evict func([]byte) error) error {
	qkv := func(ly *layer) []*kernels.Weight { return []*kernels.Weight{ly.wq, ly.wk, ly.wv} }
	gateUp := func(ly *layer) []*kernels.Weight { return []*kernels.Weight{ly.gate, ly.up} }
	m.fusedQKV, m.fusedGateUp = true, true
	for i := range m.layers {
		m.fusedQKV = m.fusedQKV && stackable(qkv(&m.layers[i]))
		m.fusedGateUp = m.fusedGateUp && stackable(gateUp(&m.layers[i]))
	}
	size := 0
	for i := range m.layers {
		if m.fusedQKV {
			size += stackedBytes(qkv(&m.layers[i]))
		}
		if m.fusedGateUp {
			size += stackedBytes(gateUp(&m.layers[i]))
		}
	}
	if size == 0 {
		return nil
	}
	mapping, mem := mapHuge(size, "the fused weights")
	m.mem = newMappedMemory(m)
	m.mem.adopt(mapping)
	var err error
	for i := range m.layers {
		ly := &m.layers[i]
		if m.fusedQKV {
			if ly.qkv, err = stack(&mem, evict, qkv(ly)); err != nil {
				return fmt.Errorf("layer %d: stack Q, K and V: %w", i, err)
			}
		}
		if m.fusedGateUp {
			if ly.gateUp, err = stack(&mem, evict, gateUp(ly)); err != nil {
				return fmt.Errorf("layer %d: stack gate and up: %w", i, err)
			}
		}
	}
	return nil
}

// stackable reports whether ws can be stacked into one matrix: one type,
// one width.
func stackable(ws []*kernels.Weight) bool {
	for _, w := range ws {
		if w.Type != ws[0].Type || w.Cols != ws[0].Cols {
			return false
		}
	}
	return true
}

// stackedBytes is the room ws take stacked, rounded up to a cache line so
// that the next stacked matrix starts on one.
func stackedBytes(ws []*kernels.Weight) int {
	n := 0
	for _, w := range ws {
		n += len(w.Data)
	}
	return (n + 63) &^ 63
}

// stack copies ws one after another to the front of *mem, evicting each
// original once copied, and cuts their room (stackedBytes) off *mem.
func stack(mem *[]byte, evict func([]byte) error, ws []*kernels.Weight) (*kernels.Weight, error) {
	room := stackedBytes(ws)
	data := (*mem)[:0]
	rows := 0
	for _, w := range ws {
		data = append(data, w.Data...)
		rows += w.Rows
		if err := evict(w.Data); err != nil {
			return nil, err
		}
	}
	*mem = (*mem)[room:]
	return kernels.NewWeight(ws[0].Type, rows, ws[0].Cols, data[:len(data):len(data)])
}

// WeightBytes is the storage size of the model's matrices and vectors.
func (m *Model) WeightBytes() int64 {
	n := int64(len(m.tokEmbd.Data)) + int64(4*len(m.outNorm))
	if m.output != m.tokEmbd {
		n += int64(len(m.output.Data))
	}
	for _, ly := range m.layers {
		for _, w := range []*kernels.Weight{ly.wq, ly.wk, ly.wv, ly.wo, ly.gate, ly.up, ly.down} {
			n += int64(len(w.Data))
		}
		n += int64(4 * (len(ly.attnNorm) + len(ly.ffnNorm) + len(ly.bq) + len(ly.bk) + len(ly.bv) + len(ly.qNorm) + len(ly.kNorm)))
	}
	return n
}

// WeightType is the type of the attention query matrix of the first layer,
// the type llama-bench style reports name a model by.
func (m *Model) WeightType() gguf.TensorType { return m.layers[0].wq.Type }

// loader collects the first error so that Load reads as a list of tensors.
type loader struct {
	f   *gguf.File
	err error
}

// matrix returns a 2-D tensor of rows×cols (rows < 0: any row count).
func (l *loader) matrix(name string, rows, cols int) *kernels.Weight {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	if len(t.Dims) != 2 || t.Dims[0] != cols || (rows >= 0 && t.Dims[1] != rows) {
		want := fmt.Sprintf("[%d %d]", cols, rows)
		if rows < 0 {
			want = fmt.Sprintf("[%d N]", cols)
		}
		l.err = fmt.Errorf("tensor %s has shape %v, want %s", name, t.Dims, want)
		return nil
	}
	w, err := kernels.NewWeight(t.Type, t.Dims[1], t.Dims[0], t.Data)
	if err != nil {
		l.err = fmt.Errorf("tensor %s: %w", name, err)
		return nil
	}
	return w
}

// vector returns a 1-D tensor of n elements converted to float32.
func (l *loader) vector(name string, n int) []float32 {
	if l.err != nil {
		return nil
	}
	if _, ok := l.f.Tensor(name); !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	return l.optionalVector(name, n)
}

// optionalVector is vector for tensors some checkpoints lack (nil then).
func (l *loader) optionalVector(name string, n int) []float32 {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		return nil
	}
	if t.Elements() != n || len(t.Dims) != 1 {
		l.err = fmt.Errorf("tensor %s has shape %v, want [%d]", name, t.Dims, n)
		return nil
	}
	out := make([]float32, n)
	switch t.Type {
	case gguf.TypeF32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case gguf.TypeF16:
		for i := range out {
			out[i] = kernels.F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case gguf.TypeBF16:
		for i := range out {
			out[i] = kernels.BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	default:
		l.err = fmt.Errorf("tensor %s has type %s; norm and bias vectors must be F32, F16 or BF16", name, t.Type)
		return nil
	}
	return out
}

// KVBytesPerToken is the key/value cache memory one position takes: keys
// and values of every layer's key/value heads, in elements of type kv.
func (m *Model) KVBytesPerToken(kv KVType) int64 { return m.Cfg.KVBytesPerToken(kv) }

// embed writes token t's embedding into dst[:Dim]; row is scratch of
// tokEmbd.RowBytes() bytes for a pread.
func (m *Model) embed(t int, row []byte, dst []float32) error {
	if m.tokRows == nil {
		kernels.DequantizeRow(m.tokEmbd, t, dst)
		return nil
	}
	if _, err := m.tokRows.ReadAt(row, int64(t)*int64(len(row))); err != nil {
		return fmt.Errorf("read the embedding of token %d: %w", t, err)
	}
	kernels.DequantizeRowBytes(m.tokEmbd, row, dst)
	return nil
}
