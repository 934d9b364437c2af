package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func mustWeight(t testing.TB, typ gguf.TensorType, rows, cols int, src []float32) *Weight {
	t.Helper()
	data, err := Quantize(typ, src)
	if err != nil {
		t.Fatalf("Quantize(%s, %d): %v", typ, len(src), err)
	}
	w, err := NewWeight(typ, rows, cols, data)
	if err != nil {
		t.Fatalf("NewWeight: %v", err)
	}
	return w
}

func dequantAll(w *Weight) []float32 {
	out := make([]float32, w.Rows*w.Cols)
	for r := 0; r < w.Rows; r++ {
		DequantizeRow(w, r, out[r*w.Cols:(r+1)*w.Cols])
	}
	return out
}

func maxAbs(x []float32) float64 {
	var m float64
	for _, v := range x {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// f16Err bounds the rounding error of storing v in half precision (relative
// for normals, absolute in the subnormal range).
func f16Err(v float64) float64 { return math.Max(math.Abs(v)*0x1p-11, 0x1p-25) }

func minMax(x []float32) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range x {
		lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
	}
	return lo, hi
}

func rangeWithZero(x []float32) float64 {
	lo, hi := 0.0, 0.0
	for _, v := range x {
		lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
	}
	return hi - lo
}

// TestQuantizeRoundTrip checks dequant(quant(x)) against x within each
// format's error bound, computed independently of the quantizer.
func TestQuantizeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		typ   gguf.TensorType
		block int
		// bound is the largest error allowed for element i of block blk.
		bound func(blk []float32, i int) float64
	}{
		{gguf.TypeF32, 1, func([]float32, int) float64 { return 0 }},
		{gguf.TypeF16, 1, func(b []float32, i int) float64 { return math.Abs(float64(b[i])) * 0x1p-11 }},
		{gguf.TypeBF16, 1, func(b []float32, i int) float64 { return math.Abs(float64(b[i])) * 0x1p-8 }},
		// step amax/127 (stored in f16): error at most half a step plus the scale's rounding.
		{gguf.TypeQ8_0, 32, func(b []float32, _ int) float64 { return maxAbs(b)/127*0.5 + 127*f16Err(maxAbs(b)/127) }},
		// step amax/8; the far end of the asymmetric range may clamp by a full step.
		{gguf.TypeQ4_0, 32, func(b []float32, _ int) float64 { return maxAbs(b)/8 + 8*f16Err(maxAbs(b)/8) }},
		// step amax/16, asymmetric like Q4_0.
		{gguf.TypeQ5_0, 32, func(b []float32, _ int) float64 { return maxAbs(b)/16 + 16*f16Err(maxAbs(b)/16) }},
		// half of the range over 31 steps, plus the half-precision step and minimum.
		{gguf.TypeQ5_1, 32, func(b []float32, _ int) float64 {
			lo, hi := minMax(b)
			return 0.5*(hi-lo)/31 + 31*f16Err((hi-lo)/31) + f16Err(lo)
		}},
		// a 32-element sub-block's range over 31 steps, plus slack for the 6-bit scale grid.
		{gguf.TypeQ5_K, 256, func(b []float32, i int) float64 {
			sub := b[i/32*32 : i/32*32+32]
			return 0.5*(rangeWithZero(sub)/31+rangeWithZero(b)/31/63)*1.01 + maxAbs(b)/63/31
		}},
		// a 32-element sub-block's range over 15 steps, plus slack for the 6-bit scale grid.
		{gguf.TypeQ4_K, 256, func(b []float32, i int) float64 {
			sub := b[i/32*32 : i/32*32+32]
			return 0.5*(rangeWithZero(sub)/15+rangeWithZero(b)/15/63)*1.01 + maxAbs(b)/63/15
		}},
		// a 16-element sub-block's magnitude over 31 steps, plus the int8 scale grid.
		{gguf.TypeQ6_K, 256, func(b []float32, i int) float64 {
			sub := b[i/16*16 : i/16*16+16]
			return 0.5 * (maxAbs(sub)/31 + maxAbs(b)/31/127) * 1.01
		}},
	}
	for _, tc := range tests {
		for _, rows := range []int{1, 3} {
			cols := tc.block * 3
			if tc.block == 1 {
				cols = 37
			}
			t.Run(fmt.Sprintf("%s/%dx%d", tc.typ, rows, cols), func(t *testing.T) {
				src := randVec(rng, rows*cols)
				// Scale some blocks to exercise the scales' range, zero one.
				for i := range src {
					switch (i / max(tc.block, 32)) % 4 {
					case 1:
						src[i] *= 100
					case 2:
						src[i] *= 0.001
					case 3:
						if i < 2*max(tc.block, 32)*4 {
							src[i] = 0
						}
					}
				}
				w := mustWeight(t, tc.typ, rows, cols, src)
				got := dequantAll(w)
				for i, v := range src {
					bs := max(tc.block, 1)
					b0 := i / bs * bs
					blk := src[b0 : b0+bs]
					if tc.block == 1 {
						blk = src[i : i+1]
					}
					bound := tc.bound(blk, i-b0) + 1e-12
					if tc.block == 1 {
						bound = tc.bound(blk, 0)
					}
					if e := math.Abs(float64(got[i]) - float64(v)); e > bound {
						t.Fatalf("element %d: %g -> %g, error %g > bound %g", i, v, got[i], e, bound)
					}
				}
			})
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	if _, err := Quantize(gguf.TypeQ8_0, make([]float32, 33)); err == nil {
		t.Error("Quantize(Q8_0, 33 values) succeeded")
	}
	if _, err := Quantize(gguf.TypeQ4_1, make([]float32, 32)); err == nil {
		t.Error("Quantize(Q4_1) succeeded")
	}
	if _, err := NewWeight(gguf.TypeQ8_0, 2, 32, make([]byte, 67)); err == nil {
		t.Error("NewWeight with a short buffer succeeded")
	}
	if _, err := NewWeight(gguf.TypeQ4_K, 1, 128, make([]byte, 72)); err == nil {
		t.Error("NewWeight with a partial Q4_K block succeeded")
	}
	if _, err := NewWeight(gguf.TypeF32, 0, 4, nil); err == nil {
		t.Error("NewWeight with zero rows succeeded")
	}
}

// TestQ4KHandBuilt decodes a block built by hand from the layout: d=0.5,
// dmin=0.25, sub-block j has scale 10+j (j<4) or 40+j (j>=4, needing the high
// bits) and min 3*j+1 (or 50+j), codes q = (element index) mod 16.
func TestQ4KHandBuilt(t *testing.T) {
	var sc, m [8]uint8
	for j := 0; j < 8; j++ {
		if j < 4 {
			sc[j], m[j] = uint8(10+j), uint8(3*j+1)
		} else {
			sc[j], m[j] = uint8(40+j), uint8(50+j)
		}
	}
	blk := make([]byte, blockQ4_K)
	binary.LittleEndian.PutUint16(blk[0:], 0x3800) // 0.5
	binary.LittleEndian.PutUint16(blk[2:], 0x3400) // 0.25
	for j := 0; j < 4; j++ {
		blk[4+j] = sc[j] | (sc[j+4]>>4)<<6
		blk[8+j] = m[j] | (m[j+4]>>4)<<6
		blk[12+j] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
	}
	for i := 0; i < 256; i++ {
		code := byte(i % 16)
		if i%64 < 32 {
			blk[16+i/64*32+i%32] |= code
		} else {
			blk[16+i/64*32+i%32] |= code << 4
		}
	}
	w, err := NewWeight(gguf.TypeQ4_K, 1, 256, blk)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 256)
	DequantizeRow(w, 0, got)
	for i, v := range got {
		j := i / 32
		want := 0.5*float32(sc[j])*float32(i%16) - 0.25*float32(m[j])
		if v != want {
			t.Fatalf("element %d (sub-block %d) = %g, want %g", i, j, v, want)
		}
	}
}

