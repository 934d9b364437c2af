package kernels

// BF16 products in the order of the fixtures' llama.cpp build (AVX-512 with
// AVX512_BF16). The activations are rounded to BF16 first (BF16 is ggml's
// vec_dot type for BF16), so every product is exact in float32. VDPBF16PS,
// which both of ggml's paths use, gives each of its 16 float32 lanes a pair
// of elements (2j, 2j+1) of a 32-element run and adds the odd product
// first, then the even one, each addition rounded (checked on the hardware
// the fixtures come from):
//
//   - ggml_vec_dot_bf16 (one activation row, and shapes tinyBLAS refuses):
//     two such accumulators over each 64 elements (the first and second
//     32), each reduced as _mm512_reduce_add_ps does and added in float64,
//     then the elements past the last 64 one by one in float64.
//   - tinyBLAS (batches of two or more, cols a multiple of 32, rows of 4):
//     one accumulator over every 32 elements, reduced the same way.
//
// VDPBF16PS also flushes subnormal inputs and results to zero; we do not
// (bfloat16 subnormals are below 1.2e-38 and do not occur in practice).

// bf16Gemm reports whether ggml would run this product through tinyBLAS.
func bf16Gemm(rows, cols, batch int) bool {
	return batch >= 2 && cols%32 == 0 && rows%4 == 0
}

// bf16Pairs adds the 32 products of w[:32] and x[:32] into acc the way
// VDPBF16PS does: lane j gets the product of element 2j+1, then 2j.
func bf16Pairs(acc *[16]float32, w []uint16, x []float32) {
	w, x = w[:32], x[:32]
	for j := range acc {
		po := float32(BF16ToF32(w[2*j+1]) * x[2*j+1])
		pe := float32(BF16ToF32(w[2*j]) * x[2*j])
		acc[j] = (acc[j] + po) + pe
	}
}

// dotBF16VecGo is ggml_vec_dot_bf16's order (see the file comment).
func dotBF16VecGo(w []uint16, x []float32) float32 {
	n := len(w)
	x = x[:n]
	np := n &^ 63
	var c1, c2 [16]float32
	for i := 0; i < np; i += 64 {
		bf16Pairs(&c1, w[i:], x[i:])
		bf16Pairs(&c2, w[i+32:], x[i+32:])
	}
	s := float64(reduce16(&c1))
	s += float64(reduce16(&c2))
	for i := np; i < n; i++ {
		s += float64(float32(BF16ToF32(w[i]) * x[i]))
	}
	return float32(s)
}

// dotBF16GemmGo is tinyBLAS's order; len(w) must be a multiple of 32.
func dotBF16GemmGo(w []uint16, x []float32) float32 {
	var acc [16]float32
	for i := 0; i+32 <= len(w); i += 32 {
		bf16Pairs(&acc, w[i:], x[i:])
	}
	return reduce16(&acc)
}

// matmulBF16Go is the pure-Go BF16 product of rows [r0,r1) with the batch
// in ggml's order.
func matmulBF16Go(j *matmulJob, r0, r1 int) {
	w := j.w
	dot := dotBF16VecGo
	if bf16Gemm(w.Rows, w.Cols, j.batch) {
		dot = dotBF16GemmGo
	}
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		return dot(bytesU16(row), j.x[b*w.Cols:(b+1)*w.Cols])
	})
}
