//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// haveAsm reports whether the AVX2/FMA assembly runs on this machine; it is
// fixed at start-up.
var haveAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasAVX

// haveVNNI reports whether the AVX512-VNNI Q8_0 tiles run here (x/sys/cpu
// also checks that the OS saves the AVX-512 state).
var haveVNNI = haveAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// have512 reports whether the AVX-512 F16 and F32 tiles (dense512_amd64.s)
// run here. The F16 tiles give the AVX2 tiles' results; F32 products add in
// the orders of ggml's AVX-512 build (tiles of 16 lanes, f32VecRows' 64 for
// one activation row) rather than its AVX2 build's (8 and 32), as ggml
// would on this CPU. A variable so the benchmarks can compare the two.
var have512 = haveAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func f16Tile512x6(w []uint16, ws int, x []float32, xs int, n int, out []float32, os int)

//go:noescape
func f16Tile512x1(w []uint16, ws int, x []float32, xs int, n int, out []float32, os int)

//go:noescape
func f32Tile512x6(w []float32, ws int, x []float32, xs int, n int, out []float32, os int)

//go:noescape
func f32Tile512x1(w []float32, ws int, x []float32, xs int, n int, out []float32, os int)

//go:noescape
func q8Tile4x8VNNI(w []byte, ws int, wc []int16, xp []int8, xd []float32, nb int, out []float32, os int)

//go:noescape
func q8Tile4x4VNNI(w []byte, ws int, xq []int8, xs int, xc []int32, xd8 []float32, nb int, out []float32, os int, n int)

//go:noescape
func dotF32AVX(a, b []float32) float32

//go:noescape
func axpyF32AVX(alpha float32, x, y []float32)

//go:noescape
func f32Tile4x1(w []float32, ws int, x []float32, n int, out []float32)

//go:noescape
func f32VecRows(w []float32, ws int, x []float32, n int, out []float32)

//go:noescape
func dotF32Rows(w []float32, stride int, x []float32, n int, out []float32)

//go:noescape
func bf16DotVecAVX(w []uint16, x []uint16) float32

//go:noescape
func bf16DotVec4AVX(w []uint16, ws int, x []uint16, n int, out []float32)

//go:noescape
func bf16Gemm4x1AVX(w []uint16, ws int, x []uint16, n int, out []float32)

//go:noescape
func q8Rows(w []byte, rb int, xq []int8, xd []float32, out []float32)

//go:noescape
func q4Rows(w []byte, rb int, xq []int8, xd []float32, out []float32)

//go:noescape
func axpyRowsAVX(y []float32, a []float32, m []float32, stride int)

//go:noescape
func f32Tile1x8(w []float32, x []float32, xs int, n int, out []float32, os int)

//go:noescape
func f32Tile4x3(w []float32, ws int, x []float32, xs int, n int, out []float32, os int)

// Dot returns the dot product of a and b[:len(a)].
func Dot(a, b []float32) float32 {
	if !haveAsm || len(a) < 8 {
		return dotF32Go(a, b)
	}
	n8 := len(a) &^ 7
	b = b[:len(a)]
	s := dotF32AVX(a[:n8], b[:n8])
	if n8 < len(a) {
		s += dotF32Go(a[n8:], b[n8:])
	}
	return s
}

// Axpy adds alpha*x to y[:len(x)].
func Axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	if !haveAsm {
		axpyGo(alpha, x, y)
		return
	}
	n8 := len(x) &^ 7
	if n8 > 0 {
		axpyF32AVX(alpha, x[:n8], y[:n8])
	}
	axpyGo(alpha, x[n8:], y[n8:])
}

//go:noescape
func f16DotVecAVX(w []uint16, x []float32) float32

//go:noescape
func roundF16AVX(dst, src []float32)

//go:noescape
func f16VecRows(w []uint16, ws int, x []float32, n int, out []float32)

// f16DotVec4LoopAVX and f16Gemm4x1LoopAVX run groups tiles of four rows,
// tile g's rows from w[g*gs], ws apart, into out[4g:4g+4] (f16_amd64.s):
// ggml_vec_dot_f16's order and tinyBLAS's 16-lane order.
//
//go:noescape
func f16DotVec4LoopAVX(w []uint16, ws, gs, groups int, x []float32, n int, out []float32)

//go:noescape
func f16Gemm4x1LoopAVX(w []uint16, ws, gs, groups int, x []float32, n int, out []float32, next []uint16)

