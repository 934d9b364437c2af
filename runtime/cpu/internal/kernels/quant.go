package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// Quantize encodes src in tensor type t (F32, F16, BF16, Q8_0, Q4_0, Q5_0,
// Q5_1, Q4_K, Q5_K or Q6_K). len(src) must be a whole number of the type's
// blocks; a matrix is quantized by passing all its rows at once, since every
// row is a whole number of blocks.
func Quantize(t gguf.TensorType, src []float32) ([]byte, error) {
	if !supported(t) {
		return nil, fmt.Errorf("quantize to %s: unsupported type", t)
	}
	n, err := t.RowBytes(len(src))
	if err != nil {
		return nil, fmt.Errorf("quantize to %s: %w", t, err)
	}
	dst := make([]byte, n)
	bs, ts := t.BlockSize(), t.TypeSize()
	blocks := len(src) / bs
	// Whole-model quantization (the synthetic model writer) is worth
	// spreading over the cores; blocks are independent, so the result is
	// the same as a serial run.
	const blocksPerPart = 1 << 14
	parts := min(runtime.GOMAXPROCS(0), (blocks+blocksPerPart-1)/blocksPerPart)
	if parts <= 1 {
		quantizeBlocks(t, src, dst)
		return dst, nil
	}
	var wg sync.WaitGroup
	per := (blocks + parts - 1) / parts
	for lo := 0; lo < blocks; lo += per {
		hi := min(lo+per, blocks)
		wg.Add(1)
		go func() {
			defer wg.Done()
			quantizeBlocks(t, src[lo*bs:hi*bs], dst[lo*ts:hi*ts])
		}()
	}
	wg.Wait()
	return dst, nil
}

// quantizeBlocks encodes src (whole blocks of t) into dst.
func quantizeBlocks(t gguf.TensorType, src []float32, dst []byte) {
	switch t {
	case gguf.TypeF32:
		copy(bytesF32(dst), src)
	case gguf.TypeF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case gguf.TypeBF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case gguf.TypeQ8_0:
		for b := 0; b < len(src)/32; b++ {
			quantBlockQ8_0(src[b*32:(b+1)*32], dst[b*blockQ8_0:(b+1)*blockQ8_0])
		}
	case gguf.TypeQ4_0:
		for b := 0; b < len(src)/32; b++ {
			quantBlockQ4_0(src[b*32:(b+1)*32], dst[b*blockQ4_0:(b+1)*blockQ4_0])
		}
	case gguf.TypeQ5_0:
		for b := 0; b < len(src)/32; b++ {
			quantBlockQ5_0(src[b*32:(b+1)*32], dst[b*blockQ5_0:(b+1)*blockQ5_0])
		}
	case gguf.TypeQ5_1:
		for b := 0; b < len(src)/32; b++ {
			quantBlockQ5_1(src[b*32:(b+1)*32], dst[b*blockQ5_1:(b+1)*blockQ5_1])
		}
	case gguf.TypeQ4_K:
		for b := 0; b < len(src)/256; b++ {
			quantBlockQ4K(src[b*256:(b+1)*256], dst[b*blockQ4_K:(b+1)*blockQ4_K])
		}
	case gguf.TypeQ5_K:
		for b := 0; b < len(src)/256; b++ {
			quantBlockQ5K(src[b*256:(b+1)*256], dst[b*blockQ5_K:(b+1)*blockQ5_K])
		}
	case gguf.TypeQ6_K:
		for b := 0; b < len(src)/256; b++ {
			quantBlockQ6K(src[b*256:(b+1)*256], dst[b*blockQ6_K:(b+1)*blockQ6_K])
		}
	}
}

// roundHalfAway rounds like C's roundf, which ggml's reference quantizers use.
// The float64 sum is exact, so truncating it rounds correctly even just
// below one half.
func roundHalfAway(v float32) int {
	if v < 0 {
		return int(float64(v) - 0.5)
	}
	return int(float64(v) + 0.5)
}

// absMax returns the largest magnitude in x and the value that has it.
func absMax(x []float32) (amax, signed float32) {
	for _, v := range x {
		a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		if a > amax {
			amax, signed = a, v
		}
	}
	return amax, signed
}

// quantBlockQ8_0 stores 32 values as an f16 scale amax/127 and 32 int8.
func quantBlockQ8_0(x []float32, blk []byte) {
	amax, _ := absMax(x)
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	for j, v := range x {
		blk[2+j] = byte(int8(roundHalfAway(v * id)))
	}
}

