package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// q5Pack stores 32 five-bit codes in the Q5_0/Q5_1 qh word and nibbles.
func q5Pack(codes [32]uint8, qhBytes, qs []byte) {
	var qh uint32
	for j := 0; j < 16; j++ {
		qs[j] = codes[j]&0xf | (codes[j+16]&0xf)<<4
		qh |= uint32(codes[j]>>4) << j
		qh |= uint32(codes[j+16]>>4) << (j + 16)
	}
	binary.LittleEndian.PutUint32(qhBytes, qh)
}

// TestQ5HandBuilt decodes blocks built by hand from the layouts: Q5_0 with
// d=2 and code (7*j) mod 32 for element j, Q5_1 with d=0.5, m=-3 and the
// same codes, so every fifth bit pattern of qh occurs.
func TestQ5HandBuilt(t *testing.T) {
	var codes [32]uint8
	for j := range codes {
		codes[j] = uint8(7 * j % 32)
	}
	q50 := make([]byte, blockQ5_0)
	binary.LittleEndian.PutUint16(q50, 0x4000) // 2.0
	q5Pack(codes, q50[2:6], q50[6:22])
	q51 := make([]byte, blockQ5_1)
	binary.LittleEndian.PutUint16(q51, 0x3800)     // 0.5
	binary.LittleEndian.PutUint16(q51[2:], 0xc200) // -3.0
	q5Pack(codes, q51[4:8], q51[8:24])
	tests := []struct {
		typ  gguf.TensorType
		data []byte
		want func(code int) float32
	}{
		{gguf.TypeQ5_0, q50, func(c int) float32 { return 2 * float32(c-16) }},
		{gguf.TypeQ5_1, q51, func(c int) float32 { return 0.5*float32(c) - 3 }},
	}
	for _, tc := range tests {
		w, err := NewWeight(tc.typ, 1, 32, tc.data)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 32)
		DequantizeRow(w, 0, got)
		for j, v := range got {
			if want := tc.want(int(codes[j])); v != want {
				t.Fatalf("%s element %d (code %d) = %g, want %g", tc.typ, j, codes[j], v, want)
			}
		}
	}
}

// TestQ5KHandBuilt decodes a Q5_K block built by hand: d=0.5, dmin=0.25,
// sub-block j has scale 10+j or 40+j and min 3*j+1 or 50+j (as in
// TestQ4KHandBuilt), and element i has code (i*5) mod 32.
func TestQ5KHandBuilt(t *testing.T) {
	var sc, m [8]uint8
	for j := 0; j < 8; j++ {
		if j < 4 {
			sc[j], m[j] = uint8(10+j), uint8(3*j+1)
		} else {
			sc[j], m[j] = uint8(40+j), uint8(50+j)
		}
	}
	blk := make([]byte, blockQ5_K)
	binary.LittleEndian.PutUint16(blk[0:], 0x3800) // 0.5
	binary.LittleEndian.PutUint16(blk[2:], 0x3400) // 0.25
	for j := 0; j < 4; j++ {
		blk[4+j] = sc[j] | (sc[j+4]>>4)<<6
		blk[8+j] = m[j] | (m[j+4]>>4)<<6
		blk[12+j] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
	}
	code := func(i int) byte { return byte(i * 5 % 32) }
	for i := 0; i < 256; i++ {
		sub, l := i/32, i%32
		if sub%2 == 0 {
			blk[48+sub/2*32+l] |= code(i) & 0xf
		} else {
			blk[48+sub/2*32+l] |= (code(i) & 0xf) << 4
		}
		blk[16+l] |= (code(i) >> 4) << sub
	}
	w, err := NewWeight(gguf.TypeQ5_K, 1, 256, blk)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 256)
	DequantizeRow(w, 0, got)
	for i, v := range got {
		j := i / 32
		want := 0.5*float32(sc[j])*float32(code(i)) - 0.25*float32(m[j])
		if v != want {
			t.Fatalf("element %d (sub-block %d, code %d) = %g, want %g", i, j, code(i), v, want)
		}
	}
}

