//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// These tests hold the assembly to its pure-Go twin on random inputs:
// bit-exact where the result is integer or elementwise, within float
// reassociation error for sums.

func skipNoAsm(t *testing.T) {
	if !haveAsm {
		t.Skip("CPU lacks AVX2/FMA: the assembly is not used here")
	}
}

func closeSum(t *testing.T, what string, got, want, mag float32) {
	t.Helper()
	if math.Abs(float64(got-want)) > 1e-5*float64(mag)+1e-6 {
		t.Fatalf("%s: asm %g, go %g", what, got, want)
	}
}

func absDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += float32(math.Abs(float64(a[i] * b[i])))
	}
	return s
}

func TestAsmF32(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{8, 16, 24, 40, 64, 200, 288} {
		a, b := randVec(rng, n), randVec(rng, n)
		closeSum(t, "dotF32AVX", dotF32AVX(a, b), dotF32Go(a, b), absDot(a, b))
		y1 := randVec(rng, n)
		y2 := append([]float32(nil), y1...)
		axpyF32AVX(0.75, a, y1)
		axpyGo(0.75, a, y2)
		for i := range y1 {
			if math.Abs(float64(y1[i]-y2[i])) > 1e-6*(1+math.Abs(float64(y2[i]))) {
				t.Fatalf("axpy n=%d [%d]: %g vs %g", n, i, y1[i], y2[i])
			}
		}
		// 4 rows with a stride larger than n, 3 activation rows.
		stride := n + 5
		w := randVec(rng, 4*stride)
		x := randVec(rng, 3*stride)
		out := make([]float32, 3*10)
		f32Tile4x3(w, stride, x, stride, n, out, 10)
		out1 := make([]float32, 4)
		f32Tile4x1(w, stride, x, n, out1)
		outRows := make([]float32, 4)
		dotF32Rows(w, stride, x, n, outRows)
		for r := 0; r < 4; r++ {
			closeSum(t, "dotF32Rows", outRows[r], dotF32Go(w[r*stride:r*stride+n], x[:n]), absDot(w[r*stride:r*stride+n], x[:n]))
		}
		x8 := randVec(rng, 8*stride)
		out8 := make([]float32, 7*3+1)
		f32Tile1x8(w, x8, stride, n, out8, 3)
		for b := 0; b < 8; b++ {
			xb := x8[b*stride : b*stride+n]
			closeSum(t, "f32Tile1x8", out8[b*3], dotF32Go(w[:n], xb), absDot(w[:n], xb))
		}
		for r := 0; r < 4; r++ {
			wr := w[r*stride : r*stride+n]
			closeSum(t, "f32Tile4x1", out1[r], dotF32Go(wr, x[:n]), absDot(wr, x[:n]))
			for b := 0; b < 3; b++ {
				xb := x[b*stride : b*stride+n]
				closeSum(t, "f32Tile4x3", out[b*10+r], dotF32Go(wr, xb), absDot(wr, xb))
			}
		}
	}
}

