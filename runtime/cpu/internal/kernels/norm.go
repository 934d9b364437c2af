package kernels

import "math"

// RMSNormRows applies RMSNorm(dst row, x row, weight, eps) to every row of
// x, rows len(weight) long, into dst: the same bits as one RMSNorm call per
// row. ggml sums a row's squares one after the other in float64, a chain
// of dependent additions as long as the row; four rows' chains run side by
// side here, which a batched step's norms (one row per token) spend most of
// their time waiting on otherwise.
func RMSNormRows(dst, x, weight []float32, eps float32) {
	n := len(weight)
	if n == 0 {
		return
	}
	rows := len(x) / n
	dst = dst[:rows*n]
	r := 0
	for ; r+4 <= rows; r += 4 {
		x4 := x[r*n : (r+4)*n]
		s0, s1, s2, s3 := sumSquares4(x4[:n], x4[n:2*n], x4[2*n:3*n], x4[3*n:])
		for k, ss := range [4]float64{s0, s1, s2, s3} {
			o := (r + k) * n
			scaleMul(dst[o:o+n], x[o:o+n], weight, rmsScale(ss, n, eps))
		}
	}
	for ; r < rows; r++ {
		RMSNorm(dst[r*n:(r+1)*n], x[r*n:(r+1)*n], weight, eps)
	}
}

// sumSquares4 returns ggml's sum of squares of each of four rows of equal
// length: float32 squares added in order in float64, each row its own
// chain, the four interleaved.
func sumSquares4(x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float64) {
	n := len(x0)
	x1, x2, x3 = x1[:n], x2[:n], x3[:n]
	for i, v := range x0 {
		// The conversions round each square to float32 and forbid fusing
		// it into the addition.
		s0 += float64(v * v)
		s1 += float64(x1[i] * x1[i])
		s2 += float64(x2[i] * x2[i])
		s3 += float64(x3[i] * x3[i])
	}
	return s0, s1, s2, s3
}

// rmsScale is ggml's 1/sqrtf(mean+eps) for a float64 sum of n squares:
// the mean rounded to float32, the rest float32 operations.
func rmsScale(ss float64, n int, eps float32) float32 {
	mean := float32(ss / float64(n))
	// The float64 square root of a float32, rounded to float32, is the
	// correctly rounded float32 square root (sqrtf).
	return 1 / float32(math.Sqrt(float64(mean+eps)))
}

// scaleMulGo sets dst[i] = x[i]*a*w[i], two float32 roundings: ggml's
// scaled row times the norm weight.
func scaleMulGo(dst, x, w []float32, a float32) {
	dst, w = dst[:len(x)], w[:len(x)]
	for i, v := range x {
		dst[i] = v * a * w[i]
	}
}
