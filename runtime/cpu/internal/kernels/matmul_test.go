package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// actBlock is the block length of the activation quantization the kernels
// use for a weight type (0 for float weights): each activation may be off by
// half of its block's step.
func actBlock(typ gguf.TensorType) int {
	switch typ {
	case gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ5_1:
		return 32
	case gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K:
		return 256
	}
	return 0
}

// actRelErr is the relative error of rounding an activation (or, for Q8_0
// activations, their half-precision block step) for a weight type: half an
// ulp of F16 or BF16.
func actRelErr(typ gguf.TensorType) float64 {
	switch typ {
	case gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ5_1:
		return 0x1p-11
	case gguf.TypeBF16:
		return 0x1p-8
	}
	return 0
}

// checkMatMul compares MatMul with a float64 product of the dequantized
// weights; the tolerance is the activation quantization error (half a step
// per element times |w|, plus the rounding of the activations or of their
// block step to 16 bits) plus float32 rounding. Q5_1 adds the rounding of
// the Q8_1 sum term, which meets the block minimum m: 2^-10 of |m| times the
// block's sum of |x| (the term and the stored step each round once).
func checkMatMul(t *testing.T, p *Pool, w *Weight, x []float32, batch int) {
	t.Helper()
	deq := dequantAll(w)
	out := make([]float32, batch*w.Rows+1)
	out[batch*w.Rows] = 42 // must not be written
	p.MatMul(out, w, x, batch)
	if out[batch*w.Rows] != 42 {
		t.Fatalf("MatMul wrote past batch*Rows")
	}
	ab, rel := actBlock(w.Type), actRelErr(w.Type)
	for b := 0; b < batch; b++ {
		xb := x[b*w.Cols : (b+1)*w.Cols]
		for r := 0; r < w.Rows; r++ {
			row := deq[r*w.Cols : (r+1)*w.Cols]
			var want, mag, qerr float64
			for c, v := range row {
				want += float64(v) * float64(xb[c])
				mag += math.Abs(float64(v) * float64(xb[c]))
				qerr += math.Abs(float64(v)*float64(xb[c])) * rel
				if ab > 0 {
					blk := xb[c/ab*ab : c/ab*ab+ab]
					qerr += math.Abs(float64(v)) * maxAbs(blk) / 127 * 0.5
				}
				if w.Type == gguf.TypeQ5_1 {
					m := F16ToF32(binary.LittleEndian.Uint16(w.Data[r*w.rowBytes()+c/32*blockQ5_1+2:]))
					qerr += math.Abs(float64(m)*float64(xb[c])) * 0x1p-10
				}
			}
			tol := qerr*1.001 + mag*2e-6 + 1e-6
			if got := float64(out[b*w.Rows+r]); math.Abs(got-want) > tol {
				t.Fatalf("%s %dx%d batch %d: out[%d][%d] = %g, want %g (tol %g)", w.Type, w.Rows, w.Cols, batch, b, r, got, want, tol)
			}
		}
	}
}

func TestMatMul(t *testing.T) {
	p := NewPool(3) // more threads than cores: exercises the hand-off
	defer p.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	types := []struct {
		typ  gguf.TensorType
		cols []int
	}{
		{gguf.TypeF32, []int{1, 7, 37, 64, 288}},
		{gguf.TypeF16, []int{1, 7, 37, 64, 172}},
		{gguf.TypeBF16, []int{5, 64}},
		{gguf.TypeQ8_0, []int{32, 96, 288}},
		{gguf.TypeQ4_0, []int{32, 96, 288}},
		{gguf.TypeQ4_K, []int{256, 768}},
		{gguf.TypeQ6_K, []int{256, 768}},
	}
	for _, tc := range types {
		for _, cols := range tc.cols {
			for _, rows := range []int{1, 17} {
				for _, batch := range []int{1, 5, 9} {
					name := fmt.Sprintf("%s/%dx%d/batch%d", tc.typ, rows, cols, batch)
					t.Run(name, func(t *testing.T) {
						w := mustWeight(t, tc.typ, rows, cols, randVec(rng, rows*cols))
						checkMatMul(t, p, w, randVec(rng, batch*cols), batch)
					})
				}
			}
		}
	}
}

