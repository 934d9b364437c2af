package kernels

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// matmulJob is the state of one MatMul call, shared by the threads.
type matmulJob struct {
	out      []float32
	w        *Weight
	x        []float32
	batch    int
	rowBytes int

	// Quantized activations, reused across calls: codes, per-block scales
	// and (for K-quants) per-16 code sums, batch rows one after the other.
	xq  []int8
	xd  []float32
	xd8 []float32 // xd with every scale repeated 8 times (Q8_0/Q4_0 only)
	xs  []int16
	// xm is 32 times the sum of every pair of codes of xq (Q6_K only,
	// q6kPairSums): ggml's offset terms, made once for all weight rows.
	xm []int16
	// xs1 is the Q8_1 sum term of every 32-element block (Q5_1 only).
	xs1 []float32
	// xc is -128 times the sum of every four codes of xq (Q8_0 weights on
	// the VNNI tiles, which offset the weights rather than the activations).
	xc []int32
	// xp and xpd are the activations packed for the eight-row VNNI tiles
	// (q8PackGo): codes offset to unsigned and interleaved by 64-bit
	// groups, and the per-block scales, eight rows per group.
	xp  []int8
	xpd []float32
	// wc is the weight's block code sums (Weight.vnniCorrTable) when the
	// eight-row tiles run.
	wc []int16
	// xr is the activations rounded to half precision (F16 or BF16
	// weights), widened back to float32 for the kernels; xh is the same
	// values as bfloat16 bits (BF16 weights), which the assembly reads.
	xr []float32
	xh []uint16
}

// rowDots stores dot(row, b), the product of weight row r with batch item
// b, for rows [r0,r1) and the whole batch: the loop every kernel without a
// batch tile runs.
func (j *matmulJob) rowDots(r0, r1 int, dot func(row []byte, b int) float32) {
	for r := r0; r < r1; r++ {
		row := j.w.Data[r*j.rowBytes : (r+1)*j.rowBytes]
		for b := 0; b < j.batch; b++ {
			j.out[b*j.w.Rows+r] = dot(row, b)
		}
	}
}

// quantAct returns batch item b's quantized activations: its codes and
// the scales of its blockLen-element blocks.
func (j *matmulJob) quantAct(b, blockLen int) ([]int8, []float32) {
	nb := j.w.Cols / blockLen
	return j.xq[b*j.w.Cols : (b+1)*j.w.Cols], j.xd[b*nb : (b+1)*nb]
}

// rowTile is the number of rows a chunk of work is counted in; it matches
// the register tiles of the assembly kernels.
const rowTile = 4