// TestAsmF16 requires the F16 assembly to equal its pure-Go twins bit for
// bit: both add in ggml's order (f16order.go), and the cross-check against
// llama.cpp depends on that order, not on closeness.
func TestAsmF16(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(27, 28))
	// Scale 1 keeps the vec leftovers on f16DotVec4LoopAVX's vectorized path;
	// scale 64 with tiny activations (F16 subnormals, so products near
	// 2^-40) among the leftovers fails both of its exactness tests and
	// takes the sequential float64 loop.
	for _, tc := range []struct{ n, scale int }{{16, 1}, {32, 1}, {48, 1}, {64, 1}, {128, 1}, {144, 1}, {192, 1}, {256, 1}, {320, 1}, {144, 64}, {320, 64}} {
		n := tc.n
		stride := n + 16
		src := randVec(rng, 4*stride)
		w := make([]uint16, len(src))
		F32ToF16Slice(w, src)
		x := randVec(rng, 3*stride)
		for i := range x {
			x[i] *= float32(tc.scale)
			if tc.scale > 1 && i%7 == 3 {
				x[i] = 3e-7
			}
		}
		roundToF16Go(x, x)
		out41 := make([]float32, 4)
		f16Gemm4x1LoopAVX(w, stride, 4*stride, 1, x, n, out41, nil)
		vec4 := make([]float32, 4)
		f16DotVec4LoopAVX(w, stride, 4*stride, 1, x, n-3, vec4)
		rows := make([]float32, 4)
		if n%f16VecLanes == 0 {
			f16VecRows(w, stride, x, n, rows)
			for r := range rows {
				if want := dotF16VecGo(w[r*stride:r*stride+n], x[:n]); math.Float32bits(rows[r]) != math.Float32bits(want) {
					t.Errorf("n=%d f16VecRows row %d = %g, dotF16VecGo %g", n, r, rows[r], want)
				}
			}
		}
		out43 := make([]float32, 2*6+4)
		f16Gemm4x3AVX(w, stride, x, stride, n, out43, 6)
		for r := 0; r < 4; r++ {
			wr := w[r*stride : r*stride+n]
			want := dotF16GemmGo(wr, x[:n])
			if math.Float32bits(out41[r]) != math.Float32bits(want) {
				t.Errorf("n=%d f16Gemm4x1LoopAVX row %d = %g, dotF16GemmGo %g", n, r, out41[r], want)
			}
			if want := dotF16VecGo(wr[:n-3], x[:n-3]); math.Float32bits(vec4[r]) != math.Float32bits(want) {
				t.Errorf("n=%d f16DotVec4LoopAVX row %d = %g, dotF16VecGo %g", n-3, r, vec4[r], want)
			}
			for _, m := range []int{n, n - 3, n &^ 63} {
				got, want := f16DotVecAVX(wr[:m], x[:m]), dotF16VecGo(wr[:m], x[:m])
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d f16DotVecAVX row %d = %g, dotF16VecGo %g", m, r, got, want)
				}
			}
			for b := 0; b < 3; b++ {
				want := dotF16GemmGo(wr, x[b*stride:b*stride+n])
				if got := out43[b*6+r]; math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d f16Gemm4x3AVX row %d batch %d = %g, dotF16GemmGo %g", n, r, b, got, want)
				}
			}
		}
	}
}

// TestAsmMatMulF16 runs whole products through both F16 paths (the gemm and
// vec orders, with and without a tail past the last 64) and requires the
// assembly's results to equal the pure-Go ones exactly.
func TestAsmMatMulF16(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(29, 30))
	p := NewPool(2)
	defer p.Close()
	for _, sh := range []struct{ rows, cols, batch int }{
		{64, 64, 1}, {64, 64, 5}, {172, 64, 7}, {64, 172, 1}, {64, 172, 4}, {36, 256, 3}, {30, 128, 2}, {8, 40, 3},
	} {
		w := mustWeight(t, gguf.TypeF16, sh.rows, sh.cols, randVec(rng, sh.rows*sh.cols))
		x := randVec(rng, sh.batch*sh.cols)
		got := make([]float32, sh.batch*sh.rows)
		p.MatMul(got, w, x, sh.batch)
		want := make([]float32, len(got))
		xr := make([]float32, len(x))
		roundToF16Go(xr, x)
		j := &matmulJob{out: want, w: w, x: xr, batch: sh.batch, rowBytes: 2 * sh.cols}
		matmulF16Go(j, 0, sh.rows)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%dx%d batch %d: out[%d] = %g, pure Go %g", sh.rows, sh.cols, sh.batch, i, got[i], want[i])
				break
			}
		}
	}
}