//go:noescape
func f16Gemm4x3AVX(w []uint16, ws int, x []float32, xs int, n int, out []float32, os int)

//go:noescape
func q4DotAVX(w []byte, xq []int8, xd []float32) float32

//go:noescape
func q4Tile2x4(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)

//go:noescape
func expSubAVX(x []float32, m float32) float32

//go:noescape
func swigluAVX(gate, up []float32)

//go:noescape
func siluAVX(x []float32)

//go:noescape
func q4kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32

//go:noescape
func q6kDotAVX(w []byte, xq []int8, xd []float32, xs []int16) float32

//go:noescape
func quantizeQ8AVX(x []float32, qs []int8, d, d8 []float32)

//go:noescape
func q8DotAVX(w []byte, xq []int8, xd []float32) float32

//go:noescape
func q8Tile2x4(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)

// DotRows sets out[j] = Dot(x, m[j*stride:j*stride+len(x)]) for j <
// len(out): the scores of one query against a run of cached keys in one call.
func DotRows(out, x, m []float32, stride int) {
	n := len(x)
	if len(out) == 0 {
		return
	}
	if n == 0 {
		clear(out)
		return
	}
	_ = m[(len(out)-1)*stride+n-1] // bounds: the assembly does not check
	n8 := n &^ 7
	if haveAsm && n8 > 0 {
		dotF32Rows(m, stride, x, n8, out)
		if n8 < n {
			for j := range out {
				out[j] += dotF32Go(x[n8:], m[j*stride+n8:j*stride+n])
			}
		}
		return
	}
	dotRowsGo(out, x, m, stride)
}

// AxpyRows adds sum_j a[j]*m[j*stride:j*stride+len(y)] to y: attention's
// probability-weighted sum of cached value rows in one call.
func AxpyRows(y, a, m []float32, stride int) {
	n := len(y)
	if len(a) == 0 || n == 0 {
		return
	}
	_ = m[(len(a)-1)*stride+n-1] // bounds: the assembly does not check
	n8 := n &^ 7
	if haveAsm && n8 > 0 {
		axpyRowsAVX(y[:n8], a, m, stride)
		if n8 < n {
			for j, p := range a {
				axpyGo(p, m[j*stride+n8:j*stride+n], y[n8:])
			}
		}
		return
	}
	axpyRowsGo(y, a, m, stride)
}

func expSub(x []float32, m float32) float32 {
	n8 := len(x) &^ 7
	if !haveAsm || n8 == 0 {
		return expSubGo(x, m)
	}
	return expSubAVX(x[:n8], m) + expSubGo(x[n8:], m)
}

// SwiGLU replaces gate with silu(gate)*up element-wise (the gated
// feed-forward of llama-style models).
func SwiGLU(gate, up []float32) {
	up = up[:len(gate)]
	n8 := len(gate) &^ 7
	if haveAsm && n8 > 0 {
		swigluAVX(gate[:n8], up[:n8])
	}
	swigluGo(gate[n8:], up[n8:])
}

// SiLU replaces x with x*sigmoid(x) in place.
func SiLU(x []float32) {
	n8 := len(x) &^ 7
	if haveAsm && n8 > 0 {
		siluAVX(x[:n8])
	}
	siluGo(x[n8:])
}

func quantizeQ8(x []float32, qs []int8, d, d8 []float32) {
	if !haveAsm {
		quantizeQ8Go(x, qs, d, d8)
		return
	}
	nb := len(x) / 32
	quantizeQ8AVX(x[:nb*32], qs[:nb*32], d[:nb], d8[:nb*8])
}

