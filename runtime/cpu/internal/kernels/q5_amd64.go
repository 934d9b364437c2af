//go:build amd64 && !purego

package kernels

//go:noescape
func q5_0DotAVX(w []byte, xq []int8, xd []float32) float32

//go:noescape
func q5_1DotAVX(w []byte, xq []int8, xd, xs []float32) float32

//go:noescape
func q5kRows(w []byte, rb int, xq []int8, xd []float32, xs []int16, out []float32)

//go:noescape
func q5kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32

// dotQ5_0, dotQ5_1 and dotQ5K are the five-bit row dot products: AVX2
// where the CPU has it, the pure-Go twins otherwise.
func dotQ5_0(w []byte, xq []int8, xd []float32) float32 {
	if !haveAsm {
		return dotQ5_0Go(w, xq, xd)
	}
	return q5_0DotAVX(w, xq, xd)
}

func dotQ5_1(w []byte, xq []int8, xd, xs []float32) float32 {
	if !haveAsm {
		return dotQ5_1Go(w, xq, xd, xs)
	}
	return q5_1DotAVX(w, xq, xd, xs)
}

func dotQ5K(w []byte, xq []int8, xd []float32, xs []int16) float32 {
	if !haveAsm {
		return dotQ5KGo(w, xq, xd, xs)
	}
	return q5kDotAVX(w, xq, xd, xs)
}

//go:noescape
func q5_0Tile2x4(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)

// matmulQ5_0 runs 2x4 tiles (two weight rows, four activation rows) where
// the batch allows, row dot products otherwise; a tile's outputs equal the
// row kernel's bit for bit.
func matmulQ5_0(j *matmulJob, r0, r1 int) {
	if !haveAsm {
		matmulQ5_0Rows(j, r0, r1)
		return
	}
	matmulBlocks(j, r0, r1, q5_0Rows, q5_0DotAVX, q5_0Tile2x4)
}

// q5_0Rows is the row-loop form matmulBlocks takes: out[r] is the dot
// product of weight row r (rb bytes each) with one activation row.
func q5_0Rows(w []byte, rb int, xq []int8, xd []float32, out []float32) {
	for r := range out {
		out[r] = q5_0DotAVX(w[r*rb:(r+1)*rb], xq, xd)
	}
}

// q5kRowDots is q4kRowDots (matmul_amd64.go) for Q5_K rows.
func q5kRowDots(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32) {
	if !haveAsm {
		kRowDotsGo(w, rb, r0, xq, xd, xs, out, dotQ5KGo)
		return
	}
	if checkRowDots(w, rb, blockQ5_K, 16, r0, xq, xd, xs, out) {
		q5kRows(w[r0*rb:], rb, xq, xd, xs, out)
	}
}
