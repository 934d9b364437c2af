package kernels

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func dotRowsGo(out, x, m []float32, stride int) {
	n := len(x)
	for j := range out {
		out[j] = dotF32Go(x, m[j*stride:j*stride+n])
	}
}

func axpyRowsGo(y, a, m []float32, stride int) {
	n := len(y)
	for j, p := range a {
		axpyGo(p, m[j*stride:j*stride+n], y)
	}
}

// Scale multiplies x by alpha in place.
func Scale(x []float32, alpha float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// Add adds x to dst[:len(x)] element-wise (residual connections). It is
// Axpy with alpha 1, whose product is exact, so each sum is the plain
// float32 dst[i]+x[i].
func Add(dst, x []float32) { Axpy(1, x, dst) }

// Mul multiplies dst[:len(x)] by x element-wise.
func Mul(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] *= v
	}
}

// RMSNorm writes x / sqrt(mean(x^2) + eps) * weight to dst; dst may be x.
// It rounds where ggml's CPU rms_norm does, so results match llama.cpp's:
// each square is a float32 product, the squares are summed in float64, the
// mean is rounded to float32, and eps, the square root and the reciprocal
// are float32 operations.
func RMSNorm(dst, x, weight []float32, eps float32) {
	n := len(x)
	dst, weight = dst[:n], weight[:n]
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	scaleMul(dst, x, weight, rmsScale(ss, n, eps))
}

// Softmax replaces x with exp(x-max)/sum in place; an empty x is left alone.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	Scale(x, 1/expSub(x, mx))
}

// ExpSub replaces x with exp(x-m) and returns the sum of the results: the
// core of a softmax whose maximum m the caller already knows (attention
// scores). Arguments below -87 give about 1e-38 rather than 0.
func ExpSub(x []float32, m float32) float32 { return expSub(x, m) }

// F16ToF32Slice converts half-precision values in src to dst[:len(src)].
func F16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = F16ToF32(h)
	}
}

// F32ToF16Slice converts float32 values in src to half precision in
// dst[:len(src)] (round to nearest even), e.g. for an f16 KV cache.
func F32ToF16Slice(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F32ToF16(v)
	}
}

// BF16ToF32Slice converts bfloat16 values in src to dst[:len(src)].
func BF16ToF32Slice(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = BF16ToF32(h)
	}
}