// TestAsmBF16 requires the BF16 assembly to equal its pure-Go twins bit
// for bit (bf16order.go), through the kernels and whole products.
func TestAsmBF16(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(39, 40))
	for _, n := range []int{32, 64, 96, 128, 160, 256, 320} {
		stride := n + 16
		w := make([]uint16, 4*stride)
		for i, v := range randVec(rng, len(w)) {
			w[i] = F32ToBF16(v)
		}
		src := randVec(rng, stride)
		x, xh := make([]float32, stride), make([]uint16, stride)
		roundToBF16(x, xh, src)
		out := make([]float32, 4)
		bf16Gemm4x1AVX(w, stride, xh, n, out)
		vec4 := make([]float32, 4)
		bf16DotVec4AVX(w, stride, xh, n+7, vec4)
		for r := 0; r < 4; r++ {
			wr := w[r*stride : r*stride+n]
			if want := dotBF16GemmGo(wr, x[:n]); math.Float32bits(out[r]) != math.Float32bits(want) {
				t.Errorf("n=%d bf16Gemm4x1AVX row %d = %g, dotBF16GemmGo %g", n, r, out[r], want)
			}
			if want := dotBF16VecGo(w[r*stride:r*stride+n+7], x[:n+7]); math.Float32bits(vec4[r]) != math.Float32bits(want) {
				t.Errorf("n=%d bf16DotVec4AVX row %d = %g, dotBF16VecGo %g", n+7, r, vec4[r], want)
			}
			for _, m := range []int{n, n - 3, n + 7} {
				wm := w[r*stride : r*stride+m]
				if got, want := bf16DotVecAVX(wm, xh[:m]), dotBF16VecGo(wm, x[:m]); math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d bf16DotVecAVX row %d = %g, dotBF16VecGo %g", m, r, got, want)
				}
			}
		}
	}
	p := NewPool(2)
	defer p.Close()
	for _, sh := range []struct{ rows, cols, batch int }{
		{64, 64, 1}, {64, 64, 5}, {172, 64, 3}, {64, 172, 1}, {64, 172, 4}, {36, 256, 3}, {30, 128, 2},
	} {
		w := mustWeight(t, gguf.TypeBF16, sh.rows, sh.cols, randVec(rng, sh.rows*sh.cols))
		x := randVec(rng, sh.batch*sh.cols)
		got := make([]float32, sh.batch*sh.rows)
		p.MatMul(got, w, x, sh.batch)
		want := make([]float32, len(got))
		xr, xh := make([]float32, len(x)), make([]uint16, len(x))
		roundToBF16(xr, xh, x)
		matmulBF16Go(&matmulJob{out: want, w: w, x: xr, batch: sh.batch, rowBytes: 2 * sh.cols}, 0, sh.rows)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("BF16 %dx%d batch %d: out[%d] = %g, pure Go %g", sh.rows, sh.cols, sh.batch, i, got[i], want[i])
				break
			}
		}
	}
}

func TestAsmQuantizeQ8(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(23, 24))
	x := randVec(rng, 32*9)
	for i := 32; i < 64; i++ {
		x[i] = 0 // an all-zero block
	}
	x[70] = 1e30 // a block dominated by one huge value
	for i := 96; i < 128; i++ {
		x[i] *= 1e-7 // a scale that is subnormal in half precision
	}
	qa, qg := make([]int8, len(x)), make([]int8, len(x))
	da, dg := make([]float32, 9), make([]float32, 9)
	d8a, d8g := make([]float32, 72), make([]float32, 72)
	quantizeQ8AVX(x, qa, da, d8a)
	quantizeQ8Go(x, qg, dg, d8g)
	for i := range qa {
		if qa[i] != qg[i] {
			t.Fatalf("code %d: asm %d, go %d", i, qa[i], qg[i])
		}
	}
	for i := range da {
		if da[i] != dg[i] {
			t.Fatalf("scale %d: asm %g, go %g", i, da[i], dg[i])
		}
	}
	for i := range d8a {
		if d8a[i] != d8g[i] {
			t.Fatalf("broadcast scale %d: asm %g, go %g", i, d8a[i], d8g[i])
		}
	}
}

func TestAsmQ8_0(t *testing.T) {
	skipNoAsm(t)
	testAsmBlocks(t, gguf.TypeQ8_0, blockQ8_0, q8DotAVX, q8Tile2x4, dotQ8_0Go)
}

