package kernels

// F16 products in the order of ggml's AVX-512 CPU backend (llama.cpp
// b4747), the build our cross-check fixtures come from. Both operands are
// half-precision values (the activations are rounded to F16 first, as ggml
// converts them to the F16 vec_dot type), so every product is exact in
// float32 and a fused multiply-add gives the same sum as a multiply and an
// add: only the order of the additions decides the result. ggml has two:
//
//   - ggml_vec_dot_f16 (one activation row, and every product whose shape
//     the tiled path refuses): 64 float32 lanes, lane l summing elements
//     l, l+64, l+128, ... of the first cols&^63; the lanes folded in halves
//     (l+32 onto l, then l+16 onto l) and the remaining 16 reduced as
//     _mm512_reduce_add_ps does; the elements past the last 64 added one
//     by one to that sum in float64, the result rounded to float32 last.
//   - llamafile's tinyBLAS (batches of two or more rows, when cols is a
//     multiple of 16 and the weight's rows a multiple of 4): 16 lanes, lane
//     l summing elements l, l+16, ..., reduced as _mm512_reduce_add_ps does.
//
// Other orders are within float rounding of these, but the rounding
// differences grow through the layers: before this order the synthetic
// tiny F16 model was 1.8e-5 off llama.cpp's log-probabilities and
// stories260K-f16 1.5e-3.

const (
	// f16VecLanes is GGML_F16_STEP on AVX-512: the lanes of ggml_vec_dot_f16.
	f16VecLanes = 64
	// f16GemmLanes is tinyBLAS's KN for F16 on AVX-512.
	f16GemmLanes = 16
)

// f16Gemm reports whether ggml would run this product through tinyBLAS
// (16-lane order) rather than ggml_vec_dot_f16 (64-lane order).
func f16Gemm(rows, cols, batch int) bool {
	return batch >= 2 && cols%f16GemmLanes == 0 && rows%4 == 0
}

// reduce16 sums 16 lanes as GCC's _mm512_reduce_add_ps does: the upper
// eight onto the lower eight, then the upper four of those onto the lower
// four, then lanes 2,3 onto 0,1, then lane 1 onto lane 0.
func reduce16(l *[16]float32) float32 {
	var c [8]float32
	for i := range c {
		c[i] = l[i] + l[i+8]
	}
	d0, d1, d2, d3 := c[0]+c[4], c[1]+c[5], c[2]+c[6], c[3]+c[7]
	return (d0 + d2) + (d1 + d3)
}

// dotF16VecGo is ggml_vec_dot_f16's order (see the file comment).
func dotF16VecGo(w []uint16, x []float32) float32 {
	n := len(w)
	x = x[:n]
	np := n &^ (f16VecLanes - 1)
	var s float64
	if np > 0 {
		var acc [f16VecLanes]float32
		for i := 0; i < np; i += f16VecLanes {
			wi, xi := w[i:i+f16VecLanes], x[i:i+f16VecLanes]
			for l := range acc {
				acc[l] += float32(F16ToF32(wi[l]) * xi[l])
			}
		}
		s = float64(f16Fold64(&acc))
	}
	for i := np; i < n; i++ {
		s += float64(float32(F16ToF32(w[i]) * x[i]))
	}
	return float32(s)
}

// f16Fold64 folds 64 lanes to 16 the way GGML_F32Cx16_REDUCE does (the
// upper half onto the lower half, twice) and reduces those.
func f16Fold64(acc *[f16VecLanes]float32) float32 {
	var l16 [16]float32
	for l := range l16 {
		l16[l] = (acc[l] + acc[l+32]) + (acc[l+16] + acc[l+48])
	}
	return reduce16(&l16)
}

// dotF16GemmGo is tinyBLAS's order; len(w) must be a multiple of 16.
func dotF16GemmGo(w []uint16, x []float32) float32 {
	n := len(w)
	x = x[:n]
	var acc [f16GemmLanes]float32
	for i := 0; i+f16GemmLanes <= n; i += f16GemmLanes {
		wi, xi := w[i:i+f16GemmLanes], x[i:i+f16GemmLanes]
		for l := range acc {
			acc[l] += float32(F16ToF32(wi[l]) * xi[l])
		}
	}
	return reduce16(&acc)
}

// matmulF16Go is the pure-Go F16 product of rows [r0,r1) with the batch in
// ggml's order.
func matmulF16Go(j *matmulJob, r0, r1 int) {
	w := j.w
	dot := dotF16VecGo
	if f16Gemm(w.Rows, w.Cols, j.batch) {
		dot = dotF16GemmGo
	}
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		return dot(bytesU16(row), j.x[b*w.Cols:(b+1)*w.Cols])
	})
}