func TestMatMulSingleThread(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	w := mustWeight(t, gguf.TypeQ8_0, 9, 64, randVec(rng, 9*64))
	checkMatMul(t, p, w, randVec(rng, 3*64), 3)
}

func TestMatMulNoAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K,
		gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K} {
		w := mustWeight(t, typ, 64, 256, randVec(rng, 64*256))
		x := randVec(rng, 4*256)
		out := make([]float32, 4*64)
		p.MatMul(out, w, x, 4) // sizes the scratch buffers
		if a := testing.AllocsPerRun(20, func() { p.MatMul(out, w, x, 4) }); a != 0 {
			t.Errorf("%s: MatMul allocates %v times per call", typ, a)
		}
	}
}

func TestMatMulPanicsOnShortSlices(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	w := mustWeight(t, gguf.TypeF32, 2, 4, make([]float32, 8))
	defer func() {
		if recover() == nil {
			t.Error("MatMul with a short x did not panic")
		}
	}()
	p.MatMul(make([]float32, 4), w, make([]float32, 7), 2)
}

// TestMatMulHalfRoundsActivations checks that F16 and BF16 products use the
// activations rounded to the weight type, as ggml does: a one-hot weight row
// picks out one activation, which must come back rounded (ties to even).
func TestMatMulHalfRoundsActivations(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	const cols = 16
	for _, tc := range []struct {
		typ  gguf.TensorType
		x    float32
		want float32
	}{
		{gguf.TypeF16, 1 + 0x1p-11, 1}, // a tie: to even
		{gguf.TypeF16, 1 + 0x1p-11 + 0x1p-20, 1 + 0x1p-10},
		{gguf.TypeF16, 70000, float32(math.Inf(1))}, // beyond the half range
		{gguf.TypeBF16, 1 + 0x1p-8, 1},
		{gguf.TypeBF16, 1 + 3*0x1p-8, 1 + 0x1p-6},
	} {
		row := make([]float32, cols)
		row[3] = 1
		w := mustWeight(t, tc.typ, 1, cols, row)
		x := make([]float32, cols)
		x[3] = tc.x
		out := make([]float32, 1)
		p.MatMul(out, w, x, 1)
		if out[0] != tc.want {
			t.Errorf("%s: activation %v gives %v, want %v", tc.typ, tc.x, out[0], tc.want)
		}
	}
}

// TestMatMulQ8_0BatchInvariant checks that a Q8_0 product's row for one
// activation does not depend on how many others share the call, from two
// on (the VNNI tiles of 1-4 and of 8 activation rows add each block in the
// same order; without them every batch runs the same row kernel): every
// batch of 2..9 rows equals, bit for bit, the same rows of one 12-row
// product, and writes nothing past its own outputs.
func TestMatMulQ8_0BatchInvariant(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	const rows, cols, all = 17, 288, 12
	w := mustWeight(t, gguf.TypeQ8_0, rows, cols, randVec(rng, rows*cols))
	x := randVec(rng, all*cols)
	want := make([]float32, all*rows)
	p.MatMul(want, w, x, all)
	for batch := 2; batch <= 9; batch++ {
		out := make([]float32, batch*rows+1)
		out[batch*rows] = 42 // must not be written
		p.MatMul(out, w, x, batch)
		if out[batch*rows] != 42 {
			t.Fatalf("batch %d: MatMul wrote past batch*Rows", batch)
		}
		for i, got := range out[:batch*rows] {
			if got != want[i] {
				t.Fatalf("batch %d: out[%d][%d] = %g, the 12-row product has %g", batch, i/rows, i%rows, got, want[i])
			}
		}
		if a := testing.AllocsPerRun(5, func() { p.MatMul(out, w, x, batch) }); a != 0 {
			t.Fatalf("batch %d: %v allocations per MatMul", batch, a)
		}
	}
}