// matmulF32 runs 4-row tiles: 4x3 (rows x batch) register tiles for the
// batch, 4x1 for the rest, plain dot products for leftover rows; columns
// beyond a multiple of 8 are added in Go.
func matmulF32(j *matmulJob, r0, r1 int) {
	if !haveAsm {
		matmulF32Go(j, r0, r1)
		return
	}
	cols, rows, batch := j.w.Cols, j.w.Rows, j.batch
	w := bytesF32(j.w.Data)[:rows*cols]
	x, out := j.x[:batch*cols], j.out
	n8 := cols &^ 7
	r := r0
	if n8 > 0 && batch >= 8 && batch < f32RowTileMaxBatch {
		matmulF32Rows1x8(j, r0, r1)
		return
	}
	// A single activation row streams the weight rows one after another:
	// one sequential stream per thread is what the hardware prefetchers
	// follow best once the matrix is larger than the caches (measured:
	// about 1.4x the throughput of four interleaved rows from DRAM).
	if have512 && batch > 1 && cols%16 == 0 {
		// tinyBLAS's tiles, as ggml's AVX-512 build runs them.
		r = tiles512(w, x, cols, rows, r, r1, batch, out, f32Tile512x6, f32Tile512x1)
	}
	if n8 > 0 && batch > 1 {
		for ; r+4 <= r1; r += 4 {
			wr := w[r*cols : (r+4)*cols]
			b := 0
			for ; b+3 <= batch; b += 3 {
				f32Tile4x3(wr, cols, x[b*cols:(b+3)*cols], cols, n8, out[b*rows+r:(b+2)*rows+r+4], rows)
			}
			for ; b < batch; b++ {
				f32Tile4x1(wr, cols, x[b*cols:(b+1)*cols], n8, out[b*rows+r:b*rows+r+4])
			}
			if n8 < cols {
				for rr := r; rr < r+4; rr++ {
					for b := 0; b < batch; b++ {
						out[b*rows+rr] += dotF32Go(w[rr*cols+n8:(rr+1)*cols], x[b*cols+n8:(b+1)*cols])
					}
				}
			}
		}
	}
	if r == r1 {
		return
	}
	for b := 0; b < batch; b++ {
		xb := x[b*cols : (b+1)*cols]
		ob := out[b*rows+r : b*rows+r1]
		switch {
		case have512 && cols%64 == 0:
			// ggml_vec_dot_f32's order on AVX-512 CPUs, as ggml runs there.
			f32VecRows(w[r*cols:r1*cols], cols, xb, cols, ob)
		case n8 > 0:
			dotF32Rows(w[r*cols:r1*cols], cols, xb, n8, ob)
		default:
			clear(ob)
		}
		if n8 < cols {
			for rr := r; rr < r1; rr++ {
				ob[rr-r] += dotF32Go(w[rr*cols+n8:(rr+1)*cols], xb[n8:])
			}
		}
	}
}

// blockDot is a one-row block-quantized dot product; blockTile its 2x4
// (rows x batch) register tile.
type (
	blockRows func(w []byte, rb int, xq []int8, xd []float32, out []float32)
	blockDot  func(w []byte, xq []int8, xd []float32) float32
	blockTile func(w []byte, ws int, xq []int8, xs int, xd8 []float32, nb int, out []float32, os int)
)

// matmulQ8_0 and matmulQ4_0 run 2x4 tiles when the batch allows, single
// row-by-activation dot products otherwise.
func matmulQ8_0(j *matmulJob, r0, r1 int) {
	if !haveAsm {
		matmulQ8_0Go(j, r0, r1)
		return
	}
	if useVNNI(j.batch) {
		matmulQ8_0VNNI(j, r0, r1)
		return
	}
	matmulBlocks(j, r0, r1, q8Rows, q8DotAVX, q8Tile2x4)
}

func matmulQ4_0(j *matmulJob, r0, r1 int) {
	if !haveAsm {
		matmulQ4_0Go(j, r0, r1)
		return
	}
	matmulBlocks(j, r0, r1, q4Rows, q4DotAVX, q4Tile2x4)
}

func matmulBlocks(j *matmulJob, r0, r1 int, rowsDot blockRows, dot blockDot, tile blockTile) {
	cols, rows, batch, rb := j.w.Cols, j.w.Rows, j.batch, j.rowBytes
	nb := cols / 32
	data, xq, xd, xd8, out := j.w.Data, j.xq, j.xd, j.xd8, j.out
	r := r0
	if batch >= 4 {
		for ; r+2 <= r1; r += 2 {
			wr := data[r*rb : (r+2)*rb]
			b := 0
			for ; b+4 <= batch; b += 4 {
				tile(wr, rb, xq[b*cols:(b+4)*cols], cols, xd8[b*nb*8:(b+4)*nb*8], nb, out[b*rows+r:(b+3)*rows+r+2], rows)
			}
			for ; b < batch; b++ {
				for rr := r; rr < r+2; rr++ {
					out[b*rows+rr] = dot(data[rr*rb:(rr+1)*rb], xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb])
				}
			}
		}
	}
	if r < r1 {
		for b := 0; b < batch; b++ {
			rowsDot(data[r*rb:r1*rb], rb, xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb], out[b*rows+r:b*rows+r1])
		}
	}
}

