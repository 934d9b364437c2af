package kernels

import (
	"encoding/binary"
	"math"
)

// Pure-Go kernels. They are the reference the assembly is tested against and
// the implementation on machines (or builds) without the assembly.

func dotF32Go(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// quantizeQ8Go quantizes x (a whole number of 32-element blocks) to int8 codes
// qs and one scale per block in d the way ggml's x86 quantize_row_q8_0 does,
// so that products match llama.cpp's: the step amax/127 is rounded to half
// precision (the block_q8_0 scale is an F16) and that rounded value is the
// scale, while the codes are round-to-nearest-even of x*(127/amax), computed
// from the unrounded amax. d8 gets each scale eight times (the layout the
// assembly tiles read).
func quantizeQ8Go(x []float32, qs []int8, d, d8 []float32) {
	for b := range d {
		blk := x[32*b : 32*b+32]
		amax, _ := absMax(blk)
		s := F16ToF32(F32ToF16(amax / 127))
		var inv float32
		if amax != 0 {
			inv = 127 / amax
		}
		d[b] = s
		for k := 0; k < 8; k++ {
			d8[8*b+k] = s
		}
		q := qs[32*b : 32*b+32]
		for j, v := range blk {
			q[j] = int8(math.RoundToEven(float64(v * inv)))
		}
	}
}

// quantizeQ8KGo quantizes x (a whole number of 256-element blocks) to int8
// codes, one scale per 256 elements and the sum of the codes of every 16
// elements (the K-quant kernels use the sums to apply the sub-block offsets).
// It rounds as ggml's quantize_row_q8_K does, so products match llama.cpp's:
// the element of largest magnitude (the first one on a tie) gives
// iscale = -127/max, codes are round-to-nearest-even of iscale*x capped at
// 127, and the scale is 1/iscale (negative when max is positive; the codes
// carry the opposite sign, so the products are the same).
func quantizeQ8KGo(x []float32, qs []int8, d []float32, sums []int16) {
	for b := range d {
		blk := x[256*b : 256*b+256]
		amax, mx := absMax(blk)
		var iscale float32
		if amax != 0 {
			iscale = -127 / mx
			d[b] = 1 / iscale
		} else {
			d[b] = 0
		}
		q := qs[256*b : 256*b+256]
		for j, v := range blk {
			q[j] = int8(min(127, math.RoundToEven(float64(iscale*v))))
		}
		for g := 0; g < 16; g++ {
			var t int16
			for _, c := range q[16*g : 16*g+16] {
				t += int16(c)
			}
			sums[16*b+g] = t
		}
	}
}

func dotQ8_0Go(w []byte, xq []int8, xd []float32) float32 {
	var sum float32
	for b := range xd {
		blk := w[b*blockQ8_0 : (b+1)*blockQ8_0]
		q := xq[32*b : 32*b+32]
		var si int32
		for j := 0; j < 32; j++ {
			si += int32(int8(blk[2+j])) * int32(q[j])
		}
		sum += F16ToF32(binary.LittleEndian.Uint16(blk)) * xd[b] * float32(si)
	}
	return sum
}

func dotQ4_0Go(w []byte, xq []int8, xd []float32) float32 {
	var sum float32
	for b := range xd {
		blk := w[b*blockQ4_0 : (b+1)*blockQ4_0]
		q := xq[32*b : 32*b+32]
		var si int32
		for j := 0; j < 16; j++ {
			c := blk[2+j]
			si += int32(int(c&0xf)-8)*int32(q[j]) + int32(int(c>>4)-8)*int32(q[j+16])
		}
		sum += F16ToF32(binary.LittleEndian.Uint16(blk)) * xd[b] * float32(si)
	}
	return sum
}

func dotQ4KGo(w []byte, xq []int8, xd []float32, xs []int16) float32 {
	var sum float32
	for b := range xd {
		blk := w[b*blockQ4_K : (b+1)*blockQ4_K]
		d := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		scales, qs := blk[4:16], blk[16:144]
		q := xq[256*b : 256*b+256]
		var scaled, offs int32
		for k := 0; k < 4; k++ {
			sc0, m0 := scaleMinQ4K(scales, 2*k)
			sc1, m1 := scaleMinQ4K(scales, 2*k+1)
			var s0, s1 int32
			for l := 0; l < 32; l++ {
				c := qs[32*k+l]
				s0 += int32(c&0xf) * int32(q[64*k+l])
				s1 += int32(c>>4) * int32(q[64*k+32+l])
			}
			scaled += int32(sc0)*s0 + int32(sc1)*s1
			g := xs[16*b+4*k:]
			offs += int32(m0)*(int32(g[0])+int32(g[1])) + int32(m1)*(int32(g[2])+int32(g[3]))
		}
		sum += xd[b] * (d*float32(scaled) - dmin*float32(offs))
	}
	return sum
}

// dotQ6KGo adds in the order of ggml's AVX2 ggml_vec_dot_q6_K_q8_K (see
// the comment above hsum8 in q5.go): eight int32 lanes, lane i taking
// sc*sum((q-32)*x) over elements 4i..4i+3 of each 32-element run (sc the
// scale of the run's first 16 elements for lanes 0..3, of its last 16 for
// lanes 4..7), converted to float and fused-multiply-added with the
// super-block's d*xd into eight float lanes, reduced by hsum8 at the end.
// The offset 32 stays inside each lane: moving it to other lanes changes
// which integers get rounded to float (the cross-check case k256-q6_k
// "Lily ..." with the F16 cache was 3.5e-3 off for that).
func dotQ6KGo(w []byte, xq []int8, xd []float32) float32 {
	var acc [8]float32
	var codes [256]int32
	for b := range xd {
		blk := w[b*blockQ6_K : (b+1)*blockQ6_K]
		q6kCodes(blk, &codes)
		q6kLanes(&codes, blk[192:208], xq[256*b:256*b+256], xd[b]*F16ToF32(binary.LittleEndian.Uint16(blk[208:])), &acc)
	}
	return hsum8(&acc)
}

// q6kCodes unpacks a Q6_K super-block's 256 codes, offset 32 removed.
func q6kCodes(blk []byte, codes *[256]int32) {
	ql, qh := blk[0:128], blk[128:192]
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			a, c, hb := ql[64*h+l], ql[64*h+l+32], qh[32*h+l]
			codes[128*h+l] = int32(a&0xf|(hb&3)<<4) - 32
			codes[128*h+l+32] = int32(c&0xf|(hb>>2&3)<<4) - 32
			codes[128*h+l+64] = int32(a>>4|(hb>>4&3)<<4) - 32
			codes[128*h+l+96] = int32(c>>4|(hb>>6&3)<<4) - 32
		}
	}
}

