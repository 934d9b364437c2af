package kernels

import (
	"encoding/binary"
	"math"
)

// Five-bit weights, laid out as ggml stores them.
//
// Q5_0: a 32-element block of f16 d, a little-endian uint32 qh of fifth bits
// and 16 nibble bytes. Element j < 16 is the low nibble of byte j with bit j
// of qh on top, element j+16 the high nibble of byte j with bit j+16; the
// value is d*(q-16).
//
// Q5_1: f16 d, f16 m, then qh and nibbles as in Q5_0; the value is d*q + m.
//
// Q5_K: a 256-element super-block of f16 d, f16 dmin, the 12 bytes of 6-bit
// scales and mins Q4_K uses, 32 bytes qh and 128 nibble bytes. Chunk k (64
// elements) holds sub-block 2k in the low nibbles of bytes 32k..32k+31 and
// sub-block 2k+1 in their high nibbles; the fifth bit of element l of
// sub-block 2k (2k+1) is bit 2k (2k+1) of qh[l]. The value is
// d*sc*q - dmin*m.
//
// ggml pairs Q5_0 with Q8_0 activations, Q5_1 with Q8_1 ones (Q8_0 codes and
// scale plus s, the F16-rounded step times the sum of the block's codes, which
// carries the min term) and Q5_K with Q8_K ones.

const (
	blockQ5_0 = 22  // f16 d, 4 bytes qh, 16 bytes of nibble pairs
	blockQ5_1 = 24  // f16 d, f16 m, 4 bytes qh, 16 bytes of nibble pairs
	blockQ5_K = 176 // f16 d, f16 dmin, 12 bytes scales/mins, 32 bytes qh, 128 bytes of nibbles
)

// q5Codes unpacks the 32 five-bit codes (0..31) of a Q5_0 or Q5_1 block from
// its qh word and nibble bytes.
func q5Codes(qhBytes, qs []byte, codes *[32]uint8) {
	qh := binary.LittleEndian.Uint32(qhBytes)
	for j := 0; j < 16; j++ {
		codes[j] = qs[j]&0xf | uint8(qh>>j&1)<<4
		codes[j+16] = qs[j]>>4 | uint8(qh>>(j+16)&1)<<4
	}
}

func dequantQ5_0(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	var codes [32]uint8
	q5Codes(blk[2:6], blk[6:22], &codes)
	for j, c := range codes {
		y[j] = float32(int(c)-16) * d
	}
}

func dequantQ5_1(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	m := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	var codes [32]uint8
	q5Codes(blk[4:8], blk[8:24], &codes)
	for j, c := range codes {
		// The conversion keeps the product rounded on its own, as ggml's
		// dequantizer (built without FMA) computes it.
		y[j] = float32(float32(c)*d) + m
	}
}

func dequantQ5K(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
	dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
	for k := 0; k < 4; k++ {
		sc0, m0 := scaleMinQ4K(scales, 2*k)
		sc1, m1 := scaleMinQ4K(scales, 2*k+1)
		d0, o0 := d*float32(sc0), dmin*float32(m0)
		d1, o1 := d*float32(sc1), dmin*float32(m1)
		for l := 0; l < 32; l++ {
			c, h := qs[32*k+l], qh[l]
			q0 := c&0xf | (h>>(2*k)&1)<<4
			q1 := c>>4 | (h>>(2*k+1)&1)<<4
			y[64*k+l] = float32(d0*float32(q0)) - o0
			y[64*k+32+l] = float32(d1*float32(q1)) - o1
		}
	}
}

// q8_1Sums sets s[b] to block b's Q8_1 sum term: the unrounded step
// amax/127 times the sum of its codes, rounded to F16 as block_q8_1 stores
// it (ggml's x86 quantize_row_q8_1). The codes and scales are those of
// quantizeQ8, which Q8_1 shares with Q8_0.
func q8_1Sums(x []float32, qs []int8, s []float32) {
	for b := range s {
		amax, _ := absMax(x[32*b : 32*b+32])
		var sum int32
		for _, c := range qs[32*b : 32*b+32] {
			sum += int32(c)
		}
		s[b] = F16ToF32(F32ToF16(amax / 127 * float32(sum)))
	}
}