// matmulF16 adds in ggml's order (f16order.go): tinyBLAS's 16 lanes in 4x3
// and 4x1 register tiles where ggml takes that path, ggml_vec_dot_f16's 64
// lanes four rows at a time otherwise.
func matmulF16(j *matmulJob, r0, r1 int) {
	if !haveAsm {
		matmulF16Go(j, r0, r1)
		return
	}
	cols, rows, batch := j.w.Cols, j.w.Rows, j.batch
	w := bytesU16(j.w.Data)[:rows*cols]
	x, out := j.x[:batch*cols], j.out
	if f16Gemm(rows, cols, batch) {
		r := r0
		if have512 {
			r = tiles512(w, x, cols, rows, r, r1, batch, out, f16Tile512x6, f16Tile512x1)
		}
		for ; r+4 <= r1; r += 4 {
			wr := w[r*cols : (r+4)*cols]
			b := 0
			for ; b+3 <= batch; b += 3 {
				f16Gemm4x3AVX(wr, cols, x[b*cols:(b+3)*cols], cols, cols, out[b*rows+r:(b+2)*rows+r+4], rows)
			}
			for ; b < batch; b++ {
				f16Gemm4x1LoopAVX(wr, cols, 4*cols, 1, x[b*cols:(b+1)*cols], cols, out[b*rows+r:b*rows+r+4], nil)
			}
		}
		for ; r < r1; r++ { // rows%4 == 0 makes r1-r0 a multiple of 4; kept for safety
			for b := 0; b < batch; b++ {
				out[b*rows+r] = dotF16GemmGo(w[r*cols:(r+1)*cols], x[b*cols:(b+1)*cols])
			}
		}
		return
	}
	for b := 0; b < batch; b++ {
		xb := x[b*cols : (b+1)*cols]
		if cols%f16VecLanes == 0 {
			f16VecRows(w[r0*cols:r1*cols], cols, xb, cols, out[b*rows+r0:b*rows+r1])
			continue
		}
		// Every whole tile of four rows in one call.
		tiles := (r1 - r0) / 4
		r := r0 + 4*tiles
		f16DotVec4LoopAVX(w[r0*cols:r*cols], cols, 4*cols, tiles, xb, cols, out[b*rows+r0:b*rows+r])
		for ; r < r1; r++ {
			out[b*rows+r] = f16DotVecAVX(w[r*cols:(r+1)*cols], xb)
		}
	}
}

// matmulBF16 adds in ggml's order (bf16order.go) on the bfloat16 copy of
// the activations: tinyBLAS's in 4x1 register tiles where ggml takes that
// path, ggml_vec_dot_bf16's four rows at a time otherwise.
func matmulBF16(j *matmulJob, r0, r1 int) {
	if !haveAsm {
		matmulBF16Go(j, r0, r1)
		return
	}
	cols, rows, batch := j.w.Cols, j.w.Rows, j.batch
	w := bytesU16(j.w.Data)[:rows*cols]
	x, out := j.xh[:batch*cols], j.out
	r := r0
	if bf16Gemm(rows, cols, batch) {
		if haveBF16Tiles {
			r = tiles512(w, x, cols, rows, r, r1, batch, out, bf16Tile512x6, bf16Tile512x1)
		}
		for ; r+4 <= r1; r += 4 {
			for b := 0; b < batch; b++ {
				bf16Gemm4x1AVX(w[r*cols:(r+4)*cols], cols, x[b*cols:(b+1)*cols], cols, out[b*rows+r:b*rows+r+4])
			}
		}
		for ; r < r1; r++ { // rows%4 == 0 makes r1-r0 a multiple of 4; kept for safety
			for b := 0; b < batch; b++ {
				out[b*rows+r] = dotBF16GemmGo(w[r*cols:(r+1)*cols], j.x[b*cols:(b+1)*cols])
			}
		}
		return
	}
	for b := 0; b < batch; b++ {
		xb := x[b*cols : (b+1)*cols]
		r := r0
		for ; r+4 <= r1; r += 4 {
			bf16DotVec4AVX(w[r*cols:(r+4)*cols], cols, xb, cols, out[b*rows+r:b*rows+r+4])
		}
		for ; r < r1; r++ {
			out[b*rows+r] = bf16DotVecAVX(w[r*cols:(r+1)*cols], xb)
		}
	}
}

