//go:build amd64 && !purego

package kernels

// The F16 attention kernels on the F16 weight kernels' assembly
// (f16_amd64.s), which adds in ggml's two orders bit for bit: four key
// rows, or four value rows, against one query or probability vector.

//go:noescape
func expSumGGMLAVX(x []float32, m float32) float64

//go:noescape
func f32ToF16AVX(dst []uint16, src []float32)

// ToF16 converts src to half precision in dst[:len(src)], rounding to
// nearest even: the F16 cache's stores.
func ToF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n8 := len(src) &^ 7
	if haveAsm && n8 > 0 {
		f32ToF16AVX(dst[:n8], src[:n8])
	}
	F32ToF16Slice(dst[n8:], src[n8:])
}

func keyScoresF16(dst, q []float32, keys []uint16, hd int, gemm bool) {
	if !haveAsm {
		keyScoresF16Go(dst, q, keys, hd, gemm)
		return
	}
	j := 0
	for ; j+4 <= len(dst); j += 4 {
		rows := keys[j*hd : (j+4)*hd]
		if gemm {
			f16Gemm4x1AVX(rows, hd, q, hd, dst[j:j+4])
		} else {
			f16DotVec4AVX(rows, hd, q, hd, dst[j:j+4])
		}
	}
	if j < len(dst) {
		keyScoresF16Go(dst[j:], q, keys[j*hd:], hd, gemm)
	}
}

func valuesF16(out, p []float32, vT []uint16, stride int, gemm bool) {
	if !haveAsm {
		valuesF16Go(out, p, vT, stride, gemm)
		return
	}
	nkv := len(p)
	d := 0
	for ; d+4 <= len(out); d += 4 {
		rows := vT[d*stride : (d+3)*stride+nkv]
		if gemm {
			f16Gemm4x1AVX(rows, stride, p, nkv, out[d:d+4])
		} else {
			f16DotVec4AVX(rows, stride, p, nkv, out[d:d+4])
		}
	}
	if d < len(out) {
		valuesF16Go(out[d:], p, vT[d*stride:], stride, gemm)
	}
}

func expSumGGML(x []float32, m float32) float64 {
	if !haveAsm {
		return expSumGGMLGo(x, m)
	}
	return expSumGGMLAVX(x, m)
}