// quantBlockQ4_0 stores 32 values as an f16 scale and 4-bit codes q with
// value d*(q-8); like ggml, the element of largest magnitude maps to code 0
// (d = max/-8), which uses the asymmetric range fully.
func quantBlockQ4_0(x []float32, blk []byte) {
	_, mx := absMax(x)
	d := mx / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	for j := 0; j < 16; j++ {
		q0 := min(15, int(int8(x[j]*id+8.5)))
		q1 := min(15, int(int8(x[j+16]*id+8.5)))
		blk[2+j] = byte(q0) | byte(q1)<<4
	}
}

// f16AtLeast returns the smallest half value not below v (v >= 0), so a
// stored scale never shrinks the range it was computed to cover.
func f16AtLeast(v float32) uint16 {
	h := F32ToF16(v)
	if F16ToF32(h) < v {
		h++
	}
	return h
}

// Q4_K: a 256-element super-block of eight 32-element sub-blocks. Element i
// of sub-block j is d*sc[j]*q - dmin*m[j] with q a 4-bit code and sc, m 6-bit
// numbers packed into 12 bytes: for j < 4, scales[j] and scales[j+4] hold
// sc[j] and m[j] in their low six bits; for j >= 4 the low four bits of sc[j]
// and m[j] are the low and high nibble of scales[j+4] and their top two bits
// sit in the top bits of scales[j-4] and scales[j]. The 128 code bytes hold
// 64-element chunks: sub-block 2k in the low nibbles of bytes 32k..32k+31 and
// sub-block 2k+1 in their high nibbles.

// scaleMinQ4K unpacks the 6-bit scale and min of sub-block j.
func scaleMinQ4K(scales []byte, j int) (sc, m uint8) {
	if j < 4 {
		return scales[j] & 63, scales[j+4] & 63
	}
	sc = scales[j+4]&0xf | (scales[j-4]>>6)<<4
	m = scales[j+4]>>4 | (scales[j]>>6)<<4
	return sc, m
}

func dequantQ4K(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
	dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales, qs := blk[4:16], blk[16:144]
	for k := 0; k < 4; k++ {
		sc0, m0 := scaleMinQ4K(scales, 2*k)
		sc1, m1 := scaleMinQ4K(scales, 2*k+1)
		d0, o0 := d*float32(sc0), dmin*float32(m0)
		d1, o1 := d*float32(sc1), dmin*float32(m1)
		for l := 0; l < 32; l++ {
			q := qs[32*k+l]
			y[64*k+l] = d0*float32(q&0xf) - o0
			y[64*k+32+l] = d1*float32(q>>4) - o1
		}
	}
}

// quantBlockQ4K is a straightforward (not error-minimizing) Q4_K quantizer:
// each sub-block gets an offset covering its minimum and a step covering its
// range, both rounded up to the 6-bit grids so no value falls outside.
func quantBlockQ4K(x []float32, blk []byte) {
	var codes [256]uint8
	kQuantCodes(x, blk, 15, &codes)
	qs := blk[16:144]
	clear(qs)
	for i, q := range codes {
		j, l := i/32, i%32
		qs[32*(j/2)+l] |= q << (4 * (j % 2))
	}
}

// kQuantCodes is the scale search Q4_K and Q5_K share: it writes the
// super-block's d and dmin (F16) and the eight 6-bit sub-block scales and
// offsets into blk[0:16], and each element's code in 0..top into codes.
func kQuantCodes(x []float32, blk []byte, top int, codes *[256]uint8) {
	var mins, maxs [8]float32
	var maxMin float32
	for j := 0; j < 8; j++ {
		lo, hi := float32(0), float32(0) // the offset is subtracted, so the minimum is clamped to <= 0
		for _, v := range x[32*j : 32*j+32] {
			lo, hi = min(lo, v), max(hi, v)
		}
		mins[j], maxs[j] = -lo, hi
		maxMin = max(maxMin, -lo)
	}
	dminH := f16AtLeast(maxMin / 63)
	dmin := F16ToF32(dminH)
	var m [8]uint8
	var steps [8]float32
	var maxStep float32
	for j := 0; j < 8; j++ {
		if dmin > 0 {
			m[j] = uint8(min(63, math.Ceil(float64(mins[j]/dmin))))
		}
		steps[j] = (maxs[j] + dmin*float32(m[j])) / float32(top)
		maxStep = max(maxStep, steps[j])
	}
	dH := f16AtLeast(maxStep / 63)
	d := F16ToF32(dH)
	var sc [8]uint8
	for j := 0; j < 8; j++ {
		if d > 0 {
			sc[j] = uint8(min(63, math.Ceil(float64(steps[j]/d))))
		}
	}
	binary.LittleEndian.PutUint16(blk[0:], dH)
	binary.LittleEndian.PutUint16(blk[2:], dminH)
	scales := blk[4:16]
	for j := 0; j < 4; j++ {
		scales[j] = sc[j] | (sc[j+4]>>4)<<6
		scales[j+4] = m[j] | (m[j+4]>>4)<<6
		scales[j+8] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
	}
	for j := 0; j < 8; j++ {
		step := d * float32(sc[j])
		var inv float32
		if step > 0 {
			inv = 1 / step
		}
		off := dmin * float32(m[j])
		for l := 0; l < 32; l++ {
			codes[32*j+l] = uint8(max(0, min(top, roundHalfAway((x[32*j+l]+off)*inv))))
		}
	}
}

