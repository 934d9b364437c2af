// Package nn holds the layers the vision networks are made of, on the cpu
// engine's kernels (runtime/cpu/internal/kernels): dense layers on its
// float32 GEMM tiles, layer norm, activations, multi-head attention and,
// for convolutions, im2col feeding the same GEMM. Activations are
// row-major float32, one row per token or pixel (NHWC for images).
package nn

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// Linear is y = x Wᵀ + b with W of Out rows of In weights (PyTorch's
// nn.Linear layout), b optional.
type Linear struct {
	W       *kernels.Weight
	B       []float32
	Out, In int
}

// NewLinear wraps w (Out×In float32 values, not copied) and b (Out values
// or nil).
func NewLinear(w []float32, out, in int, b []float32) (*Linear, error) {
	if len(w) != out*in {
		return nil, fmt.Errorf("linear %dx%d: %d weights", out, in, len(w))
	}
	if b != nil && len(b) != out {
		return nil, fmt.Errorf("linear %dx%d: %d biases", out, in, len(b))
	}
	kw, err := kernels.NewWeight(gguf.TypeF32, out, in, f32Bytes(w))
	if err != nil {
		return nil, err
	}
	return &Linear{W: kw, B: b, Out: out, In: in}, nil
}

// f32Bytes views float32 values as their little-endian bytes.
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// Forward computes rows rows of y (rows×Out) from x (rows×In).
func (l *Linear) Forward(p *kernels.Pool, y, x []float32, rows int) {
	p.MatMul(y[:rows*l.Out], l.W, x[:rows*l.In], rows)
	if l.B != nil {
		for r := 0; r < rows; r++ {
			kernels.Add(y[r*l.Out:(r+1)*l.Out], l.B)
		}
	}
}

// LayerNorm normalises each of the rows of x (dim values each) into dst:
// (x - mean) / sqrt(var + eps) * g + b, the variance biased, as
// torch.nn.LayerNorm computes it (the sums here in float64).
func LayerNorm(dst, x []float32, rows, dim int, g, b []float32, eps float32) {
	for r := 0; r < rows; r++ {
		xr, dr := x[r*dim:(r+1)*dim], dst[r*dim:(r+1)*dim]
		var sum float64
		for _, v := range xr {
			sum += float64(v)
		}
		mean := sum / float64(dim)
		var ss float64
		for _, v := range xr {
			d := float64(v) - mean
			ss += d * d
		}
		inv := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
		for i, v := range xr {
			dr[i] = float32((float64(v)-mean)*inv)*g[i] + b[i]
		}
	}
}

// QuickGELU is x·σ(1.702x), the activation OpenAI's CLIP was trained with.
func QuickGELU(x []float32) {
	for i, v := range x {
		x[i] = v * float32(1/(1+math.Exp(-1.702*float64(v))))
	}
}

// GELU is the exact (erf) GELU, x·Φ(x).
func GELU(x []float32) {
	for i, v := range x {
		x[i] = float32(0.5 * float64(v) * (1 + math.Erf(float64(v)/math.Sqrt2)))
	}
}

// Attention is scaled dot-product attention over several sequences at
// once. q, k and v hold one row of heads×headDim values per token, the
// sequences one after another with the given lengths; out receives the
// heads' outputs in the same layout. With causal, a token attends only to
// itself and the tokens before it. The (sequence, head) pairs are split
// over the pool's threads.
func Attention(p *kernels.Pool, out, q, k, v []float32, lens []int, heads, headDim int, causal bool) {
	dim := heads * headDim
	starts := make([]int, len(lens))
	maxLen := 0
	for i, n := range lens {
		if i > 0 {
			starts[i] = starts[i-1] + lens[i-1]
		}
		maxLen = max(maxLen, n)
	}
	scale := float32(1 / math.Sqrt(float64(headDim)))
	p.Run(len(lens)*heads, func(lo, hi int) {
		scores := make([]float32, maxLen)
		acc := make([]float32, headDim)
		for task := lo; task < hi; task++ {
			s, h := task/heads, task%heads
			base, n := starts[s], lens[s]
			for i := 0; i < n; i++ {
				qi := q[(base+i)*dim+h*headDim : (base+i)*dim+(h+1)*headDim]
				m := n
				if causal {
					m = i + 1
				}
				mx := float32(math.Inf(-1))
				for j := 0; j < m; j++ {
					kj := k[(base+j)*dim+h*headDim : (base+j)*dim+(h+1)*headDim]
					scores[j] = kernels.Dot(qi, kj) * scale
					mx = max(mx, scores[j])
				}
				var sum float64
				for j := 0; j < m; j++ {
					e := math.Exp(float64(scores[j] - mx))
					scores[j] = float32(e)
					sum += e
				}
				clear(acc)
				inv := float32(1 / sum)
				for j := 0; j < m; j++ {
					kernels.Axpy(scores[j]*inv, v[(base+j)*dim+h*headDim:(base+j)*dim+(h+1)*headDim], acc)
				}
				copy(out[(base+i)*dim+h*headDim:], acc)
			}
		}
	})
}
