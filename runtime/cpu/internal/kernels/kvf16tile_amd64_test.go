//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestF16TileLoopsMatchGo holds the four-row F16 kernels to the pure-Go
// dot products in their orders, bit for bit, over many tiles per call: key-
// shaped (rows hd apart, tiles 4*hd apart) and value-shaped (rows stride
// apart) inputs, and nothing written past the last tile.
func TestF16TileLoopsMatchGo(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(17, 18))
	// Scales from small to large so that the vector kernel takes both
	// its exact vectorized leftovers and its sequential fallback.
	scale := 2.0
	f16 := func(n int) []uint16 {
		out := make([]uint16, n)
		for i := range out {
			v := rng.NormFloat64() * scale
			if i%5 == 0 {
				v *= 1e-6 // tiny products beside large ones fail the exactness bounds
			}
			out[i] = F32ToF16(float32(v))
		}
		return out
	}
	type loop func(w []uint16, ws, gs, groups int, x []float32, n int, out []float32)
	// The pure-Go dot products in each kernel's order, one row at a time.
	pairs := []struct {
		name  string
		loop  loop
		dot   func(w []uint16, x []float32) float32
		lanes int // n must be a multiple
	}{
		{"gemm", func(w []uint16, ws, gs, groups int, x []float32, n int, out []float32) {
			f16Gemm4x1LoopAVX(w, ws, gs, groups, x, n, out, nil)
		}, dotF16GemmGo, 16},
		// Prefetching another slice's tiles as the call ends changes nothing.
		{"gemm+next", func(w []uint16, ws, gs, groups int, x []float32, n int, out []float32) {
			f16Gemm4x1LoopAVX(w, ws, gs, groups, x, n, out, make([]uint16, 4*gs))
		}, dotF16GemmGo, 16},
		{"vec", f16DotVec4LoopAVX, dotF16VecGo, 1},
	}
	check := func(what string, w []uint16, ws, gs, groups int, x []float32, n int) {
		t.Helper()
		for _, k := range pairs {
			if n%k.lanes != 0 {
				continue
			}
			got := make([]float32, 4*groups+1)
			got[4*groups] = 42 // sentinel past the last tile
			k.loop(w, ws, gs, groups, x, n, got[:4*groups])
			if got[4*groups] != 42 {
				t.Fatalf("%s %s: wrote past out", k.name, what)
			}
			for g := range groups {
				for r := range 4 {
					row := w[g*gs+r*ws : g*gs+r*ws+n]
					if want := k.dot(row, x[:n]); math.Float32bits(got[4*g+r]) != math.Float32bits(want) {
						t.Fatalf("%s %s: tile %d row %d = %g, Go %g", k.name, what, g, r, got[4*g+r], want)
					}
				}
			}
		}
	}
	for _, hd := range []int{6, 16, 48, 64, 70, 128, 200} {
		for _, groups := range []int{0, 1, 2, 3, 8, 25} {
			scale = []float64{0.01, 2, 300}[groups%3]
			x := make([]float32, hd)
			for i := range x {
				x[i] = F16ToF32(F32ToF16(float32(rng.NormFloat64())))
			}
			check("keys", f16(4*groups*hd), hd, 4*hd, groups, x, hd)
		}
	}
	for _, nkv := range []int{32, 96, 160, 288} {
		for _, groups := range []int{1, 2, 12, 32} {
			scale = []float64{0.01, 2, 300}[groups%3]
			stride := nkv + 32
			p := make([]float32, nkv)
			for i := range p {
				p[i] = F16ToF32(F32ToF16(rng.Float32()))
			}
			check("values", f16((4*groups-1)*stride+nkv), stride, 4*stride, groups, p, nkv)
		}
	}
}

// TestScaleMaxMatchesGo holds the softmax's vectorized scaling and maximum
// to the scalar loop, bit for bit, for lengths around the eight-lane step.
func TestScaleMaxMatchesGo(t *testing.T) {
	skipNoAsm(t)
	rng := rand.New(rand.NewPCG(19, 20))
	for n := range 70 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 30)
		}
		if n > 3 {
			x[3] = float32(math.Copysign(0, -1))
		}
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		gm := scaleMax(got, 0.14433756)
		wm := scaleMaxGo(want, 0.14433756, float32(math.Inf(-1)))
		if math.Float32bits(gm) != math.Float32bits(wm) {
			t.Fatalf("n %d: max %g, Go %g", n, gm, wm)
		}
		scaleF32(got, 1/3.7)
		for i := range want {
			want[i] *= 1 / 3.7
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: [%d] = %g, Go %g", n, i, got[i], want[i])
			}
		}
	}
}