// The dot products below keep ggml's AVX2 arithmetic, so that results do not
// depend on the build: eight float lanes, lane i taking the integer sum of
// elements 4i..4i+3 of each 32-element run times the block's combined scale
// with a fused multiply-add, the lanes added in hsum8's order, and the min
// terms of Q5_1/Q5_K in a scalar of their own, also fused (ggml's compiler
// contracts that multiply-add). The assembly computes exactly the same.

// fma32 is a float32 fused multiply-add. The float64 product is exact; the
// sum is rounded twice, which can differ from one rounding only when the
// float64 result lies exactly halfway between two float32 values.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// hsum8 adds eight lanes as ggml's hsum_float_8 does: halves, then lanes
// 0+2 and 1+3, then those two.
func hsum8(v *[8]float32) float32 {
	r0, r1, r2, r3 := v[4]+v[0], v[5]+v[1], v[6]+v[2], v[7]+v[3]
	return (r0 + r2) + (r1 + r3)
}

func dotQ5_0Go(w []byte, xq []int8, xd []float32) float32 {
	var acc [8]float32
	var codes [32]uint8
	for b := range xd {
		blk := w[b*blockQ5_0 : (b+1)*blockQ5_0]
		q5Codes(blk[2:6], blk[6:22], &codes)
		q := xq[32*b : 32*b+32]
		d := F16ToF32(binary.LittleEndian.Uint16(blk)) * xd[b]
		for i := range acc {
			var lane int32
			for e := 4 * i; e < 4*i+4; e++ {
				lane += (int32(codes[e]) - 16) * int32(q[e])
			}
			acc[i] = fma32(d, float32(lane), acc[i])
		}
	}
	return hsum8(&acc)
}

// dotQ5_1Go takes the Q8_1 sum terms in xs.
func dotQ5_1Go(w []byte, xq []int8, xd, xs []float32) float32 {
	var acc [8]float32
	var mins float32
	var codes [32]uint8
	for b := range xd {
		blk := w[b*blockQ5_1 : (b+1)*blockQ5_1]
		q5Codes(blk[4:8], blk[8:24], &codes)
		q := xq[32*b : 32*b+32]
		m := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		mins = fma32(m, xs[b], mins)
		d := F16ToF32(binary.LittleEndian.Uint16(blk)) * xd[b]
		for i := range acc {
			var lane int32
			for e := 4 * i; e < 4*i+4; e++ {
				lane += int32(codes[e]) * int32(q[e])
			}
			acc[i] = fma32(d, float32(lane), acc[i])
		}
	}
	return hsum8(&acc) + mins
}

// dotQ5KGo is the Q5_K row dot product against Q8_K activations (codes xq,
// scales xd, per-16 code sums xs).
func dotQ5KGo(w []byte, xq []int8, xd []float32, xs []int16) float32 {
	var acc [8]float32
	var mins float32
	for b := range xd {
		blk := w[b*blockQ5_K : (b+1)*blockQ5_K]
		d := xd[b] * F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
		dmin := xd[b] * F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		q := xq[256*b : 256*b+256]
		var lanes [8]int32
		var offs int32
		for k := 0; k < 4; k++ {
			sc0, m0 := scaleMinQ4K(scales, 2*k)
			sc1, m1 := scaleMinQ4K(scales, 2*k+1)
			for i := range lanes {
				var s0, s1 int32
				for l := 4 * i; l < 4*i+4; l++ {
					c, h := qs[32*k+l], qh[l]
					s0 += int32(c&0xf|(h>>(2*k)&1)<<4) * int32(q[64*k+l])
					s1 += int32(c>>4|(h>>(2*k+1)&1)<<4) * int32(q[64*k+32+l])
				}
				lanes[i] += int32(sc0)*s0 + int32(sc1)*s1
			}
			g := xs[16*b+4*k:]
			offs += int32(m0)*(int32(g[0])+int32(g[1])) + int32(m1)*(int32(g[2])+int32(g[3]))
		}
		mins = fma32(-dmin, float32(offs), mins)
		for i, v := range lanes {
			acc[i] = fma32(d, float32(v), acc[i])
		}
	}
	return hsum8(&acc) + mins
}