// TestQ5DotsMatchDequantized holds the integer dot products to a float64
// product of the dequantized weights with the dequantized activation codes:
// the two decode the layout independently, so a misplaced bit shows up as a
// difference far above float32 rounding. Random bytes (any codes, any high
// bits) make the weights; their scales are set to finite values.
func TestQ5DotsMatchDequantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		typ   gguf.TensorType
		cols  int
		halfs []int // byte offsets of f16 scales in a block
	}{
		{gguf.TypeQ5_0, 96, []int{0}},
		{gguf.TypeQ5_1, 96, []int{0, 2}},
		{gguf.TypeQ5_K, 512, []int{0, 2}},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			bs, ts := tc.typ.BlockSize(), tc.typ.TypeSize()
			nb := tc.cols / bs
			data := make([]byte, nb*ts)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			for b := 0; b < nb; b++ {
				for _, off := range tc.halfs {
					binary.LittleEndian.PutUint16(data[b*ts+off:], F32ToF16(float32(rng.NormFloat64()*0.01)))
				}
			}
			w, err := NewWeight(tc.typ, 1, tc.cols, data)
			if err != nil {
				t.Fatal(err)
			}
			deq := make([]float32, tc.cols)
			DequantizeRow(w, 0, deq)
			x := randVec(rng, tc.cols)
			xq := make([]int8, tc.cols)
			var got, want, mag float64
			switch tc.typ {
			case gguf.TypeQ5_0, gguf.TypeQ5_1:
				xd, xd8, xs := make([]float32, nb), make([]float32, 8*nb), make([]float32, nb)
				quantizeQ8Go(x, xq, xd, xd8)
				q8_1Sums(x, xq, xs)
				if tc.typ == gguf.TypeQ5_0 {
					got = float64(dotQ5_0Go(data, xq, xd))
				} else {
					got = float64(dotQ5_1Go(data, xq, xd, xs))
				}
				for c, v := range deq {
					a := float64(xd[c/32]) * float64(xq[c])
					if tc.typ == gguf.TypeQ5_1 {
						// The min term meets the block's sum term s (below),
						// not the sum of the dequantized activations.
						m := float64(F16ToF32(binary.LittleEndian.Uint16(data[c/32*ts+2:])))
						want += (float64(v) - m) * a
						mag += math.Abs((float64(v) - m) * a)
						continue
					}
					want += float64(v) * a
					mag += math.Abs(float64(v) * a)
				}
				if tc.typ == gguf.TypeQ5_1 {
					for b := 0; b < nb; b++ {
						m := float64(F16ToF32(binary.LittleEndian.Uint16(data[b*ts+2:])))
						want += m * float64(xs[b])
						mag += math.Abs(m * float64(xs[b]))
					}
				}
			case gguf.TypeQ5_K:
				xd, xs := make([]float32, nb), make([]int16, 16*nb)
				quantizeQ8KGo(x, xq, xd, xs)
				got = float64(dotQ5KGo(data, xq, xd, xs))
				for c, v := range deq {
					a := float64(xd[c/256]) * float64(xq[c])
					want += float64(v) * a
					mag += math.Abs(float64(v) * a)
				}
			}
			if tol := mag*1e-6 + 1e-9; math.Abs(got-want) > tol {
				t.Fatalf("dot %g, dequantized product %g (tol %g)", got, want, tol)
			}
		})
	}
}

// TestQ8_1SumsRoundLikeGGML pins the Q8_1 sum term to ggml's x86 rule: the
// unrounded step amax/127 times the sum of the codes, then rounded to F16.
// Block 0's step 1/127 is not a half value, so using the stored (rounded)
// step instead gives a different s.
func TestQ8_1SumsRoundLikeGGML(t *testing.T) {
	x := make([]float32, 64)
	x[0] = 1
	for j := 1; j < 32; j++ {
		x[j] = float32(j) / 34
	}
	x[32] = -127 // block 1: step 1, codes exact
	x[33] = 5
	qs, d, d8, s := make([]int8, 64), make([]float32, 2), make([]float32, 16), make([]float32, 2)
	quantizeQ8(x, qs, d, d8)
	q8_1Sums(x, qs, s)
	var sum0 int32
	for _, c := range qs[:32] {
		sum0 += int32(c)
	}
	want := F16ToF32(F32ToF16(float32(1) / 127 * float32(sum0)))
	if s[0] != want {
		t.Errorf("block 0: s = %g, want %g", s[0], want)
	}
	if stored := F16ToF32(F32ToF16(d[0] * float32(sum0))); stored == want {
		t.Errorf("test input does not tell the unrounded step from the stored one (both give %g)", want)
	}
	if s[1] != -122 {
		t.Errorf("block 1: s = %g, want -122", s[1])
	}
}

// TestQ5MatMulAgainstFloat runs the Q5 types through MatMul (the dispatch,
// activation quantization and threading) against a float64 product of the
// dequantized weights, within the activation quantization's error bound.
func TestQ5MatMulAgainstFloat(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	rng := rand.New(rand.NewPCG(23, 24))
	for _, tc := range []struct {
		typ  gguf.TensorType
		cols []int
	}{
		{gguf.TypeQ5_0, []int{32, 96, 288}},
		{gguf.TypeQ5_1, []int{32, 96, 288}},
		{gguf.TypeQ5_K, []int{256, 768}},
	} {
		for _, cols := range tc.cols {
			for _, rows := range []int{1, 17} {
				for _, batch := range []int{1, 5} {
					t.Run(fmt.Sprintf("%s/%dx%d/batch%d", tc.typ, rows, cols, batch), func(t *testing.T) {
						w := mustWeight(t, tc.typ, rows, cols, randVec(rng, rows*cols))
						checkMatMul(t, p, w, randVec(rng, batch*cols), batch)
					})
				}
			}
		}
	}
}

// BenchmarkMatMulQ5 times single-threaded decode products (one activation
// row) of the five-bit types next to Q4_0 and Q4_K on a 2048x768 matrix
// (cpuGB/s: weight bytes per CPU-second of the calling thread), e.g.
//
//	go test -run '^$' -bench '^BenchmarkMatMulQ5$' -benchtime 200ms -count 5 ./runtime/cpu/internal/kernels/
//
// and the same with -tags purego for the pure-Go twins.
func BenchmarkMatMulQ5(b *testing.B) {
	p := NewPool(1)
	defer p.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	const rows, cols = 2048, 768
	for _, typ := range []gguf.TensorType{gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K, gguf.TypeQ4_0, gguf.TypeQ4_K} {
		b.Run(typ.String(), func(b *testing.B) {
			w := mustWeight(b, typ, rows, cols, randVec(rng, rows*cols))
			x := randVec(rng, cols)
			out := make([]float32, rows)
			p.MatMul(out, w, x, 1)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPUTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.MatMul(out, w, x, 1)
			}
			b.StopTimer()
			if cpu := (threadCPUTime() - cpu0).Seconds() / float64(b.N); cpu > 0 {
				b.ReportMetric(float64(len(w.Data))/cpu/1e9, "cpuGB/s")
			}
		})
	}
}