// dotQ4K and dotQ6K are the K-quant row dot products against Q8_K
// activations; xs is the 16-code sums for Q4_K and the pair sums
// (q6kPairSums) for Q6_K.
func dotQ4K(w []byte, xq []int8, xd []float32, xs []int16) float32 {
	if !haveAsm {
		return dotQ4KGo(w, xq, xd, xs)
	}
	return q4kDotAVX(w, xq, xd, xs)
}

func dotQ6K(w []byte, xq []int8, xd []float32, xs []int16) float32 {
	if !haveAsm {
		return dotQ6KGo(w, xq, xd)
	}
	_ = xs[128*len(xd)-1] // the assembly reads the pair sums unchecked
	return q6kDotAVX(w, xq, xd, xs)
}

// useVNNI reports whether a Q8_0 product of this batch runs the VNNI tiles
// (which need the activations' offset corrections, see q8CorrGo). A single
// activation row stays on q8Rows: one sequential stream of weights, and no
// other row to share a tile's per-block set-up with (measured in the whole
// model: the one-row VNNI tile decodes about 10% fewer tokens per
// CPU-second). Its float order differs from the tiles' in the last bits.
func useVNNI(batch int) bool { return haveVNNI && batch >= 2 }

// matmulQ8_0VNNI runs 4x4 VNNI tiles: each 4-row weight tile meets the
// batch four rows at a time, straight from the file's Q8_0 blocks, the last
// group with the one to three rows left, so each weight block is read once
// whatever the batch.
func matmulQ8_0VNNI(j *matmulJob, r0, r1 int) {
	if q8Wide(j.batch) {
		matmulQ8_0Wide(j, r0, r1)
		return
	}
	cols, rows, batch, rb := j.w.Cols, j.w.Rows, j.batch, j.rowBytes
	nb := cols / 32
	data, xq, xc, xd, xd8, out := j.w.Data, j.xq, j.xc, j.xd, j.xd8, j.out
	r := r0
	for ; r+4 <= r1; r += 4 {
		wr := data[r*rb : (r+4)*rb]
		for b := 0; b < batch; b += 4 {
			n := min(4, batch-b)
			q8Tile4x4VNNI(wr, rb, xq[b*cols:(b+n)*cols], cols, xc[b*cols/4:(b+n)*cols/4], xd8[b*nb*8:(b+n)*nb*8], nb, out[b*rows+r:(b+n-1)*rows+r+4], rows, n)
		}
	}
	if r < r1 {
		for b := 0; b < batch; b++ {
			q8Rows(data[r*rb:r1*rb], rb, xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb], out[b*rows+r:b*rows+r1])
		}
	}
}

// q8WideMinBatch is the batch from which the 4x8 VNNI tiles (activation
// rows in lanes, no horizontal sums) beat the padded 4x4 ones.
const q8WideMinBatch = 5

// q8Wide reports whether a Q8_0 product of this batch runs the 4x8 tiles
// on activations packed by q8PackGo.
func q8Wide(batch int) bool { return haveVNNI && batch >= q8WideMinBatch }

// matmulQ8_0Wide runs 4x8 VNNI tiles: each 4-row weight tile meets the
// packed activations eight rows at a time; a last group padded with zero
// rows stores only its real rows. Leftover weight rows (fewer than four)
// take q8Rows per activation row.
func matmulQ8_0Wide(j *matmulJob, r0, r1 int) {
	cols, rows, batch, rb := j.w.Cols, j.w.Rows, j.batch, j.rowBytes
	nb := cols / 32
	data, corr, xp, xpd, out := j.w.Data, j.wc, j.xp, j.xpd, j.out
	gs := q8PackScales * nb // scales per group
	var tail [32]float32
	r := r0
	for ; r+4 <= r1; r += 4 {
		wr, wc := data[r*rb:(r+4)*rb], corr[r*nb:(r+4)*nb] // tile r/4: nb*4 sums
		for b := 0; b < batch; b += 8 {
			g := b / 8
			xg, dg := xp[g*q8PackRows*cols:(g+1)*q8PackRows*cols], xpd[g*gs:(g+1)*gs]
			if b+8 <= batch {
				q8Tile4x8VNNI(wr, rb, wc, xg, dg, nb, out[b*rows+r:(b+7)*rows+r+4], rows)
				continue
			}
			q8Tile4x8VNNI(wr, rb, wc, xg, dg, nb, tail[:], 4)
			for bb := b; bb < batch; bb++ {
				copy(out[bb*rows+r:bb*rows+r+4], tail[(bb-b)*4:(bb-b)*4+4])
			}
		}
	}
	if r < r1 {
		xq, xd := j.xq, j.xd
		for b := 0; b < batch; b++ {
			q8Rows(data[r*rb:r1*rb], rb, xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb], out[b*rows+r:b*rows+r1])
		}
	}
}

