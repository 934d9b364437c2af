package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestFMA32Once checks the float32 fused multiply-add against exact
// rational arithmetic rounded once, on random operands and on sums built
// to land halfway between two float32 values (where rounding through
// float64 would round twice).
func TestFMA32Once(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exact := func(a, b, c float32) float32 {
		p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
		s := new(big.Float).SetPrec(200).Add(p, big.NewFloat(float64(c)))
		f, _ := s.Float32()
		return f
	}
	check := func(a, b, c float32) {
		if got, want := fma32Once(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32Once(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for range 100000 {
		check(rng.Float32()*4-2, rng.Float32()*4-2, rng.Float32()*4-2)
	}
	// a·b = 1 + 2^-24 + 2^-48 (exact in float64 only when rounded), c = 0:
	// the float64 sum is the midpoint 1+2^-24 and the error term decides.
	a := float32(1 + 0x1p-23)
	check(a, float32(1+0x1p-23), 0)
	for range 100000 {
		// Midpoint cases: c chosen so that a·b+c sits near a float32 tie.
		a, b := rng.Float32()+1, rng.Float32()+1
		c := -float32(float64(a) * float64(b))
		check(a, b, c+float32(rng.NormFloat64())*1e-7)
	}
}

// TestExpGGML checks ggml_v_expf's emulation against math.Exp (within its
// 1.5 ulp) and its edge cases: zero for large negative inputs and -Inf.
func TestExpGGML(t *testing.T) {
	for x := float32(-87); x <= 0; x += 0.0137 {
		got, want := float64(expGGML(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 2*want*0x1p-23 {
			t.Fatalf("expGGML(%g) = %g, want %g", x, got, want)
		}
	}
	for _, x := range []float32{-134, -1000, float32(math.Inf(-1))} {
		if got := expGGML(x); got != 0 {
			t.Errorf("expGGML(%g) = %g, want 0", x, got)
		}
	}
	if got := expGGML(0); got != 1 {
		t.Errorf("expGGML(0) = %g, want 1", got)
	}
}

// TestSoftmaxGGML checks the masked, padded softmax: probabilities summing
// to one over the unmasked cells, zero over the masked ones, and the
// scores scaled.
func TestSoftmaxGGML(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, 31, 32, 33, 70} {
		nkv := PaddedKV(n - 1)
		x := make([]float32, nkv+3)
		for i := range n {
			x[i] = rng.Float32()*10 - 5
		}
		want := make([]float64, n)
		mx := math.Inf(-1)
		for i := range n {
			mx = max(mx, float64(x[i]*0.125))
		}
		var sum float64
		for i := range n {
			want[i] = math.Exp(float64(x[i]*0.125) - mx)
			sum += want[i]
		}
		SoftmaxGGML(x, n, nkv, 0.125)
		for i := range n {
			if d := math.Abs(float64(x[i]) - want[i]/sum); d > 1e-6 {
				t.Fatalf("n %d: p[%d] = %g, want %g", n, i, x[i], want[i]/sum)
			}
		}
		for i := n; i < nkv; i++ {
			if x[i] != 0 {
				t.Fatalf("n %d: masked p[%d] = %g", n, i, x[i])
			}
		}
	}
}

// TestPaddedDotsMatchZeroPadded checks that the padded dot products give
// the bits of ggml's orders run over the zero-padded rows.
func TestPaddedDotsMatchZeroPadded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 200; n++ {
		nkv := PaddedKV(n - 1)
		w := make([]uint16, nkv)
		x := make([]float32, nkv)
		for i := range n {
			w[i] = F32ToF16(float32(rng.NormFloat64()))
			x[i] = F16ToF32(F32ToF16(rng.Float32()))
		}
		if got, want := dotF16VecPadded(w[:n], x[:n], nkv), dotF16VecGo(w, x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n %d: vec padded %g, zero-padded %g", n, got, want)
		}
		if got, want := dotF16GemmPadded(w[:n], x[:n]), dotF16GemmGo(w, x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n %d: gemm padded %g, zero-padded %g", n, got, want)
		}
	}
}

// TestPaddedKV pins llama.cpp's n_kv: used cells rounded up to 32, at
// least 32.
func TestPaddedKV(t *testing.T) {
	for last, want := range map[int]int{0: 32, 30: 32, 31: 32, 32: 64, 63: 64, 64: 96} {
		if got := PaddedKV(last); got != want {
			t.Errorf("PaddedKV(%d) = %d, want %d", last, got, want)
		}
	}
}