func TestAsmQ4_0(t *testing.T) {
	skipNoAsm(t)
	testAsmBlocks(t, gguf.TypeQ4_0, blockQ4_0, q4DotAVX, q4Tile2x4, dotQ4_0Go)
}

func testAsmBlocks(t *testing.T, typ gguf.TensorType, blockBytes int, dot blockDot, tile blockTile, ref blockDot) {
	rng := rand.New(rand.NewPCG(25, uint64(typ)))
	for _, nb := range []int{1, 2, 3, 9, 24} {
		cols := 32 * nb
		w := mustWeight(t, typ, 2, cols, randVec(rng, 2*cols))
		rb := nb * blockBytes
		const batch = 4
		x := randVec(rng, batch*cols)
		xq, xd, xd8 := make([]int8, batch*cols), make([]float32, batch*nb), make([]float32, batch*nb*8)
		quantizeQ8Go(x, xq, xd, xd8)
		out := make([]float32, 3*7+2)
		tile(w.Data, rb, xq, cols, xd8, nb, out, 7)
		rowsOut := make([]float32, 2)
		for r := 0; r < 2; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			deq := make([]float32, cols)
			DequantizeRow(w, r, deq)
			for b := 0; b < batch; b++ {
				xb, db := xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb]
				want := ref(row, xb, db)
				mag := absDot(deq, x[b*cols:(b+1)*cols]) * 2
				closeSum(t, typ.String()+" dot", dot(row, xb, db), want, mag)
				closeSum(t, typ.String()+" tile", out[b*7+r], want, mag)
				if typ == gguf.TypeQ8_0 {
					q8Rows(w.Data, rb, xb, db, rowsOut)
				} else {
					q4Rows(w.Data, rb, xb, db, rowsOut)
				}
				closeSum(t, typ.String()+" rows", rowsOut[r], want, mag)
			}
		}
	}
}

func TestAsmQ8_0ExtremeCodes(t *testing.T) {
	skipNoAsm(t)
	// Extreme codes: -128 does not occur in weights written by Quantize but
	// may in other files; the sign trick must still be exact for it.
	blk := make([]byte, blockQ8_0)
	blk[1] = 0x3c // d = 1.0
	xq := make([]int8, 32)
	for j := 0; j < 32; j++ {
		blk[2+j] = byte(int8(-128 + j%2*255))
		xq[j] = int8(127 - j%3*127)
	}
	xd := []float32{1}
	if got, want := q8DotAVX(blk, xq, xd), dotQ8_0Go(blk, xq, xd); got != want {
		t.Fatalf("extreme codes: asm %g, go %g", got, want)
	}
}

func TestAsmExp(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(29, 30))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(rng.Float64()*200 - 100)
	}
	x[0], x[1], x[2], x[3] = 0, float32(math.Copysign(0, -1)), 88, -87
	ea, eg := append([]float32(nil), x...), append([]float32(nil), x...)
	sa, sg := expSubAVX(ea, 1.5), expSubGo(eg, 1.5)
	closeSum(t, "expSub sum", sa, sg, sg)
	for i := range ea {
		if math.Abs(float64(ea[i]-eg[i])) > 4e-7*float64(eg[i]) {
			t.Fatalf("exp(%g): asm %g, go %g", x[i]-1.5, ea[i], eg[i])
		}
	}
	up := randVec(rng, len(x))
	ga, gg := append([]float32(nil), x...), append([]float32(nil), x...)
	swigluAVX(ga, up)
	swigluGo(gg, up)
	sa2, sg2 := append([]float32(nil), x...), append([]float32(nil), x...)
	siluAVX(sa2)
	siluGo(sg2)
	for i := range ga {
		if math.Abs(float64(ga[i]-gg[i])) > 1e-6*math.Abs(float64(gg[i]))+1e-30 ||
			math.Abs(float64(sa2[i]-sg2[i])) > 1e-6*math.Abs(float64(sg2[i]))+1e-30 {
			t.Fatalf("swiglu/silu(%g): asm %g %g, go %g %g", x[i], ga[i], sa2[i], gg[i], sg2[i])
		}
	}
}

