//go:build !amd64 || purego

package kernels

import "math"

func keyScoresF16(dst, q []float32, keys []uint16, hd int, gemm bool, _ []uint16) {
	keyScoresF16Go(dst, q, keys, hd, gemm)
}

func valuesF16(out, p []float32, vT []uint16, stride int, gemm bool, _ []uint16) {
	valuesF16Go(out, p, vT, stride, gemm)
}

func expSumGGML(x []float32, m float32) float64 { return expSumGGMLGo(x, m) }

// ToF16 converts src to half precision in dst[:len(src)], rounding to
// nearest even: the F16 cache's stores.
func ToF16(dst []uint16, src []float32) { F32ToF16Slice(dst, src) }

// ToF16Strided converts src to half precision into dst[i*stride] (i <
// len(src)), rounding to nearest even: the transposed value cache's store
// of one position.
func ToF16Strided(dst []uint16, stride int, src []float32) {
	if len(src) == 0 {
		return
	}
	dst = dst[:(len(src)-1)*stride+1]
	for i, x := range src {
		dst[i*stride] = F32ToF16(x)
	}
}

func scaleMax(x []float32, scale float32) float32 {
	return scaleMaxGo(x, scale, float32(math.Inf(-1)))
}

func scaleF32(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}