// f32RowTileMaxBatch is the batch from which 4x3 tiles beat 1x8 row tiles
// (measured per CPU-second: 1x8 reads a 32000x288 matrix 1.5x faster at
// batch 8, 4x3 is 2x faster from batch 16 on).
const f32RowTileMaxBatch = 16

// matmulF32Rows1x8 streams each weight row once against eight activation
// rows at a time (batched decode): one sequential stream of weights.
func matmulF32Rows1x8(j *matmulJob, r0, r1 int) {
	cols, rows, batch := j.w.Cols, j.w.Rows, j.batch
	w := bytesF32(j.w.Data)[:rows*cols]
	x, out := j.x[:batch*cols], j.out
	n8 := cols &^ 7
	for r := r0; r < r1; r++ {
		wr := w[r*cols : (r+1)*cols]
		b := 0
		for ; b+8 <= batch; b += 8 {
			f32Tile1x8(wr, x[b*cols:(b+8)*cols], cols, n8, out[b*rows+r:(b+7)*rows+r+1], rows)
			if n8 < cols {
				for bb := b; bb < b+8; bb++ {
					out[bb*rows+r] += dotF32Go(wr[n8:], x[bb*cols+n8:(bb+1)*cols])
				}
			}
		}
		for ; b < batch; b++ {
			out[b*rows+r] = Dot(wr, x[b*cols:(b+1)*cols])
		}
	}
}

// roundToF16 writes src rounded to half precision (ties to even) and widened
// back to dst: eight lanes at a time with F16C, the tail in Go.
func roundToF16(dst, src []float32) {
	n8 := len(src) &^ 7
	if haveAsm && n8 > 0 {
		roundF16AVX(dst[:n8], src[:n8])
	}
	roundToF16Go(dst[n8:len(src)], src[n8:])
}

//go:noescape
func q4kRows(w []byte, rb int, xq []int8, xd []float32, xs []int16, out []float32)

//go:noescape
func q5kTile1x4(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)

//go:noescape
func q6kRows(w []byte, rb int, xq []int8, xd []float32, xs []int16, out []float32)

//go:noescape
func q6kTile1x4(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)

//go:noescape
func q4kTile1x2(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)

//go:noescape
func q4kTile1x4(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)

// q4kTile, q5kTile and q6kTile multiply one K-quant row with four
// activation rows; the assembly tiles equal q4kDotAVX, q5kDotAVX and
// q6kDotAVX, the Go twins dotQ4KGo, dotQ5KGo and dotQ6KGo, each bit for bit.
func q4kTile(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	if !haveAsm {
		q4kTile1x4Go(w, xq, xd, xs, nb, out, os)
		return
	}
	// bounds: the assembly does not check
	_, _, _, _ = w[nb*blockQ4_K-1], xq[4*256*nb-1], xd[4*nb-1], xs[4*16*nb-1]
	_ = out[3*os]
	q4kTile1x4(w, xq, xd, xs, nb, out, os)
}

// q4kPair multiplies one Q4_K row with two activation rows (out[0] and
// out[os]), unpacking each super-block once for both; each result equals
// q4kDotAVX's (dotQ4KGo's without assembly) bit for bit.
func q4kPair(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	if !haveAsm {
		kPairGo(w, xq, xd, xs, nb, out, os, dotQ4KGo)
		return
	}
	// bounds: the assembly does not check
	_, _, _, _ = w[nb*blockQ4_K-1], xq[2*256*nb-1], xd[2*nb-1], xs[2*16*nb-1]
	_ = out[os]
	q4kTile1x2(w, xq, xd, xs, nb, out, os)
}

func q6kTile(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	if !haveAsm {
		q6kTile1x4Go(w, xq, xd, xs, nb, out, os)
		return
	}
	// bounds: the assembly does not check
	_, _, _, _ = w[nb*blockQ6_K-1], xq[4*256*nb-1], xd[4*nb-1], xs[4*128*nb-1]
	_ = out[3*os]
	q6kTile1x4(w, xq, xd, xs, nb, out, os)
}