// TestQ6KHandBuilt decodes a Q6_K block built by hand: d=0.125, scale of
// sub-block g is g-8 (negative ones included), code of element i is i mod 64.
func TestQ6KHandBuilt(t *testing.T) {
	blk := make([]byte, blockQ6_K)
	for i := 0; i < 256; i++ {
		h, e := i/128, i%128
		l, quarter := e%32, e/32
		code := byte(i % 64)
		switch quarter {
		case 0:
			blk[64*h+l] |= code & 0xf
		case 1:
			blk[64*h+32+l] |= code & 0xf
		case 2:
			blk[64*h+l] |= (code & 0xf) << 4
		case 3:
			blk[64*h+32+l] |= (code & 0xf) << 4
		}
		blk[128+32*h+l] |= (code >> 4) << (2 * quarter)
	}
	for g := 0; g < 16; g++ {
		blk[192+g] = byte(int8(g - 8))
	}
	binary.LittleEndian.PutUint16(blk[208:], 0x3000) // 0.125
	w, err := NewWeight(gguf.TypeQ6_K, 1, 256, blk)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 256)
	DequantizeRow(w, 0, got)
	for i, v := range got {
		want := 0.125 * float32(i/16-8) * float32(i%64-32)
		if v != want {
			t.Fatalf("element %d = %g, want %g", i, v, want)
		}
	}
}

func TestQ8_0AndQ4_0HandBuilt(t *testing.T) {
	q8 := make([]byte, blockQ8_0)
	binary.LittleEndian.PutUint16(q8, 0x3c00) // 1.0
	for j := 0; j < 32; j++ {
		q8[2+j] = byte(int8(j - 16))
	}
	q4 := make([]byte, blockQ4_0)
	binary.LittleEndian.PutUint16(q4, 0x4000) // 2.0
	for j := 0; j < 16; j++ {
		q4[2+j] = byte(j) | byte(15-j)<<4
	}
	got := make([]float32, 32)
	DequantizeRow(&Weight{Type: gguf.TypeQ8_0, Rows: 1, Cols: 32, Data: q8}, 0, got)
	for j, v := range got {
		if v != float32(j-16) {
			t.Fatalf("Q8_0 element %d = %g, want %d", j, v, j-16)
		}
	}
	DequantizeRow(&Weight{Type: gguf.TypeQ4_0, Rows: 1, Cols: 32, Data: q4}, 0, got)
	for j, v := range got {
		code := j
		if j >= 16 {
			code = 15 - (j - 16)
		}
		if want := 2 * float32(code-8); v != want {
			t.Fatalf("Q4_0 element %d = %g, want %g", j, v, want)
		}
	}
}

