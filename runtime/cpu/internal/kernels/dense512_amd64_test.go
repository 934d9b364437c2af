//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// dotF32Lanes16 is tinyBLAS's F32 order on AVX-512 (16 lanes, fused
// multiply-adds, reduce16), with the fused multiply-add done in float64:
// exact for the product, so only the final rounding to float32 can differ
// (double rounding), which the test allows for.
func dotF32Lanes16(w, x []float32) float32 {
	var acc [16]float32
	for i := 0; i+16 <= len(w); i += 16 {
		for l := range acc {
			acc[l] = float32(float64(acc[l]) + float64(w[i+l])*float64(x[i+l]))
		}
	}
	return reduce16(&acc)
}

// TestAsm512Tiles holds the AVX-512 F16 tiles to dotF16GemmGo bit for bit
// and the F32 tiles to tinyBLAS's order, on strided rows.
func TestAsm512Tiles(t *testing.T) {
	if !have512 {
		t.Skip("CPU lacks AVX-512: the 512-bit tiles are not used here")
	}
	rng := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{16, 48, 64, 288, 768, 2048} {
		ws, xs, os := n+16, n+48, 13
		w32 := randVec(rng, 4*ws)
		w16 := make([]uint16, len(w32))
		F32ToF16Slice(w16, w32)
		x := randVec(rng, 6*xs)
		xr := make([]float32, len(x))
		roundToF16Go(xr, x)
		out16, out32 := make([]float32, 5*os+4), make([]float32, 5*os+4)
		f16Tile512x6(w16, ws, xr, xs, n, out16, os)
		f32Tile512x6(w32, ws, x, xs, n, out32, os)
		one16, one32 := make([]float32, 4), make([]float32, 4)
		f16Tile512x1(w16, ws, xr[5*xs:], xs, n, one16, os)
		f32Tile512x1(w32, ws, x[5*xs:], xs, n, one32, os)
		for r := 0; r < 4; r++ {
			for b := 0; b < 6; b++ {
				want := dotF16GemmGo(w16[r*ws:r*ws+n], xr[b*xs:b*xs+n])
				if got := out16[b*os+r]; math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d f16Tile512x6 row %d batch %d = %g, dotF16GemmGo %g", n, r, b, got, want)
				}
				wr, xb := w32[r*ws:r*ws+n], x[b*xs:b*xs+n]
				closeSum(t, "f32Tile512x6", out32[b*os+r], dotF32Lanes16(wr, xb), absDot(wr, xb))
			}
			if want := dotF16GemmGo(w16[r*ws:r*ws+n], xr[5*xs:5*xs+n]); math.Float32bits(one16[r]) != math.Float32bits(want) {
				t.Errorf("n=%d f16Tile512x1 row %d = %g, dotF16GemmGo %g", n, r, one16[r], want)
			}
			if math.Float32bits(one32[r]) != math.Float32bits(out32[5*os+r]) {
				t.Errorf("n=%d f32Tile512x1 row %d = %g, f32Tile512x6 %g", n, r, one32[r], out32[5*os+r])
			}
		}
	}
}

// dotF32Lanes64 is ggml_vec_dot_f32's order on AVX-512 for len(w) a
// multiple of 64 (fused multiply-adds emulated in float64 as in
// dotF32Lanes16).
func dotF32Lanes64(w, x []float32) float32 {
	var acc [64]float32
	for i := 0; i+64 <= len(w); i += 64 {
		for l := range acc {
			acc[l] = float32(float64(acc[l]) + float64(w[i+l])*float64(x[i+l]))
		}
	}
	var l16 [16]float32
	for l := range l16 {
		l16[l] = (acc[l] + acc[l+32]) + (acc[l+16] + acc[l+48])
	}
	return reduce16(&l16)
}

// TestAsmF32VecRows holds f32VecRows to ggml_vec_dot_f32's AVX-512 order.
func TestAsmF32VecRows(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(65, 66))
	exact, total := 0, 0
	for _, n := range []int{64, 128, 768, 2048} {
		ws := n + 8
		w, x := randVec(rng, 5*ws), randVec(rng, n)
		out := make([]float32, 5)
		f32VecRows(w, ws, x, n, out)
		for r := range out {
			wr := w[r*ws : r*ws+n]
			want := dotF32Lanes64(wr, x)
			closeSum(t, "f32VecRows", out[r], want, absDot(wr, x))
			total++
			if math.Float32bits(out[r]) == math.Float32bits(want) {
				exact++
			}
		}
	}
	// The float64 emulation of a fused multiply-add rounds twice, which
	// can differ from the hardware's single rounding only rarely.
	t.Logf("f32VecRows: %d of %d rows bit-exact", exact, total)
	if exact < total*9/10 {
		t.Errorf("f32VecRows equals the 64-lane order bit for bit in %d of %d rows", exact, total)
	}
}
