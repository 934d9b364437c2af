package kernels

import "encoding/binary"

// kTileActs is the number of activation rows a K-quant tile multiplies one
// weight row with: prefill's batch rows share each super-block's unpacking.
const kTileActs = 4

// kTile multiplies one weight row of nb super-blocks with kTileActs Q8_K
// activation rows (codes, scales and sums one row after another: 16-code
// sums for Q4_K and Q5_K, q6kPairSums for Q6_K)
// and writes the product with activation a to out[a*os]; kDot is the row
// dot product it must equal bit for bit.
type (
	kTile func(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int)
	kDot  func(w []byte, xq []int8, xd []float32, xs []int16) float32
)

// matmulQ4K, matmulQ5K (q5.go) and matmulQ6K compute rows [r0,r1) for the
// whole batch. A single activation row (decode) runs the rows in one call
// (for Q6_K also each of two or three, q6kRunRows). Only Q4_K has a
// two-row tile: a Q6_K one (q6kTile1x4 cut to two rows) measured no faster
// than two row dot products, its unpacking being cheap next to the
// products.
func matmulQ4K(j *matmulJob, r0, r1 int) {
	if j.batch == 1 {
		nb := j.w.Cols / 256
		q4kRowDots(j.w.Data, j.rowBytes, r0, j.xq[:256*nb], j.xd[:nb], j.xs[:16*nb], j.out[r0:r1])
		return
	}
	matmulKTiles(j, r0, r1, j.xs, 16, q4kTile, q4kPair, dotQ4K)
}

func matmulQ6K(j *matmulJob, r0, r1 int) {
	if j.batch < kTileActs {
		q6kRunRows(j, r0, r1)
		return
	}
	matmulKTiles(j, r0, r1, j.xm, 128, q6kTile, nil, dotQ6K)
}

// q6kRowBlock is how many weight rows q6kRunRows takes through every
// activation before the next ones: 128 rows of 768 columns (80 KB) stay in
// L2 for the second and third activation. 32 rows measured slower on the
// 32000-row output matrix (0.93x at batch 3), 128 on par with a row dot
// call per row and activation there and 1.2-1.6x on 768 and 2048 rows.
const q6kRowBlock = 128

// q6kRunRows is Q6_K for batches too small for a tile (decode of one to
// three sequences): decode's row loop (q6kRowDots) once per activation
// row, over blocks of q6kRowBlock weight rows, instead of a row dot call
// per weight row and activation. The row loop equals the row dot product
// bit for bit, so the outputs do not change.
func q6kRunRows(j *matmulJob, r0, r1 int) {
	cols, rows, nb := j.w.Cols, j.w.Rows, j.w.Cols/256
	block := q6kRowBlock
	if j.batch == 1 {
		block = r1 - r0 // one pass over the rows: nothing to keep in cache
	}
	for lo := r0; lo < r1; lo += block {
		hi := min(lo+block, r1)
		for b := 0; b < j.batch; b++ {
			q6kRowDots(j.w.Data, j.rowBytes, lo, j.xq[b*cols:(b+1)*cols], j.xd[b*nb:(b+1)*nb],
				j.xm[b*128*nb:(b+1)*128*nb], j.out[b*rows+lo:b*rows+hi])
		}
	}
}

// kRowDotsGo is the row dot product dot for rows r0.. of w, one per
// element of out.
func kRowDotsGo(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32, dot kDot) {
	for i := range out {
		r := r0 + i
		out[i] = dot(w[r*rb:(r+1)*rb], xq, xd, xs)
	}
}

// kPairGo is the pair tiles' fallback: two row dot products.
func kPairGo(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int, dot kDot) {
	cols := 256 * nb
	out[0] = dot(w, xq[:cols], xd[:nb], xs[:16*nb])
	out[os] = dot(w, xq[cols:2*cols], xd[nb:2*nb], xs[16*nb:32*nb])
}

// matmulKTiles multiplies each weight row with the batch four activation
// rows at a time (tile), then two at a time (pair, where the type has one:
// batched decode of 2-3 sequences, or what a batch leaves after its groups
// of four), the rest of the batch with the row dot product. Tiles and
// pairs equal the row dot product bit for bit, so the split does not change
// any output. xs is the activations' sums the type's kernels take, sums
// words per super-block (Q4_K, Q5_K: j.xs, 16; Q6_K: j.xm, 128).
func matmulKTiles(j *matmulJob, r0, r1 int, xs []int16, sums int, tile, pair kTile, dot kDot) {
	cols, rows, batch, rb := j.w.Cols, j.w.Rows, j.batch, j.rowBytes
	nb := cols / 256
	data, xq, xd, out := j.w.Data, j.xq, j.xd, j.out
	ns := sums * nb
	for r := r0; r < r1; r++ {
		row := data[r*rb : (r+1)*rb]
		b := 0
		for ; b+kTileActs <= batch; b += kTileActs {
			tile(row, xq[b*cols:(b+kTileActs)*cols], xd[b*nb:(b+kTileActs)*nb],
				xs[b*ns:(b+kTileActs)*ns], nb, out[b*rows+r:(b+kTileActs-1)*rows+r+1], rows)
		}
		if pair != nil {
			for ; b+2 <= batch; b += 2 {
				pair(row, xq[b*cols:(b+2)*cols], xd[b*nb:(b+2)*nb], xs[b*ns:(b+2)*ns], nb, out[b*rows+r:(b+1)*rows+r+1], rows)
			}
		}
		for ; b < batch; b++ {
			out[b*rows+r] = dot(row, xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb], xs[b*ns:(b+1)*ns])
		}
	}
}