// TestMatMulQ8_0SharedWeight runs the first eight-row products of one
// Q8_0 weight from two pools at once (engines may share a weight): the
// weight's correction table is made once, without a race (-race), and
// both results equal a later product's.
func TestMatMulQ8_0SharedWeight(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	const rows, cols, batch = 12, 96, 8
	w := mustWeight(t, gguf.TypeQ8_0, rows, cols, randVec(rng, rows*cols))
	x := randVec(rng, batch*cols)
	outs := [2][]float32{make([]float32, batch*rows), make([]float32, batch*rows)}
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := NewPool(1)
			defer p.Close()
			p.MatMul(outs[i], w, x, batch)
		}()
	}
	wg.Wait()
	p := NewPool(1)
	defer p.Close()
	want := make([]float32, batch*rows)
	p.MatMul(want, w, x, batch)
	for i := range outs {
		for j, got := range outs[i] {
			if got != want[j] {
				t.Fatalf("pool %d: out[%d][%d] = %g, want %g", i, j/rows, j%rows, got, want[j])
			}
		}
	}
}

// TestQ8Pack checks q8PackGo's layout element by element against its
// documented formula, rows of code 0 padding the last group included.
func TestQ8Pack(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, batch := range []int{1, 5, 8, 11} {
		const cols = 96
		nb := cols / 32
		xq := make([]int8, batch*cols)
		for i := range xq {
			xq[i] = int8(rng.IntN(256) - 128)
		}
		xd := randVec(rng, batch*nb)
		groups := (batch + 7) / 8
		xp := make([]int8, groups*8*cols)
		xpd := make([]float32, groups*16*nb)
		for i := range xp {
			xp[i] = 99 // padding must be overwritten
		}
		for i := range xpd {
			xpd[i] = 99
		}
		q8PackGo(xq, xd, batch, cols, xp, xpd)
		for g := range groups {
			for k := range nb {
				for b := range 8 {
					row := 8*g + b
					for c := range 32 {
						code := int8(0)
						if row < batch {
							code = xq[row*cols+32*k+c]
						}
						want := uint8(int(code) + 128) // unsigned: code+128
						if got := uint8(xp[(g*nb+k)*256+64*(c/8)+8*b+c%8]); got != want {
							t.Fatalf("batch %d group %d block %d row %d code %d: %d, want %d", batch, g, k, b, c, got, want)
						}
					}
					wantD := float32(0)
					if row < batch {
						wantD = xd[row*nb+k]
					}
					for h := range 2 {
						if i := (g*nb+k)*16 + 2*b + h; xpd[i] != wantD {
							t.Fatalf("batch %d group %d block %d row %d lane %d: scale %g, want %g", batch, g, k, b, h, xpd[i], wantD)
						}
					}
				}
			}
		}
	}
}

// TestQ8VNNICorr checks the weight's per-block code sums against a plain
// sum, in their four-row tile order, on random rows and on rows of all
// -128 and all 127 codes; the fifth row, in no tile, has none.
func TestQ8VNNICorr(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const rows, nb = 5, 3
	rb := nb * blockQ8_0
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for k := range nb {
		for c := range 32 {
			data[0*rb+k*blockQ8_0+2+c] = 0x80 // -128
			data[1*rb+k*blockQ8_0+2+c] = 0x7f // 127
		}
	}
	corr := q8VNNICorr(data, rows, nb, rb)
	if len(corr) != 4*nb {
		t.Fatalf("%d sums, want %d (one tile of four rows)", len(corr), 4*nb)
	}
	for r := range 4 {
		for k := range nb {
			var sum int32
			for c := range 32 {
				sum += int32(int8(data[r*rb+k*blockQ8_0+2+c]))
			}
			if got := int32(corr[k*4+r]); got != sum {
				t.Fatalf("row %d block %d: %d, want %d", r, k, got, sum)
			}
		}
	}
}

// TestCodeSum32 checks the SWAR code sum at the extremes of the lanes
// (every code -128 or 127) and on random codes.
func TestCodeSum32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for n := range 102 {
		var codes [32]int8
		var want int32
		for i := range codes {
			switch {
			case n == 0:
				codes[i] = -128
			case n == 1:
				codes[i] = 127
			default:
				codes[i] = int8(rng.IntN(256) - 128)
			}
			want += int32(codes[i])
		}
		q := (*[4]uint64)(int8Quads(codes[:]))
		if got := codeSum32(q); got != want {
			t.Fatalf("codes %v: sum %d, want %d", codes, got, want)
		}
	}
}
