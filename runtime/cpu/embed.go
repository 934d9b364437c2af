package cpu

import (
	"context"
	"fmt"
	"math"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/model"
)

// Embeddings: /v1/embeddings from the same forward pass that generates.
// Each input is tokenized with the model's special tokens, run through the
// model in batches (many inputs share a forward pass), and its final-norm
// hidden states are pooled as the GGUF file says (<arch>.pooling_type,
// llama.cpp's numbering: 1 mean, 2 CLS = the first token, 3 last token;
// a file that says nothing, or "none", is pooled by its last token, the
// pooling of decoder embedding models such as Qwen3-Embedding), then
// normalised to unit length.
//
// An Embed call runs on its own activations and thread pool, beside the
// generation scheduler rather than inside it, so embeddings never wait
// behind long generations (and the scheduler needs no change); the
// unit's max_concurrency bounds how many run at once.

// Pooling is how per-token hidden states become one vector.
type Pooling int

// Pooling types (GGUF <arch>.pooling_type values).
const (
	PoolNone Pooling = 0
	PoolMean Pooling = 1
	PoolCLS  Pooling = 2
	PoolLast Pooling = 3
)

func (p Pooling) String() string {
	switch p {
	case PoolMean:
		return "mean"
	case PoolCLS:
		return "cls"
	case PoolLast:
		return "last"
	}
	return "none"
}

// embedBatchTokens is the most tokens one embedding forward pass holds.
const embedBatchTokens = 512

// EmbeddingPooling is the pooling the model's metadata asks for (PoolLast
// when it names none).
func (e *Engine) EmbeddingPooling() Pooling {
	v, ok := e.file.Uint(e.model.Cfg.Arch + ".pooling_type")
	switch p := Pooling(v); {
	case ok && (p == PoolMean || p == PoolCLS || p == PoolLast):
		return p
	}
	return PoolLast
}

// EmbeddingInfo gives the vector length: the model's hidden size. The
// vectors cannot be shortened.
func (e *Engine) EmbeddingInfo() (int, bool) { return e.model.Cfg.Dim, false }

// Embed returns one unit-length vector per input.
func (e *Engine) Embed(ctx context.Context, req *runtime.EmbedRequest) (*runtime.Embeddings, error) {
	dim := e.model.Cfg.Dim
	if req.Dimensions != 0 && req.Dimensions != dim {
		return nil, fmt.Errorf("this model's vectors have %d dimensions and cannot be shortened", dim)
	}
	pool := e.EmbeddingPooling()
	toks := make([][]int, len(req.Inputs))
	out := &runtime.Embeddings{Vectors: make([][]float32, len(req.Inputs))}
	bound, _ := e.tok.(runtime.TextBounder)
	for i, in := range req.Inputs {
		// Judged by its length first, as the server does: an input that
		// cannot fit whatever it encodes to is not tokenized.
		if bound != nil {
			per := max(bound.MaxTokenBytes(), 1)
			if lo := (len(in) + per - 1) / per; lo > e.info.MaxContext {
				return nil, fmt.Errorf("input[%d] is %d bytes, at least %d tokens, over the context window of %d: %w", i, len(in), lo, e.info.MaxContext, runtime.ErrInputTooLong)
			}
		}
		ids, err := e.tok.Encode(in, true)
		if err != nil {
			return nil, fmt.Errorf("input[%d]: tokenize: %w", i, err)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("input[%d] has no tokens", i)
		}
		if len(ids) > e.info.MaxContext {
			return nil, fmt.Errorf("input[%d] is %d tokens, the context window %d: %w", i, len(ids), e.info.MaxContext, runtime.ErrInputTooLong)
		}
		toks[i] = ids
		out.PromptTokens += len(ids)
		out.Vectors[i] = make([]float32, dim)
	}
	threads := e.pool.Threads()
	kp := kernels.NewPool(threads)
	defer kp.Close()
	runner := model.NewRunner(e.model, kp, min(embedBatchTokens, out.PromptTokens))
	var b model.Batch
	// owners[j] is the input whose wanted row j of the batch is.
	var owners []int
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := runner.Forward(&b); err != nil {
			return err
		}
		h := runner.Hidden()
		for j, in := range owners {
			row, v := h[j*dim:(j+1)*dim], out.Vectors[in]
			for k := range v {
				v[k] += row[k]
			}
		}
		b.Reset()
		owners = owners[:0]
		return nil
	}
	for i, ids := range toks {
		cache := e.model.NewKVCache(len(ids), e.kvType)
		for pos, t := range ids {
			if b.Len() == embedBatchTokens {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			want := pool == PoolMean || pool == PoolCLS && pos == 0 || pool == PoolLast && pos == len(ids)-1
			b.Add(cache, t, pos, want)
			if want {
				owners = append(owners, i)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	// Mean pooling summed the rows; the mean points the same way, and
	// normalising makes them equal.
	for _, v := range out.Vectors {
		normalize(v)
	}
	return out, nil
}

// normalize scales v to unit length (a zero vector stays zero).
func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

var _ runtime.Embedder = (*Engine)(nil)
