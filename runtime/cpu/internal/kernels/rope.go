package kernels

import "math"

// Rope rotates one head's pairs by their angles' cosines and sines, as
// ggml's compiled rope does (RopePair): pair j is (v[2j], v[2j+1]), or
// with neox (v[j], v[j+len(cos)]), for j < len(cos); the elements past
// 2*len(cos) (partial rotary) are left alone.
func Rope(v, cos, sin []float32, neox bool) {
	half := len(cos)
	v, sin = v[:2*half], sin[:half]
	if neox {
		ropeHalves(v[:half], v[half:], cos, sin)
		return
	}
	ropePairs(v, cos, sin)
}

// RopePair rotates (x0, x1) by the angle with cosine c and sine s as
// ggml's compiled rope does: x0*c - x1*s and x0*s + x1*c, each with the
// x0 product fused into the addition (GCC contracts them so; the other
// contractions disagree with llama.cpp's outputs). The float64 FMA rounds
// twice, which differs from one float32 rounding only at exact float64
// halfway points.
func RopePair(x0, x1, c, s float32) (float32, float32) {
	y0 := float32(math.FMA(float64(x0), float64(c), float64(-(x1 * s))))
	y1 := float32(math.FMA(float64(x0), float64(s), float64(x1*c)))
	return y0, y1
}

func ropePairsGo(v, cos, sin []float32) {
	v, sin = v[:2*len(cos)], sin[:len(cos)]
	for j, c := range cos {
		v[2*j], v[2*j+1] = RopePair(v[2*j], v[2*j+1], c, sin[j])
	}
}

func ropeHalvesGo(lo, hi, cos, sin []float32) {
	lo, hi, sin = lo[:len(cos)], hi[:len(cos)], sin[:len(cos)]
	for j, c := range cos {
		lo[j], hi[j] = RopePair(lo[j], hi[j], c, sin[j])
	}
}
