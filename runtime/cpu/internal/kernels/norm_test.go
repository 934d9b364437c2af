package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rmsNormRef is RMSNorm written out in ggml's order, one scalar step at a
// time: the reference every faster path must equal bit for bit.
func rmsNormRef(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	inv := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = v * inv * weight[i]
	}
}

func TestRMSNormRowsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 8, 9, 15, 48, 64, 288, 291} {
		for rows := range 10 {
			x := randVec(rng, rows*n)
			for i := range x {
				x[i] *= float32(1 + 100*rng.Float64()) // wide magnitudes exercise the float64 sums
			}
			w := randVec(rng, n)
			want := make([]float32, rows*n)
			for r := range rows {
				rmsNormRef(want[r*n:(r+1)*n], x[r*n:(r+1)*n], w, 1e-5)
			}
			// Sentinels past the rows catch a write beyond them.
			buf := make([]float32, rows*n+9)
			for i := range buf {
				buf[i] = -7
			}
			RMSNormRows(buf[:rows*n], x, w, 1e-5)
			single := make([]float32, rows*n)
			inPlace := append([]float32(nil), x...)
			RMSNormRows(inPlace, inPlace, w, 1e-5)
			for r := range rows {
				RMSNorm(single[r*n:(r+1)*n], x[r*n:(r+1)*n], w, 1e-5)
			}
			for i := range want {
				wb := math.Float32bits(want[i])
				if math.Float32bits(buf[i]) != wb || math.Float32bits(single[i]) != wb || math.Float32bits(inPlace[i]) != wb {
					t.Fatalf("n=%d rows=%d [%d]: rows %g, single %g, in place %g, want %g", n, rows, i, buf[i], single[i], inPlace[i], want[i])
				}
			}
			for i, v := range buf[rows*n:] {
				if v != -7 {
					t.Fatalf("n=%d rows=%d: wrote %g past the rows at %d", n, rows, v, i)
				}
			}
		}
	}
}

func TestScaleMulMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 70 {
		x, w := randVec(rng, n), randVec(rng, n)
		a := float32(rng.Float64()*4 - 2)
		want := make([]float32, n)
		scaleMulGo(want, x, w, a)
		got := make([]float32, n+3)
		got[n], got[n+1], got[n+2] = 9, 9, 9
		scaleMul(got, x, w, a)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d [%d]: %g, want %g", n, i, got[i], want[i])
			}
		}
		if got[n] != 9 || got[n+1] != 9 || got[n+2] != 9 {
			t.Fatalf("n=%d: wrote past the row: %v", n, got[n:])
		}
	}
}

// BenchmarkRMSNorm compares one RMSNorm call per row with RMSNormRows on
// a batched step's rows (24m: 8 tokens of 288).
func BenchmarkRMSNorm(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	const n, rows = 288, 8
	x, w := randVec(rng, rows*n), randVec(rng, n)
	dst := make([]float32, rows*n)
	b.Run("per-row", func(b *testing.B) {
		for b.Loop() {
			for r := range rows {
				RMSNorm(dst[r*n:(r+1)*n], x[r*n:(r+1)*n], w, 1e-5)
			}
		}
	})
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			RMSNormRows(dst, x, w, 1e-5)
		}
	})
}

func TestAddMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for n := range 70 {
		x, d := randVec(rng, n), randVec(rng, n)
		want := append([]float32(nil), d...)
		for i, v := range x {
			want[i] += v // the plain float32 sum
		}
		got := append(append([]float32(nil), d...), 5, 5)
		Add(got, x)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d [%d]: %g, want %g", n, i, got[i], want[i])
			}
		}
		if got[n] != 5 || got[n+1] != 5 {
			t.Fatalf("n=%d: wrote past dst[:len(x)]: %v", n, got[n:])
		}
	}
}