// Q6_K: a 256-element super-block of sixteen 16-element sub-blocks; element
// i is d*scales[i/16]*(q-32) with q a 6-bit code. Each 128-element half h
// keeps the low nibbles of its codes in ql[64h:64h+64] (elements l and l+64
// share byte l, elements l+32 and l+96 share byte l+32, low nibble first) and
// the top two bits in qh[32h:32h+32] (byte l holds elements l, l+32, l+64,
// l+96 at bit offsets 0, 2, 4, 6). Then 16 int8 scales, then f16 d.

func dequantQ6K(blk []byte, y []float32) {
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			a, b, hb := ql[64*h+l], ql[64*h+l+32], qh[32*h+l]
			q1 := int(a&0xf|(hb&3)<<4) - 32
			q2 := int(b&0xf|(hb>>2&3)<<4) - 32
			q3 := int(a>>4|(hb>>4&3)<<4) - 32
			q4 := int(b>>4|(hb>>6&3)<<4) - 32
			base := 128 * h
			y[base+l] = d * float32(int8(sc[8*h+l/16])) * float32(q1)
			y[base+l+32] = d * float32(int8(sc[8*h+2+l/16])) * float32(q2)
			y[base+l+64] = d * float32(int8(sc[8*h+4+l/16])) * float32(q3)
			y[base+l+96] = d * float32(int8(sc[8*h+6+l/16])) * float32(q4)
		}
	}
}

// quantBlockQ6K is a straightforward symmetric Q6_K quantizer: each
// sub-block's step covers its largest magnitude with codes -31..31, and the
// int8 scales are rounded up on a grid of d = largest step/127.
func quantBlockQ6K(x []float32, blk []byte) {
	var steps [16]float32
	var maxStep float32
	for j := 0; j < 16; j++ {
		amax, _ := absMax(x[16*j : 16*j+16])
		steps[j] = amax / 31
		maxStep = max(maxStep, steps[j])
	}
	dH := f16AtLeast(maxStep / 127)
	d := F16ToF32(dH)
	var codes [256]uint8
	sc := blk[192:208]
	for j := 0; j < 16; j++ {
		var s int
		if d > 0 {
			s = int(min(127, math.Ceil(float64(steps[j]/d))))
		}
		sc[j] = byte(int8(s))
		step := d * float32(s)
		var inv float32
		if step > 0 {
			inv = 1 / step
		}
		for l := 0; l < 16; l++ {
			codes[16*j+l] = uint8(max(-32, min(31, roundHalfAway(x[16*j+l]*inv))) + 32)
		}
	}
	ql, qh := blk[0:128], blk[128:192]
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			c := codes[128*h:]
			q1, q2, q3, q4 := c[l], c[l+32], c[l+64], c[l+96]
			ql[64*h+l] = q1&0xf | (q3&0xf)<<4
			ql[64*h+l+32] = q2&0xf | (q4&0xf)<<4
			qh[32*h+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
	binary.LittleEndian.PutUint16(blk[208:], dH)
}

// q6kPairSumsGo sets xm[i] = 32*(xq[2i]+xq[2i+1]): the words ggml's AVX2
// Q6_K dot product subtracts from each pair of products to take the codes'
// offset 32 off (_mm256_maddubs_epi16(m32s, q8)). They depend only on the
// activations, so MatMul makes them once per call (q6kPairSums) instead of
// each weight row making them again. |32*(x+x')| <= 8192 fits int16.
func q6kPairSumsGo(xq []int8, xm []int16) {
	xm = xm[:len(xq)/2]
	for i := range xm {
		xm[i] = 32 * (int16(xq[2*i]) + int16(xq[2*i+1]))
	}
}