// q6kPairSums is q6kPairSumsGo, 32 codes per instruction where there is
// assembly (a VPMADDUBSW with 32 in every byte, as ggml makes them).
func q6kPairSums(xq []int8, xm []int16) {
	n32 := len(xq) &^ 31
	if haveAsm && n32 > 0 {
		_ = xm[n32/2-1] // the assembly does not check
		q6kPairSumsAVX(xq[:n32], xm)
	}
	q6kPairSumsGo(xq[n32:], xm[n32/2:])
}

//go:noescape
func q6kPairSumsAVX(xq []int8, xm []int16)

// q4kRowDots and q6kRowDots set out[i] to the product of row r0+i of a
// Q4_K or Q6_K matrix (rows of rb bytes) with one activation row: one
// assembly call for the run of rows, each equal to q4kDotAVX's or
// q6kDotAVX's bit for bit.
func q4kRowDots(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32) {
	if !haveAsm {
		kRowDotsGo(w, rb, r0, xq, xd, xs, out, dotQ4KGo)
		return
	}
	if checkRowDots(w, rb, blockQ4_K, 16, r0, xq, xd, xs, out) {
		q4kRows(w[r0*rb:], rb, xq, xd, xs, out)
	}
}

func q6kRowDots(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32) {
	if !haveAsm {
		kRowDotsGo(w, rb, r0, xq, xd, xs, out, dotQ6K)
		return
	}
	if checkRowDots(w, rb, blockQ6_K, 128, r0, xq, xd, xs, out) {
		q6kRows(w[r0*rb:], rb, xq, xd, xs, out)
	}
}

// checkRowDots does the bounds checks the assembly does not, and reports
// whether there are rows to compute; sums is the number of xs words per
// super-block.
func checkRowDots(w []byte, rb, blockBytes, sums, r0 int, xq []int8, xd []float32, xs []int16, out []float32) bool {
	if len(out) == 0 {
		return false
	}
	nb := len(xd)
	_, _, _ = w[(r0+len(out))*rb-1], xq[256*nb-1], xs[sums*nb-1]
	if rb != nb*blockBytes {
		panic("kernels: K-quant row size does not match the activations")
	}
	return true
}

func q5kTile(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	if !haveAsm {
		q5kTile1x4Go(w, xq, xd, xs, nb, out, os)
		return
	}
	// bounds: the assembly does not check
	_, _, _, _ = w[nb*blockQ5_K-1], xq[4*256*nb-1], xd[4*nb-1], xs[4*16*nb-1]
	_ = out[3*os]
	q5kTile1x4(w, xq, xd, xs, nb, out, os)
}

// haveBF16Tiles reports whether the AVX512_BF16 tiles (bf16tile512_amd64.s)
// run here. They give the same results as the AVX2 tiles (VDPBF16PS is
// what both reproduce), faster; a variable so the benchmarks can compare.
//
//go:generate go run ./internal/tilegen bf16tile512_amd64.s dense512_amd64.s
var haveBF16Tiles = haveAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BF16

//go:noescape
func bf16Tile512x6(w []uint16, ws int, x []uint16, xs int, n int, out []float32, os int)

//go:noescape
func bf16Tile512x1(w []uint16, ws int, x []uint16, xs int, n int, out []float32, os int)

// tiles512 runs a pair of generated AVX-512 tiles (six and one activation
// rows by four weight rows; w's rows and x's rows cols elements apart, out
// rows elements per activation row) over the whole groups of four weight
// rows in [r, r1) and every activation row, and returns the first row left.
func tiles512[W, X any](w []W, x []X, cols, rows, r, r1, batch int, out []float32,
	six, one func(w []W, ws int, x []X, xs int, n int, out []float32, os int)) int {
	for ; r+4 <= r1; r += 4 {
		wr := w[r*cols : (r+4)*cols]
		b := 0
		for ; b+6 <= batch; b += 6 {
			six(wr, cols, x[b*cols:(b+6)*cols], cols, cols, out[b*rows+r:(b+5)*rows+r+4], rows)
		}
		for ; b < batch; b++ {
			one(wr, cols, x[b*cols:(b+1)*cols], cols, cols, out[b*rows+r:b*rows+r+4], rows)
		}
	}
	return r
}