// Row-by-row products of rows [r0,r1) with the whole batch, through the
// assembly dot products where they run.

func matmulQ5_0Rows(j *matmulJob, r0, r1 int) {
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		xq, xd := j.quantAct(b, 32)
		return dotQ5_0(row, xq, xd)
	})
}

func matmulQ5_1(j *matmulJob, r0, r1 int) {
	nb := j.w.Cols / 32
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		xq, xd := j.quantAct(b, 32)
		return dotQ5_1(row, xq, xd, j.xs1[b*nb:(b+1)*nb])
	})
}

func matmulQ5K(j *matmulJob, r0, r1 int) {
	if j.batch == 1 {
		nb := j.w.Cols / 256
		q5kRowDots(j.w.Data, j.rowBytes, r0, j.xq[:256*nb], j.xd[:nb], j.xs[:16*nb], j.out[r0:r1])
		return
	}
	matmulKTiles(j, r0, r1, j.xs, 16, q5kTile, nil, dotQ5K)
}

// quantBlockQ5_0 stores 32 values like ggml's reference quantizer (which
// llama-quantize uses without an importance matrix): the element of largest
// magnitude maps to code 0, d = max/-16, codes are trunc(x/d + 16.5) capped
// at 31.
func quantBlockQ5_0(x []float32, blk []byte) {
	_, mx := absMax(x)
	d := mx / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	var qh uint32
	for j := 0; j < 16; j++ {
		q0 := uint8(min(31, int8(float32(x[j]*id)+16.5)))
		q1 := uint8(min(31, int8(float32(x[j+16]*id)+16.5)))
		blk[6+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0>>4) << j
		qh |= uint32(q1>>4) << (j + 16)
	}
	binary.LittleEndian.PutUint32(blk[2:], qh)
}

// quantBlockQ5_1 stores 32 values like ggml's reference quantizer: m is the
// minimum, d = (max-min)/31, codes are trunc((x-min)/d + 0.5) capped at 31.
func quantBlockQ5_1(x []float32, blk []byte) {
	lo, hi := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	d := (hi - lo) / 31
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	binary.LittleEndian.PutUint16(blk[2:], F32ToF16(lo))
	var qh uint32
	for j := 0; j < 16; j++ {
		q0 := uint8(float32(float32(x[j]-lo)*id) + 0.5)
		q1 := uint8(float32(float32(x[j+16]-lo)*id) + 0.5)
		blk[8+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0>>4&1) << j
		qh |= uint32(q1>>4&1) << (j + 16)
	}
	binary.LittleEndian.PutUint32(blk[4:], qh)
}

// quantBlockQ5K is a straightforward (not error-minimizing) Q5_K quantizer,
// the five-bit sibling of quantBlockQ4K: each sub-block gets an offset
// covering its minimum and a step covering its range over 31 codes, both
// rounded up to the 6-bit grids so no value falls outside.
func quantBlockQ5K(x []float32, blk []byte) {
	var codes [256]uint8
	kQuantCodes(x, blk, 31, &codes)
	qh, qs := blk[16:48], blk[48:176]
	clear(qh)
	clear(qs)
	for i, q := range codes {
		j, l := i/32, i%32
		qs[32*(j/2)+l] |= (q & 0xf) << (4 * (j % 2))
		qh[l] |= (q >> 4) << j
	}
}
