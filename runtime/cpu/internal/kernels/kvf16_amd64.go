//go:build amd64 && !purego

package kernels

import "math"

// The F16 attention kernels on the F16 weight kernels' assembly
// (f16_amd64.s), which adds in ggml's two orders bit for bit: four key
// rows, or four value rows, against one query or probability vector.

//go:noescape
func expSumGGMLAVX(x []float32, m float32) float64

//go:noescape
func f32ToF16AVX(dst []uint16, src []float32)

//go:noescape
func f32ToF16StridedAVX(dst []uint16, stride int, src []float32)

//go:noescape
func scaleMaxAVX(x []float32, scale float32) float32

//go:noescape
func scaleAVX(x []float32, a float32)

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

// ToF16Strided converts src to half precision into dst[i*stride] (i <
// len(src)), rounding to nearest even: the transposed value cache's store
// of one position, without a conversion buffer and a scatter loop.
func ToF16Strided(dst []uint16, stride int, src []float32) {
	if len(src) == 0 {
		return
	}
	dst = dst[:(len(src)-1)*stride+1]
	n8 := len(src) &^ 7
	if haveAsm && n8 > 0 {
		f32ToF16StridedAVX(dst, stride, src[:n8])
	}
	for i := n8; i < len(src); i++ {
		dst[i*stride] = F32ToF16(src[i])
	}
}

func keyScoresF16(dst, q []float32, keys []uint16, hd int, gemm bool, next []uint16) {
	if !haveAsm {
		keyScoresF16Go(dst, q, keys, hd, gemm)
		return
	}
	// All tiles in one call: a tile of hd-long keys is a few vector steps,
	// less than the call and the re-slicing cost.
	j := len(dst) &^ 3
	if j > 0 && gemm {
		f16Gemm4x1LoopAVX(keys[:j*hd], hd, 4*hd, j/4, q[:hd], hd, dst[:j], next)
	} else if j > 0 {
		f16DotVec4LoopAVX(keys[:j*hd], hd, 4*hd, j/4, q[:hd], hd, dst[:j])
	}
	if j < len(dst) {
		keyScoresF16Go(dst[j:], q, keys[j*hd:], hd, gemm)
	}
}

func valuesF16(out, p []float32, vT []uint16, stride int, gemm bool, next []uint16) {
	if !haveAsm {
		valuesF16Go(out, p, vT, stride, gemm)
		return
	}
	nkv := len(p)
	d := len(out) &^ 3
	// Direct calls: through a func value Go adds an ABI wrapper per call.
	if d > 0 && gemm {
		f16Gemm4x1LoopAVX(vT[:(d-1)*stride+nkv], stride, 4*stride, d/4, p, nkv, out[:d], next)
	} else if d > 0 {
		f16DotVec4LoopAVX(vT[:(d-1)*stride+nkv], stride, 4*stride, d/4, p, nkv, out[:d])
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

func scaleMax(x []float32, scale float32) float32 {
	mx := float32(math.Inf(-1))
	n8 := 0
	if haveAsm {
		n8 = len(x) &^ 7
	}
	if n8 > 0 {
		mx = scaleMaxAVX(x[:n8], scale)
	}
	return scaleMaxGo(x[n8:], scale, mx)
}

func scaleF32(x []float32, a float32) {
	n8 := 0
	if haveAsm {
		n8 = len(x) &^ 7
	}
	if n8 > 0 {
		scaleAVX(x[:n8], a)
	}
	for i := range x[n8:] {
		x[n8+i] *= a
	}
}