// q6kLanes adds one super-block's product with the activation codes q to
// the eight float lanes acc, d being the weight's d times the activation's:
// integer lanes as ggml's AVX2 kernel forms them, then one fused
// multiply-add per lane.
func q6kLanes(codes *[256]int32, sc []byte, q []int8, d float32, acc *[8]float32) {
	var lanes [8]int32
	for r := 0; r < 8; r++ { // 32-element runs: groups 2r and 2r+1
		run, y := codes[32*r:32*r+32], q[32*r:32*r+32]
		sc0, sc1 := int32(int8(sc[2*r])), int32(int8(sc[2*r+1]))
		for i := 0; i < 4; i++ {
			var s0, s1 int32
			for l := 4 * i; l < 4*i+4; l++ {
				s0 += run[l] * int32(y[l])
				s1 += run[l+16] * int32(y[l+16])
			}
			lanes[i] += sc0 * s0
			lanes[i+4] += sc1 * s1
		}
	}
	for i, v := range lanes {
		acc[i] = fma32(d, float32(v), acc[i])
	}
}

// Row-by-row products of rows [r0,r1) with the whole batch.

func matmulF32Go(j *matmulJob, r0, r1 int) {
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		return dotF32Go(bytesF32(row), j.x[b*j.w.Cols:(b+1)*j.w.Cols])
	})
}

func matmulQ8_0Go(j *matmulJob, r0, r1 int) {
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		xq, xd := j.quantAct(b, 32)
		return dotQ8_0Go(row, xq, xd)
	})
}

func matmulQ4_0Go(j *matmulJob, r0, r1 int) {
	j.rowDots(r0, r1, func(row []byte, b int) float32 {
		xq, xd := j.quantAct(b, 32)
		return dotQ4_0Go(row, xq, xd)
	})
}
