package imgproc

import "math"

// precisionBits is PIL's fixed-point precision for 8-bit resampling
// (PRECISION_BITS, 32 - 8 - 2).
const precisionBits = 32 - 8 - 2

// coeffs is precompute_coeffs (Pillow src/libImaging/Resample.c, the same
// from 9.4 to 11.1) for a whole-image box: for each output position the
// first input index, the count, and ksize normalised weights, converted
// to PIL's fixed point as normalize_coeffs_8bpc does.
func coeffs(inSize, outSize int) (bounds []int, kk []int32, ksize int) {
	const support0 = 2.0 // bicubic
	scale := float64(float32(inSize)-0) / float64(outSize)
	filterscale := scale
	if filterscale < 1 {
		filterscale = 1
	}
	support := support0 * filterscale
	ksize = int(math.Ceil(support))*2 + 1
	bounds = make([]int, 2*outSize)
	kk = make([]int32, outSize*ksize)
	w := make([]float64, ksize)
	for xx := 0; xx < outSize; xx++ {
		center := (float64(xx) + 0.5) * scale
		ss := 1.0 / filterscale
		xmin := int(center - support + 0.5) // C's cast truncates toward zero
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > inSize {
			xmax = inSize
		}
		xmax -= xmin
		ww := 0.0
		for x := 0; x < xmax; x++ {
			w[x] = bicubic((float64(x+xmin) - center + 0.5) * ss)
			ww += w[x]
		}
		for x := 0; x < xmax; x++ {
			if ww != 0 {
				w[x] /= ww
			}
			v := w[x] * (1 << precisionBits)
			if w[x] < 0 {
				kk[xx*ksize+x] = int32(-0.5 + v)
			} else {
				kk[xx*ksize+x] = int32(0.5 + v)
			}
		}
		bounds[2*xx], bounds[2*xx+1] = xmin, xmax
	}
	return bounds, kk, ksize
}

// bicubic is PIL's bicubic_filter (a = -0.5).
func bicubic(x float64) float64 {
	const a = -0.5
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return ((a+2)*x-(a+3))*x*x + 1
	}
	if x < 2 {
		return (((x-5)*x+8)*x - 4) * a
	}
	return 0
}

// clip8 is PIL's clip8: the fixed-point sum shifted down and clamped.
func clip8(ss int32) uint8 {
	v := ss >> precisionBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// ResizeBicubic is PIL's Image.resize((w, h), Image.BICUBIC) of an RGB
// image (ImagingResampleInner with the whole image as the box and no
// reducing_gap, as torchvision's Resize calls it): a horizontal pass over
// the rows the vertical pass needs, rounded to 8 bits, then a vertical
// pass, each skipped when its size does not change.
func ResizeBicubic(src *RGB, w, h int) *RGB {
	if w == src.W && h == src.H {
		return &RGB{W: w, H: h, Pix: append([]uint8(nil), src.Pix...)}
	}
	vb, vk, vks := coeffs(src.H, h)
	cur := src
	if w != src.W {
		hb, hk, hks := coeffs(src.W, w)
		first := vb[0]
		last := vb[2*h-2] + vb[2*h-1]
		if h == src.H { // no vertical pass: every row
			first, last = 0, src.H
		}
		tmp := &RGB{W: w, H: last - first, Pix: make([]uint8, 3*w*(last-first))}
		for yy := 0; yy < tmp.H; yy++ {
			in := src.Pix[3*src.W*(yy+first):]
			out := tmp.Pix[3*w*yy:]
			for xx := 0; xx < w; xx++ {
				xmin, xmax := hb[2*xx], hb[2*xx+1]
				k := hk[xx*hks:]
				s0, s1, s2 := int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1))
				for x := 0; x < xmax; x++ {
					p := in[3*(x+xmin):]
					s0 += int32(p[0]) * k[x]
					s1 += int32(p[1]) * k[x]
					s2 += int32(p[2]) * k[x]
				}
				out[3*xx], out[3*xx+1], out[3*xx+2] = clip8(s0), clip8(s1), clip8(s2)
			}
		}
		if h != src.H {
			for i := 0; i < h; i++ {
				vb[2*i] -= first
			}
		}
		cur = tmp
	}
	if h == src.H {
		return cur
	}
	out := &RGB{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for yy := 0; yy < h; yy++ {
		ymin, ymax := vb[2*yy], vb[2*yy+1]
		k := vk[yy*vks:]
		row := out.Pix[3*w*yy:]
		for xx := 0; xx < w; xx++ {
			s0, s1, s2 := int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1))
			for y := 0; y < ymax; y++ {
				p := cur.Pix[3*(w*(y+ymin)+xx):]
				s0 += int32(p[0]) * k[y]
				s1 += int32(p[1]) * k[y]
				s2 += int32(p[2]) * k[y]
			}
			row[3*xx], row[3*xx+1], row[3*xx+2] = clip8(s0), clip8(s1), clip8(s2)
		}
	}
	return out
}

// ShortSide is torchvision's _compute_resized_output_size for Resize(size)
// with one int: the shorter side becomes size, the longer one
// int(size * long / short) in double precision, as Python computes it.
func ShortSide(w, h, size int) (int, int) {
	if w <= h {
		return size, int(float64(size) * float64(h) / float64(w))
	}
	return int(float64(size) * float64(w) / float64(h)), size
}

// CenterCrop is torchvision's F.center_crop for a crop no larger than the
// image: the offsets are int(round((side - crop) / 2.0)), Python's round
// halving to even.
func CenterCrop(src *RGB, w, h int) *RGB {
	top := int(math.RoundToEven(float64(src.H-h) / 2))
	left := int(math.RoundToEven(float64(src.W-w) / 2))
	out := &RGB{W: w, H: h, Pix: make([]uint8, 3*w*h)}
	for y := 0; y < h; y++ {
		copy(out.Pix[3*w*y:3*w*(y+1)], src.Pix[3*(src.W*(y+top)+left):])
	}
	return out
}

// Normalize is ToTensor then Normalize(mean, std) in float32, as torch
// computes them: (v / 255 - mean) / std per channel, channel-major (CHW).
func Normalize(src *RGB, mean, std [3]float32) []float32 {
	n := src.W * src.H
	out := make([]float32, 3*n)
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			v := float32(src.Pix[3*i+c]) / 255
			out[c*n+i] = (v - mean[c]) / std[c]
		}
	}
	return out
}