// MatMul computes out[b*w.Rows+r] = sum_c x[b*w.Cols+c] * W[r][c] for every
// b < batch and r < w.Rows, split over the pool's threads. For quantized
// weights the activations are quantized once per call (Q8_0-style blocks for
// Q8_0, Q4_0 and Q5_0 weights, Q8_1 ones (Q8_0 plus a sum term) for Q5_1,
// Q8_K-style super-blocks for Q4_K, Q5_K and Q6_K) and the
// products are integer dot products per block. For F16 and BF16 weights the
// activations are first rounded to that type, as ggml converts them before
// its half-precision dot products, so results match llama.cpp's. It panics when the slices are
// too short or w is invalid: those are programming errors.
func (p *Pool) MatMul(out []float32, w *Weight, x []float32, batch int) {
	rb := w.rowBytes()
	if batch <= 0 {
		return
	}
	if len(x) < batch*w.Cols || len(out) < batch*w.Rows {
		panic(fmt.Sprintf("kernels: MatMul %s %dx%d batch %d: x has %d elements (want %d), out %d (want %d)",
			w.Type, w.Rows, w.Cols, batch, len(x), batch*w.Cols, len(out), batch*w.Rows))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j := &p.mm
	j.out, j.w, j.x, j.batch, j.rowBytes = out, w, x, batch, rb
	n := batch * w.Cols
	switch w.Type {
	case gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ5_1:
		vnni := w.Type == gguf.TypeQ8_0 && useVNNI(batch)
		wide := vnni && q8Wide(batch)
		j.xq = grow(j.xq, n)
		j.xd = grow(j.xd, n/32)
		j.xd8 = grow(j.xd8, n/4)
		quantizeQ8(x[:n], j.xq, j.xd, j.xd8)
		if wide {
			groups := (batch + 7) / 8
			j.xp = grow(j.xp, groups*q8PackRows*w.Cols)
			j.xpd = grow(j.xpd, groups*q8PackScales*w.Cols/32)
			q8PackGo(j.xq[:n], j.xd[:n/32], batch, w.Cols, j.xp, j.xpd)
			j.wc = w.vnniCorrTable()
		} else if vnni {
			j.xc = grow(j.xc, n/4)
			q8CorrGo(j.xq[:n], j.xc)
		}
		if w.Type == gguf.TypeQ5_1 {
			j.xs1 = grow(j.xs1, n/32)
			q8_1Sums(x[:n], j.xq, j.xs1)
		}
	case gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K:
		j.xq = grow(j.xq, n)
		j.xd = grow(j.xd, n/256)
		j.xs = grow(j.xs, n/16)
		quantizeQ8KGo(x[:n], j.xq, j.xd, j.xs)
		if w.Type == gguf.TypeQ6_K {
			j.xm = grow(j.xm, n/2)
			q6kPairSums(j.xq[:n], j.xm)
		}
	case gguf.TypeF16:
		j.xr = grow(j.xr, n)
		roundToF16(j.xr, x[:n])
		j.x = j.xr
	case gguf.TypeBF16:
		j.xr = grow(j.xr, n)
		j.xh = grow(j.xh, n)
		roundToBF16(j.xr, j.xh, x[:n])
		j.x = j.xr
	}
	p.run((w.Rows+rowTile-1)/rowTile, p.matmulFn)
	j.out, j.w, j.x, j.wc = nil, nil, nil, nil
}

// q8CorrGo sets corr[i] = -128 * (q[4i]+q[4i+1]+q[4i+2]+q[4i+3]): the
// excess that offsetting the weights by 128 adds to each VPDPBUSD lane.
func q8CorrGo(q []int8, corr []int32) {
	corr = corr[:len(q)/4]
	for i := range corr {
		g := q[4*i : 4*i+4]
		corr[i] = -128 * (int32(g[0]) + int32(g[1]) + int32(g[2]) + int32(g[3]))
	}
}

// q8PackGo lays out batch rows of Q8 activations (codes xq, per-block
// scales xd, rows of cols codes) for the eight-row VNNI tiles, in groups of
// eight rows, the last padded with rows of code 0 and scale 0: for group g,
// block k and qword q < 4, xp[(g*nb+k)*256 + 64*q + 8*b + j] is code 8q+j of
// row 8g+b's block k offset to unsigned (XOR 0x80 = code+128: VPDPBUSD's
// unsigned operand, the tile's lanes pairing each row with one four-code
// chunk of the weights), and xpd[(g*nb+k)*16 + 2*b + c], c < 2, that
// block's scale, once per chunk lane.
func q8PackGo(xq []int8, xd []float32, batch, cols int, xp []int8, xpd []float32) {
	const bytes80 = 0x8080808080808080
	nb := cols / 32
	groups := (batch + 7) / 8
	xp, xpd = xp[:groups*q8PackRows*cols], xpd[:groups*q8PackScales*nb]
	src, dst64 := int8Quads(xq[:batch*cols]), int8Quads(xp)
	for g := range groups {
		for k := range nb {
			blk := g*nb + k
			// The block's 256 bytes as 32 qwords: dst[8*q+b] is qword q
			// of row b.
			dst := (*[32]uint64)(dst64[blk*32 : blk*32+32])
			d := xpd[blk*q8PackScales : (blk+1)*q8PackScales]
			for b := range 8 {
				row := 8*g + b
				if row >= batch {
					for q := range 4 {
						dst[8*q+b] = bytes80
					}
					d[2*b], d[2*b+1] = 0, 0
					continue
				}
				quads := (*[4]uint64)(src[(row*cols+32*k)/8:])
				for q, v := range quads {
					dst[8*q+b] = v ^ bytes80
				}
				d[2*b], d[2*b+1] = xd[row*nb+k], xd[row*nb+k]
			}
		}
	}
}

// q8VNNICorr returns, for a Q8_0 matrix of rows rows of nb blocks (rb bytes
// each row), the sum of each row's codes per block, for the four-row tiles
// the rows make (rows 4t..4t+3; a last one to three rows take q8Rows and
// have none): corr[(t*nb+k)*4+h] is row 4t+h's in block k, so a tile reads
// its four sums of a block with one load. 128 times the sum is the excess
// that the VNNI tiles' unsigned activations (code+128) add to each block's
// integer sum; the table is made once with the weight so that the tiles
// read the matrix as it is mapped. int16 holds every sum (|sum| <= 32*128)
// at half the memory of the int32 excess (5.9% of the Q8_0 bytes).
func q8VNNICorr(data []byte, rows, nb, rb int) []int16 {
	corr := make([]int16, rows/4*4*nb)
	for r := range rows / 4 * 4 {
		t, h := r/4, r%4
		row := data[r*rb : (r+1)*rb]
		for k := range nb {
			var quads [4]uint64 // the codes are not 8-byte aligned in the block
			for q := range quads {
				quads[q] = binary.LittleEndian.Uint64(row[k*blockQ8_0+2+8*q:])
			}
			corr[(t*nb+k)*4+h] = int16(codeSum32(&quads))
		}
	}
	return corr
}

// codeSum32 returns the sum of the 32 signed codes in q, eight bytes at a
// time: offset to unsigned (XOR 0x80), bytes added pairwise into four
// 16-bit lanes (at most 4 * 2 * 255, no carries between lanes), the lanes
// summed by one multiply, and the offsets (32 * 128) taken back.
func codeSum32(q *[4]uint64) int32 {
	const bytes80, lanes16 = 0x8080808080808080, 0x00ff00ff00ff00ff
	var acc uint64
	for _, v := range q {
		u := v ^ bytes80
		acc += u&lanes16 + u>>8&lanes16
	}
	return int32(acc*0x0001000100010001>>48) - 32*128
}

// q8PackRows is the number of activation rows q8PackGo lays out per
// group, and q8PackScales the scales it writes per group and block (each
// row's twice).
const (
	q8PackRows   = 8
	q8PackScales = 2 * q8PackRows
)

// int8Quads views codes (a multiple of eight, as every block is) as the
// 64-bit groups q8PackGo moves, without copying.
func int8Quads(q []int8) []uint64 {
	if len(q) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&q[0])), len(q)/8)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// run computes the rows of tiles [lo,hi) for the whole batch.