func TestAsmKQuants(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for _, nb := range []int{1, 2, 3} {
		cols := 256 * nb
		x := randVec(rng, cols)
		xq, xd, xs := make([]int8, cols), make([]float32, nb), make([]int16, 16*nb)
		quantizeQ8KGo(x, xq, xd, xs)
		for _, tc := range []struct {
			typ      gguf.TensorType
			asm, ref func(w []byte) float32
		}{
			{gguf.TypeQ4_K, func(w []byte) float32 { return q4kDotAVX(w, xq, xd, xs) }, func(w []byte) float32 { return dotQ4KGo(w, xq, xd, xs) }},
			{gguf.TypeQ6_K, func(w []byte) float32 { return q6kDotAVX(w, xq, xd, kSums(gguf.TypeQ6_K, xq, nil)) }, func(w []byte) float32 { return dotQ6KGo(w, xq, xd) }},
		} {
			src := randVec(rng, cols)
			for i := range src {
				src[i] *= float32(1 + i%5) // vary the sub-block scales
			}
			w := mustWeight(t, tc.typ, 1, cols, src)
			deq := make([]float32, cols)
			DequantizeRow(w, 0, deq)
			closeSum(t, tc.typ.String(), tc.asm(w.Data), tc.ref(w.Data), absDot(deq, x)*2)
		}
	}
}

func TestAsmQ8_0VNNI(t *testing.T) {
	if !haveVNNI {
		t.Skip("CPU lacks AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(35, 36))
	for _, nb := range []int{1, 2, 5, 24} {
		cols := 32 * nb
		const rows, batch = 4, 4
		src := randVec(rng, rows*cols)
		src[0], src[1] = 1000, -1000 // codes of both signs at full range
		w := mustWeight(t, gguf.TypeQ8_0, rows, cols, src)
		rb := nb * blockQ8_0
		x := randVec(rng, batch*cols)
		xq, xd, xd8 := make([]int8, batch*cols), make([]float32, batch*nb), make([]float32, batch*nb*8)
		quantizeQ8Go(x, xq, xd, xd8)
		xc := make([]int32, batch*cols/4)
		q8CorrGo(xq, xc)
		out := make([]float32, 3*9+4)
		q8Tile4x4VNNI(w.Data, rb, xq, cols, xc, xd8, nb, out, 9, 4)

		deq := make([]float32, cols)
		for r := 0; r < rows; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			DequantizeRow(w, r, deq)
			for b := 0; b < batch; b++ {
				want := dotQ8_0Go(row, xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb])
				closeSum(t, "q8Tile4x4VNNI", out[b*9+r], want, absDot(deq, x[b*cols:(b+1)*cols])*2)
			}
		}
		// Fewer activation rows: the same products for those rows, and
		// nothing stored for the others.
		for n := 1; n < 4; n++ {
			part := make([]float32, len(out))
			for i := range part {
				part[i] = 42
			}
			q8Tile4x4VNNI(w.Data, rb, xq[:n*cols], cols, xc[:n*cols/4], xd8[:n*nb*8], nb, part, 9, n)
			for i, got := range part {
				if b := i / 9; b < n && i%9 < 4 {
					if got != out[i] {
						t.Fatalf("nb=%d n=%d: out[%d] = %g, the 4-row tile has %g", nb, n, i, got, out[i])
					}
				} else if got != 42 {
					t.Fatalf("nb=%d n=%d: out[%d] written (%g)", nb, n, i, got)
				}
			}
		}
	}
}