func TestRoundHalfAway(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want int
	}{
		{0, 0}, {0.49999997, 0}, {0.5, 1}, {-0.5, -1}, {2.5, 3}, {-2.5, -3},
		{1.4999999, 1}, {-1.4999999, -1}, {126.5, 127}, {-127.49, -127},
	} {
		if got := roundHalfAway(c.in); got != c.want {
			t.Errorf("roundHalfAway(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestQuantizeParallelMatchesSerial checks that a tensor large enough to be
// split over goroutines encodes exactly as one serial pass.
func TestQuantizeParallelMatchesSerial(t *testing.T) {
	if testing.Short() {
		t.Skip("large tensor")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	src := randVec(rng, 40000*32)
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeF16} {
		got, err := Quantize(typ, src)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, len(got))
		quantizeBlocks(typ, src, want)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: parallel and serial encodings differ", typ)
		}
	}
}

// TestActivationQuantizersRoundLikeGGML pins the rounding rules of the
// activation quantizers to ggml's (quantize_row_q8_0 on x86 and
// quantize_row_q8_K) on hand-picked values where other reasonable rules
// give different codes or scales.
func TestActivationQuantizersRoundLikeGGML(t *testing.T) {
	t.Run("q8_0", func(t *testing.T) {
		x := make([]float32, 64)
		x[0] = 1 // block 0's amax: step 1/127, which half precision cannot hold
		x[3] = -1
		x[32] = 127  // block 1's amax: step 1, x*127/amax is exact
		x[33] = 0.5  // ties go to even (0), not away from zero
		x[34] = 1.5  // (2)
		x[35] = -2.5 // (-2)
		qs, d, d8 := make([]int8, 64), make([]float32, 2), make([]float32, 16)
		quantizeQ8(x, qs, d, d8)
		if want := F16ToF32(F32ToF16(float32(1) / 127)); d[0] != want || d[0] == float32(1)/127 {
			t.Errorf("scale %g, want the half-precision step %g", d[0], want)
		}
		for i, v := range d8 {
			if v != d[i/8] {
				t.Fatalf("broadcast scale %d: %g, want %g", i, v, d[i/8])
			}
		}
		if qs[0] != 127 || qs[3] != -127 {
			t.Errorf("block 0 codes %d %d, want 127 -127", qs[0], qs[3])
		}
		if d[1] != 1 || qs[33] != 0 || qs[34] != 2 || qs[35] != -2 {
			t.Errorf("block 1: scale %g, codes %v; want 1 and [0 2 -2]", d[1], qs[33:36])
		}
	})
	t.Run("q8_K", func(t *testing.T) {
		x := make([]float32, 256)
		x[5] = 2   // first element of largest magnitude: iscale = -127/2
		x[9] = -2  // same magnitude, later: not the max, code +127
		x[10] = 1  // -63.5: ties go to even (-64)
		x[11] = -1 // 63.5 -> 64
		qs, d, sums := make([]int8, 256), make([]float32, 1), make([]int16, 16)
		quantizeQ8KGo(x, qs, d, sums)
		if want := 1 / (float32(-127) / 2); d[0] != want {
			t.Errorf("scale %g, want %g (1/iscale, negative for a positive max)", d[0], want)
		}
		if qs[5] != -127 || qs[9] != 127 || qs[10] != -64 || qs[11] != 64 {
			t.Errorf("codes %d %d %d %d, want -127 127 -64 64", qs[5], qs[9], qs[10], qs[11])
		}
		if sums[0] != -127+127-64+64 {
			t.Errorf("sum of the first 16 codes %d, want 0", sums[0])
		}
		zero := make([]float32, 256)
		quantizeQ8KGo(zero, qs, d, sums)
		if d[0] != 0 || qs[5] != 0 || sums[0] != 0 {
			t.Errorf("all-zero block: scale %g, code %d, sum %d; want zeros", d[0], qs[5], sums[0])
		}
	})
}

// TestQ6KPairSums requires q6kPairSums to give 32*(x[2i]+x[2i+1]) for
// every pair, the extremes included (they must not wrap int16).
func TestQ6KPairSums(t *testing.T) {
	xq := []int8{-128, -128, 127, 127, -128, 127, 0, 1, 5, -7}
	want := []int16{-8192, 8128, -32, 32, -64}
	got := make([]int16, len(xq)/2)
	q6kPairSums(xq, got)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d (%d, %d): %d, want %d", i, xq[2*i], xq[2*i+1], got[i], want[i])
		}
	}
}