// q4kTile1x4Go is the pure-Go tile: each super-block's scales, mins and
// nibbles are unpacked once for four activation rows, and every product
// adds in dotQ4KGo's order, so out[a*os] equals dotQ4KGo of activation a
// exactly.
func q4kTile1x4Go(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	cols := 256 * nb
	var sum [kTileActs]float32
	var codes [256]int32
	var sc, mn [8]int32
	for b := 0; b < nb; b++ {
		blk := w[b*blockQ4_K : (b+1)*blockQ4_K]
		d := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		scales, qs := blk[4:16], blk[16:144]
		for k := 0; k < 8; k++ {
			s, m := scaleMinQ4K(scales, k)
			sc[k], mn[k] = int32(s), int32(m)
		}
		for k := 0; k < 4; k++ {
			for l, c := range qs[32*k : 32*k+32] {
				codes[64*k+l] = int32(c & 0xf)
				codes[64*k+32+l] = int32(c >> 4)
			}
		}
		for a := 0; a < kTileActs; a++ {
			q := xq[a*cols+256*b : a*cols+256*b+256]
			g := xs[a*16*nb+16*b : a*16*nb+16*b+16]
			var scaled, offs int32
			for k := 0; k < 4; k++ {
				var s0, s1 int32
				for l := 0; l < 32; l++ {
					s0 += codes[64*k+l] * int32(q[64*k+l])
					s1 += codes[64*k+32+l] * int32(q[64*k+32+l])
				}
				scaled += sc[2*k]*s0 + sc[2*k+1]*s1
				offs += mn[2*k]*(int32(g[4*k])+int32(g[4*k+1])) + mn[2*k+1]*(int32(g[4*k+2])+int32(g[4*k+3]))
			}
			sum[a] += xd[a*nb+b] * (d*float32(scaled) - dmin*float32(offs))
		}
	}
	for a, s := range sum {
		out[a*os] = s
	}
}

// q6kTile1x4Go is the pure-Go Q6_K tile: each super-block's codes are
// unpacked once for four activation rows, and every product adds in
// dotQ6KGo's order (ggml's), so out[a*os] equals dotQ6KGo of activation a
// exactly.
func q6kTile1x4Go(w []byte, xq []int8, xd []float32, _ []int16, nb int, out []float32, os int) {
	cols := 256 * nb
	var acc [kTileActs][8]float32
	var codes [256]int32
	for b := 0; b < nb; b++ {
		blk := w[b*blockQ6_K : (b+1)*blockQ6_K]
		q6kCodes(blk, &codes)
		d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
		for a := 0; a < kTileActs; a++ {
			q := xq[a*cols+256*b : a*cols+256*b+256]
			q6kLanes(&codes, blk[192:208], q, xd[a*nb+b]*d, &acc[a])
		}
	}
	for a := range acc {
		out[a*os] = hsum8(&acc[a])
	}
}

// q5kTile1x4Go is the pure-Go Q5_K tile: each super-block's scales, mins
// and five-bit codes are unpacked once for four activation rows, and every
// product adds in dotQ5KGo's order, so out[a*os] equals dotQ5KGo of
// activation a exactly.
func q5kTile1x4Go(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	cols := 256 * nb
	var acc [kTileActs][8]float32
	var mins [kTileActs]float32
	var codes [256]int32
	var sc, mn [8]int32
	for b := 0; b < nb; b++ {
		blk := w[b*blockQ5_K : (b+1)*blockQ5_K]
		df := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
		dminf := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		for k := 0; k < 8; k++ {
			s, m := scaleMinQ4K(scales, k)
			sc[k], mn[k] = int32(s), int32(m)
		}
		for k := 0; k < 4; k++ {
			for l := 0; l < 32; l++ {
				c, h := qs[32*k+l], qh[l]
				codes[64*k+l] = int32(c&0xf | (h>>(2*k)&1)<<4)
				codes[64*k+32+l] = int32(c>>4 | (h>>(2*k+1)&1)<<4)
			}
		}
		for a := 0; a < kTileActs; a++ {
			d := xd[a*nb+b] * df
			dmin := xd[a*nb+b] * dminf
			q := xq[a*cols+256*b : a*cols+256*b+256]
			g := xs[a*16*nb+16*b : a*16*nb+16*b+16]
			var lanes [8]int32
			var offs int32
			for k := 0; k < 4; k++ {
				for i := range lanes {
					var s0, s1 int32
					for l := 4 * i; l < 4*i+4; l++ {
						s0 += codes[64*k+l] * int32(q[64*k+l])
						s1 += codes[64*k+32+l] * int32(q[64*k+32+l])
					}
					lanes[i] += sc[2*k]*s0 + sc[2*k+1]*s1
				}
				offs += mn[2*k]*(int32(g[4*k])+int32(g[4*k+1])) + mn[2*k+1]*(int32(g[4*k+2])+int32(g[4*k+3]))
			}
			mins[a] = fma32(-dmin, float32(offs), mins[a])
			for i, v := range lanes {
				acc[a][i] = fma32(d, float32(v), acc[a][i])
			}
		}
	}
	for a := range acc {
		out[a*os] = hsum8(&acc[a]) + mins[a]
	}
}