// TestAsmIntegerExact gives every block scale the value 1, so each block's
// contribution is its integer dot product and every float sum is an exact
// integer: the assembly must then match the Go twins bit for bit, which
// checks the integer parts (sign tricks, nibble and 6-bit unpacking, VNNI
// offsets) exactly.
func TestAsmIntegerExact(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(37, 38))
	randBytes := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
	}
	const one = 0x3c00 // 1.0 in half precision
	for _, nb := range []int{1, 3, 8} {
		// Q8_0 and Q4_0: 4 rows, 4 activation rows.
		cols := 32 * nb
		xq := make([]int8, 4*cols)
		for i := range xq {
			xq[i] = int8(rng.IntN(255) - 127)
		}
		xd := make([]float32, 4*nb)
		xd8 := make([]float32, 4*nb*8)
		for i := range xd {
			xd[i] = 1
		}
		for i := range xd8 {
			xd8[i] = 1
		}
		for _, tc := range []struct {
			typ        gguf.TensorType
			blockBytes int
			rows       blockRows
			dot, ref   blockDot
			tile       blockTile
		}{
			{gguf.TypeQ8_0, blockQ8_0, q8Rows, q8DotAVX, dotQ8_0Go, q8Tile2x4},
			{gguf.TypeQ4_0, blockQ4_0, q4Rows, q4DotAVX, dotQ4_0Go, q4Tile2x4},
		} {
			rb := nb * tc.blockBytes
			w := make([]byte, 4*rb)
			randBytes(w)
			for blk := 0; blk < 4*nb; blk++ {
				w[blk*tc.blockBytes] = byte(one & 0xff)
				w[blk*tc.blockBytes+1] = byte(one >> 8)
			}
			rowsOut := make([]float32, 4)
			tileOut := make([]float32, 4*4)
			vnniOut := make([]float32, 4*4)
			tc.tile(w[:2*rb], rb, xq, cols, xd8, nb, tileOut, 4)
			tc.tile(w[2*rb:], rb, xq, cols, xd8, nb, tileOut[2:], 4)
			if tc.typ == gguf.TypeQ8_0 && haveVNNI {
				xc := make([]int32, 4*cols/4)
				q8CorrGo(xq[:4*cols], xc)
				q8Tile4x4VNNI(w, rb, xq, cols, xc, xd8, nb, vnniOut, 4, 4)
			}
			for b := 0; b < 4; b++ {
				xb, db := xq[b*cols:(b+1)*cols], xd[b*nb:(b+1)*nb]
				tc.rows(w, rb, xb, db, rowsOut)
				for r := 0; r < 4; r++ {
					row := w[r*rb : (r+1)*rb]
					want := tc.ref(row, xb, db)
					got := map[string]float32{"dot": tc.dot(row, xb, db), "rows": rowsOut[r], "tile": tileOut[b*4+r]}
					if tc.typ == gguf.TypeQ8_0 && haveVNNI {
						got["vnni"] = vnniOut[b*4+r]
					}
					for name, g := range got {
						if g != want {
							t.Fatalf("%s %s nb=%d row %d act %d: %g, want %g", tc.typ, name, nb, r, b, g, want)
						}
					}
				}
			}
		}
		// K-quants: one row of nb super-blocks.
		kcols := 256 * nb
		kq := make([]int8, kcols)
		for i := range kq {
			kq[i] = int8(rng.IntN(255) - 127)
		}
		kd := make([]float32, nb)
		ks := make([]int16, 16*nb)
		for b := range kd {
			kd[b] = 1
		}
		for g := range ks {
			for _, c := range kq[16*g : 16*g+16] {
				ks[g] += int16(c)
			}
		}
		q4k := make([]byte, nb*blockQ4_K)
		randBytes(q4k)
		q6k := make([]byte, nb*blockQ6_K)
		randBytes(q6k)
		for b := 0; b < nb; b++ {
			blk := q4k[b*blockQ4_K:]
			blk[0], blk[1], blk[2], blk[3] = one&0xff, one>>8, one&0xff, one>>8
			blk = q6k[b*blockQ6_K:]
			blk[208], blk[209] = one&0xff, one>>8
		}
		if got, want := q4kDotAVX(q4k, kq, kd, ks), dotQ4KGo(q4k, kq, kd, ks); got != want {
			t.Fatalf("Q4_K nb=%d: asm %g, go %g", nb, got, want)
		}
		if got, want := q6kDotAVX(q6k, kq, kd, kSums(gguf.TypeQ6_K, kq, nil)), dotQ6KGo(q6k, kq, kd); got != want {
			t.Fatalf("Q6_K nb=%d: asm %g, go %g", nb, got, want)
		}
	}
}