func (j *matmulJob) run(lo, hi int) {
	w := j.w
	r0, r1 := lo*rowTile, min(hi*rowTile, w.Rows)
	switch w.Type {
	case gguf.TypeF32:
		matmulF32(j, r0, r1)
	case gguf.TypeF16:
		matmulF16(j, r0, r1)
	case gguf.TypeBF16:
		matmulBF16(j, r0, r1)
	case gguf.TypeQ8_0:
		matmulQ8_0(j, r0, r1)
	case gguf.TypeQ4_0:
		matmulQ4_0(j, r0, r1)
	case gguf.TypeQ4_K:
		matmulQ4K(j, r0, r1)
	case gguf.TypeQ5_0:
		matmulQ5_0(j, r0, r1)
	case gguf.TypeQ5_1:
		matmulQ5_1(j, r0, r1)
	case gguf.TypeQ5_K:
		matmulQ5K(j, r0, r1)
	case gguf.TypeQ6_K:
		matmulQ6K(j, r0, r1)
	}
}

// roundToF16Go writes src rounded to the nearest half-precision value (ties
// to even) to dst.
func roundToF16Go(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = F16ToF32(F32ToF16(v))
	}
}

// roundToBF16 writes src rounded to the nearest bfloat16 value (ties to
// even) to dst, and its bits to bits.
func roundToBF16(dst []float32, bits []uint16, src []float32) {
	dst, bits = dst[:len(src)], bits[:len(src)]
	for i, v := range src {
		h := F32ToBF16(v)
		bits[i] = h
		dst[i] = BF16ToF32(h)
	}
}
