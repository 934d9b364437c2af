//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAsmBF16Tiles512 requires the AVX512_BF16 tiles to equal tinyBLAS's
// order as dotBF16GemmGo models it (and so bf16Gemm4x1AVX), bit for bit,
// on strided weight and activation rows.
func TestAsmBF16Tiles512(t *testing.T) {
	if !haveBF16Tiles {
		t.Skip("CPU lacks AVX512_BF16: the tiles are not used here")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	for _, n := range []int{32, 64, 96, 288, 768, 2048} {
		ws, xs, os := n+32, n+64, 11
		w := make([]uint16, 4*ws)
		for i, v := range randVec(rng, len(w)) {
			w[i] = F32ToBF16(v)
		}
		src := randVec(rng, 6*xs)
		x, xh := make([]float32, len(src)), make([]uint16, len(src))
		roundToBF16(x, xh, src)
		out6 := make([]float32, 5*os+4)
		bf16Tile512x6(w, ws, xh, xs, n, out6, os)
		out1 := make([]float32, 4)
		bf16Tile512x1(w, ws, xh[xs:], xs, n, out1, os)
		for r := 0; r < 4; r++ {
			wr := w[r*ws : r*ws+n]
			for b := 0; b < 6; b++ {
				want := dotBF16GemmGo(wr, x[b*xs:b*xs+n])
				if got := out6[b*os+r]; math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("n=%d bf16Tile512x6 row %d batch %d = %g, dotBF16GemmGo %g", n, r, b, got, want)
				}
			}
			if want := dotBF16GemmGo(wr, x[xs:xs+n]); math.Float32bits(out1[r]) != math.Float32bits(want) {
				t.Errorf("n=%d bf16Tile512x1 row %d = %g, dotBF16GemmGo %g", n, r, out1[r], want)
			}
		}
	}
}