func TestAsmRoundF16(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(29, 30))
	src := randVec(rng, 64)
	src[1] = 1 + 0x1p-11 // a tie
	src[2] = 70000       // beyond the half range
	src[3] = 1e-6        // a half subnormal
	src[4] = 1e-9        // below the smallest half subnormal
	src[5] = float32(math.Inf(-1))
	got, want := make([]float32, len(src)), make([]float32, len(src))
	roundF16AVX(got, src)
	roundToF16Go(want, src)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("element %d (%g): asm %g, go %g", i, src[i], got[i], want[i])
		}
	}
}

// TestAsmKTile requires every output of the assembly Q4_K, Q5_K and Q6_K
// tiles to equal q4kDotAVX's, q5kDotAVX's and q6kDotAVX's bit for bit.
func TestAsmKTile(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(55, 56))
	for _, tc := range []struct {
		typ  gguf.TensorType
		tile kTile
		dot  kDot
	}{
		{gguf.TypeQ4_K, q4kTile1x4, q4kDotAVX},
		{gguf.TypeQ5_K, q5kTile1x4, q5kDotAVX},
		{gguf.TypeQ6_K, q6kTile1x4, q6kDotAVX},
	} {
		for _, nb := range []int{1, 2, 3, 8} {
			w, xq, xd, xs := kTileInputs(t, rng, tc.typ, nb)
			checkKTile(t, tc.typ, nb, w.Data, xq, xd, xs, tc.tile, tc.dot)
		}
	}
}

// TestAsmKRows requires decode's loops over Q4_K, Q5_K and Q6_K rows to
// equal q4kDotAVX, q5kDotAVX and q6kDotAVX row by row, bit for bit.
func TestAsmKRows(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(59, 60))
	for _, tc := range []struct {
		typ        gguf.TensorType
		blockBytes int
		rows       func(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32)
		dot        kDot
	}{
		{gguf.TypeQ4_K, blockQ4_K, q4kRowDots, q4kDotAVX},
		{gguf.TypeQ5_K, blockQ5_K, q5kRowDots, q5kDotAVX},
		{gguf.TypeQ6_K, blockQ6_K, q6kRowDots, q6kDotAVX},
	} {
		for _, nb := range []int{1, 3, 8} {
			const rows = 5
			cols := 256 * nb
			rb := nb * tc.blockBytes
			w := mustWeight(t, tc.typ, rows, cols, randVec(rng, rows*cols))
			xq, xd, xs := make([]int8, cols), make([]float32, nb), make([]int16, 16*nb)
			quantizeQ8KGo(randVec(rng, cols), xq, xd, xs)
			xs = kSums(tc.typ, xq, xs)
			out := make([]float32, rows-1)
			tc.rows(w.Data, rb, 1, xq, xd, xs, out)
			for i, got := range out {
				r := 1 + i
				if want := tc.dot(w.Data[r*rb:(r+1)*rb], xq, xd, xs); got != want {
					t.Fatalf("%s nb=%d row %d: rows kernel %g, row dot %g", tc.typ, nb, r, got, want)
				}
			}
		}
	}
}

// TestAsmQ6KPairSums requires q6kPairSums (assembly for the multiples of 32
// codes, Go for the rest) to equal q6kPairSumsGo, extremes included.
func TestAsmQ6KPairSums(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{32, 64, 96, 256, 288} {
		xq := make([]int8, n)
		for i := range xq {
			xq[i] = int8(rng.IntN(256) - 128)
		}
		xq[0], xq[1], xq[2], xq[3] = -128, -128, 127, 127
		got, want := make([]int16, n/2), make([]int16, n/2)
		q6kPairSums(xq, got)
		q6kPairSumsGo(xq, want)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("n=%d pair %d (%d, %d): asm %d, go %d", n, i, xq[2*i], xq[2*i+1], got[i], want[i])
			}
		}
	}
}
