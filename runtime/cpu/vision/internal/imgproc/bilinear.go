package imgproc

import "math"

// linearIndex is one output position of torch's linear interpolation
// without align_corners: the two input indices and their weights.
type linearIndex struct {
	i0, i1 int
	l0, l1 float32
}

// linearIndices computes them as torch 1.13's CPU kernel does
// (aten/src/ATen/native/UpSample.h area_pixel_compute_source_index with
// the CPU accumulation type, double): the scale in float32, in/out; the
// source index scale*(o+0.5)-0.5 and the weights in double, floored at 0,
// then stored as float32. (torch 2.x computes the index in float32, which
// moves a weight by up to one float32 ulp of the index, about 1e-5 for
// 300-pixel rows; far below the 1e-4 this package is held to.)
func linearIndices(in, out int) []linearIndex {
	scale := float64(float32(in) / float32(out))
	idx := make([]linearIndex, out)
	for o := range idx {
		src := scale*(float64(o)+0.5) - 0.5
		if src < 0 {
			src = 0
		}
		i0 := int(math.Floor(src))
		l1 := min(max(src-float64(i0), 0), 1)
		i1 := i0
		if i0 < in-1 {
			i1 = i0 + 1
		}
		idx[o] = linearIndex{i0: i0, i1: i1, l0: float32(1 - l1), l1: float32(l1)}
	}
	return idx
}

// ResizeBilinear is F.interpolate(x, size=(oh, ow), mode="bilinear",
// align_corners=False) (no antialiasing, torch's default) of one CHW float
// image: each output value is
// h0*(w0*x00 + w1*x01) + h1*(w0*x10 + w1*x11) in float32.
func ResizeBilinear(src []float32, c, h, w, oh, ow int) []float32 {
	ys, xs := linearIndices(h, oh), linearIndices(w, ow)
	out := make([]float32, c*oh*ow)
	for ch := 0; ch < c; ch++ {
		plane := src[ch*h*w : (ch+1)*h*w]
		dst := out[ch*oh*ow:]
		for oy, y := range ys {
			r0, r1 := plane[y.i0*w:], plane[y.i1*w:]
			for ox, x := range xs {
				t0 := r0[x.i0]*x.l0 + r0[x.i1]*x.l1
				t1 := r1[x.i0]*x.l0 + r1[x.i1]*x.l1
				dst[oy*ow+ox] = t0*y.l0 + t1*y.l1
			}
		}
	}
	return out
}

// ToTensor is torchvision's ToTensor of an 8-bit RGB image: CHW float32
// values v / 255.
func ToTensor(src *RGB) []float32 {
	n := src.W * src.H
	out := make([]float32, 3*n)
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			out[c*n+i] = float32(src.Pix[3*i+c]) / 255
		}
	}
	return out
}
