package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ropeRef rotates one head pair by pair with RopePair: the reference.
func ropeRef(v, cos, sin []float32, neox bool) {
	half := len(cos)
	for j := range half {
		a, b := 2*j, 2*j+1
		if neox {
			a, b = j, j+half
		}
		v[a], v[b] = RopePair(v[a], v[b], cos[j], sin[j])
	}
}

func TestRopeMatchesRopePair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	wide := func() float32 {
		// Mixed magnitudes and signs, zeros included, so that the products
		// and sums round in every way.
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		}
		return float32((rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(40)-20)))
	}
	for _, neox := range []bool{false, true} {
		for half := 1; half <= 70; half++ {
			for rep := range 20 {
				extra := rep % 3 // partial rotary: elements past the pairs
				v := make([]float32, 2*half+extra+4)
				for i := range v {
					v[i] = wide()
				}
				cos, sin := make([]float32, half), make([]float32, half)
				for j := range half {
					theta := rng.Float64() * 100
					cos[j], sin[j] = float32(math.Cos(theta)), float32(math.Sin(theta))
					if rep == 0 {
						cos[j], sin[j] = wide(), wide()
					}
				}
				want := append([]float32(nil), v...)
				ropeRef(want[:2*half+extra], cos, sin, neox)
				got := append([]float32(nil), v...)
				Rope(got[:2*half+extra], cos, sin, neox)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("neox=%v half=%d rep=%d [%d]: %g, want %g", neox, half, rep, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkRope rotates one token's 24m query heads (6 of 48) with Rope
// and, for comparison, RopePair one pair at a time.
func BenchmarkRope(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	const hd, heads = 48, 6
	v := randVec(rng, hd*heads)
	cos, sin := randVec(rng, hd/2), randVec(rng, hd/2)
	b.Run("pairs", func(b *testing.B) {
		for b.Loop() {
			for h := range heads {
				ropeRef(v[h*hd:(h+1)*hd], cos, sin, false)
			}
		}
	})
	b.Run("rope", func(b *testing.B) {
		for b.Loop() {
			for h := range heads {
				Rope(v[h*hd:(h+1)*hd], cos, sin, false)
			}
		}
	})
}
