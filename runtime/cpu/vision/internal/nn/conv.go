package nn

import (
	"fmt"
	"math"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// Conv is torchvision's BasicConv2d in inference: a convolution without
// bias, batch norm with its running statistics, ReLU. The batch norm is
// folded into the weights and a bias (w·γ/√(σ²+ε), β − μ·γ/√(σ²+ε), in
// float64 then float32), and the convolution runs as im2col feeding the
// GEMM kernels, on NHWC activations.
type Conv struct {
	lin                    *Linear // Out rows of KH·KW·In weights, in (ky, kx, c) order
	KH, KW, SH, SW, PH, PW int
	In, Out                int
}

// NewConv folds the batch norm of a BasicConv2d into its convolution
// weight w, laid out as PyTorch's (Out, In, KH, KW).
func NewConv(w []float32, out, in, kh, kw int, gamma, beta, mean, variance []float32, eps float64, stride, pad [2]int) (*Conv, error) {
	if len(w) != out*in*kh*kw {
		return nil, fmt.Errorf("conv %dx%dx%dx%d: %d weights", out, in, kh, kw, len(w))
	}
	for _, v := range [][]float32{gamma, beta, mean, variance} {
		if len(v) != out {
			return nil, fmt.Errorf("batch norm of %d values for %d channels", len(v), out)
		}
	}
	k := kh * kw * in
	fw := make([]float32, out*k)
	bias := make([]float32, out)
	for o := 0; o < out; o++ {
		if variance[o] < 0 || math.IsNaN(float64(variance[o])) {
			return nil, fmt.Errorf("batch norm channel %d: running variance %g", o, variance[o])
		}
		s := float64(gamma[o]) / math.Sqrt(float64(variance[o])+eps)
		bias[o] = float32(float64(beta[o]) - float64(mean[o])*s)
		for c := 0; c < in; c++ {
			for y := 0; y < kh; y++ {
				for x := 0; x < kw; x++ {
					fw[o*k+(y*kw+x)*in+c] = float32(float64(w[((o*in+c)*kh+y)*kw+x]) * s)
				}
			}
		}
	}
	lin, err := NewLinear(fw, out, k, bias)
	if err != nil {
		return nil, err
	}
	return &Conv{lin: lin, KH: kh, KW: kw, SH: stride[0], SW: stride[1], PH: pad[0], PW: pad[1], In: in, Out: out}, nil
}

// OutSize is the output height and width for an h×w input.
func (c *Conv) OutSize(h, w int) (int, int) {
	return (h+2*c.PH-c.KH)/c.SH + 1, (w+2*c.PW-c.KW)/c.SW + 1
}

// Forward convolves x (h×w×In) into a new h'×w'×Out activation.
func (c *Conv) Forward(p *kernels.Pool, x []float32, h, w int) ([]float32, int, int) {
	oh, ow := c.OutSize(h, w)
	cols := x
	if c.KH != 1 || c.KW != 1 || c.SH != 1 || c.SW != 1 || c.PH != 0 || c.PW != 0 {
		k := c.KH * c.KW * c.In
		cols = make([]float32, oh*ow*k)
		p.Run(oh, func(lo, hi int) {
			for oy := lo; oy < hi; oy++ {
				for ox := 0; ox < ow; ox++ {
					dst := cols[(oy*ow+ox)*k:]
					for ky := 0; ky < c.KH; ky++ {
						iy := oy*c.SH - c.PH + ky
						for kx := 0; kx < c.KW; kx++ {
							ix := ox*c.SW - c.PW + kx
							d := dst[(ky*c.KW+kx)*c.In : (ky*c.KW+kx+1)*c.In]
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								clear(d)
								continue
							}
							copy(d, x[(iy*w+ix)*c.In:])
						}
					}
				}
			}
		})
	}
	y := make([]float32, oh*ow*c.Out)
	c.lin.Forward(p, y, cols, oh*ow)
	for i, v := range y {
		if v < 0 {
			y[i] = 0
		}
	}
	return y, oh, ow
}

// MaxPool is F.max_pool2d(kernel k, stride s, padding pad) on h×w×c,
// padding never chosen.
func MaxPool(p *kernels.Pool, x []float32, h, w, c, k, s, pad int) ([]float32, int, int) {
	oh, ow := (h+2*pad-k)/s+1, (w+2*pad-k)/s+1
	y := make([]float32, oh*ow*c)
	p.Run(oh, func(lo, hi int) {
		for oy := lo; oy < hi; oy++ {
			for ox := 0; ox < ow; ox++ {
				dst := y[(oy*ow+ox)*c : (oy*ow+ox+1)*c]
				first := true
				for ky := 0; ky < k; ky++ {
					iy := oy*s - pad + ky
					if iy < 0 || iy >= h {
						continue
					}
					for kx := 0; kx < k; kx++ {
						ix := ox*s - pad + kx
						if ix < 0 || ix >= w {
							continue
						}
						src := x[(iy*w+ix)*c : (iy*w+ix+1)*c]
						if first {
							copy(dst, src)
							first = false
							continue
						}
						for i, v := range src {
							if v > dst[i] {
								dst[i] = v
							}
						}
					}
				}
			}
		}
	})
	return y, oh, ow
}

// AvgPool3 is F.avg_pool2d(kernel 3, stride 1, padding 1,
// count_include_pad=False) on h×w×c: each mean is over the window's
// positions inside the image, as TensorFlow's pooling (and so the FID
// Inception) counts them.
func AvgPool3(p *kernels.Pool, x []float32, h, w, c int) []float32 {
	y := make([]float32, h*w*c)
	p.Run(h, func(lo, hi int) {
		for oy := lo; oy < hi; oy++ {
			for ox := 0; ox < w; ox++ {
				dst := y[(oy*w+ox)*c : (oy*w+ox+1)*c]
				n := 0
				for iy := max(oy-1, 0); iy <= min(oy+1, h-1); iy++ {
					for ix := max(ox-1, 0); ix <= min(ox+1, w-1); ix++ {
						kernels.Add(dst, x[(iy*w+ix)*c:(iy*w+ix+1)*c])
						n++
					}
				}
				kernels.Scale(dst, 1/float32(n))
			}
		}
	})
	return y
}

// GlobalMean is AdaptiveAvgPool2d((1, 1)): the mean of every channel over
// the h×w positions.
func GlobalMean(x []float32, hw, c int) []float32 {
	acc := make([]float64, c)
	for i := 0; i < hw; i++ {
		for j, v := range x[i*c : (i+1)*c] {
			acc[j] += float64(v)
		}
	}
	y := make([]float32, c)
	for j := range y {
		y[j] = float32(acc[j] / float64(hw))
	}
	return y
}

// Concat joins NHWC activations of hw positions along the channels.
func Concat(hw int, parts ...[]float32) []float32 {
	total := 0
	chans := make([]int, len(parts))
	for i, p := range parts {
		chans[i] = len(p) / hw
		total += chans[i]
	}
	y := make([]float32, hw*total)
	for pos := 0; pos < hw; pos++ {
		off := pos * total
		for i, p := range parts {
			copy(y[off:off+chans[i]], p[pos*chans[i]:(pos+1)*chans[i]])
			off += chans[i]
		}
	}
	return y
}
