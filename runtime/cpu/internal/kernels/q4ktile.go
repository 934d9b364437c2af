package kernels

import "encoding/binary"

// q4kTileActs is the number of activation rows a Q4_K tile multiplies one
// weight row with: prefill's batch rows share each super-block's unpacking.
const q4kTileActs = 4

// matmulQ4K computes rows [r0,r1) for the whole batch: each weight row
// against the batch four activation rows at a time (q4kTile), the rest of
// the batch with the row dot product. A tile's results equal the row dot
// product's bit for bit, so the split does not change any output.
func matmulQ4K(j *matmulJob, r0, r1 int) {
	cols, rows, batch, rb := j.w.Cols, j.w.Rows, j.batch, j.rowBytes
	nb := cols / 256
	data, xq, xd, xs, out := j.w.Data, j.xq, j.xd, j.xs, j.out
	for r := r0; r < r1; r++ {
		row := data[r*rb : (r+1)*rb]
		b := 0
		for ; b+q4kTileActs <= batch; b += q4kTileActs {
			q4kTile(row, xq[b*cols:(b+q4kTileActs)*cols], xd[b*nb:(b+q4kTileActs)*nb],
				xs[b*nb*16:(b+q4kTileActs)*nb*16], nb, out[b*rows+r:(b+q4kTileActs-1)*rows+r+1], rows)
		}
		for ; b < batch; b++ {
			out[b*rows+r] = dotQ4K(row, xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb], xs[b*nb*16:(b+1)*nb*16])
		}
	}
}

// q4kTile1x4Go is the pure-Go tile: each super-block's scales, mins and
// nibbles are unpacked once for four activation rows, and every product
// adds in dotQ4KGo's order, so out[a*os] equals dotQ4KGo of activation a
// exactly.
func q4kTile1x4Go(w []byte, xq []int8, xd []float32, xs []int16, nb int, out []float32, os int) {
	cols := 256 * nb
	var sum [q4kTileActs]float32
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
		for a := 0; a < q4kTileActs; a++ {
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
