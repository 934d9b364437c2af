package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// f16Ref is the value of a half bit pattern computed from its definition.
func f16Ref(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 31:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+mant/1024, exp-15)
}

func TestF16ToF32Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got, want := F16ToF32(h), f16Ref(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN", h, got)
			}
		} else if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, want)
		}
		// Every half value survives the round trip (NaN payloads included).
		if back := F32ToF16(got); back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestF32ToF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000},
		{65504, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{float32(math.Ldexp(1, -24)), 0x0001},     // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},     // tie between 0 and the smallest subnormal: even
		{float32(math.Ldexp(1.5, -25)), 0x0001},   // above the tie
		{float32(math.Ldexp(3, -25)), 0x0002},     // tie between 1 and 2 subnormal units: even
		{float32(math.Ldexp(1, -14)), 0x0400},     // smallest normal
		{1 + float32(math.Ldexp(1, -11)), 0x3c00}, // tie: even
		{1 + float32(math.Ldexp(3, -11)), 0x3c02}, // tie: even (up)
	}
	for _, c := range cases {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := F32ToF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", got)
	}
	// Random values: the result is a nearest half value.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		f := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-25)))
		h := F32ToF16(f)
		if math.Abs(float64(f)) >= 65520 {
			continue
		}
		err := math.Abs(f16Ref(h) - float64(f))
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 || (nb^h)&0x8000 != 0 {
				continue
			}
			if e := math.Abs(f16Ref(nb) - float64(f)); e < err {
				t.Fatalf("F32ToF16(%g) = %#04x (err %g) but %#04x is closer (err %g)", f, h, err, nb, e)
			}
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0, 0},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie: even (down)
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie: even (up)
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(1)), 0x7f80},
	}
	for _, c := range cases {
		if got := F32ToBF16(c.in); got != c.want {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
		if back := BF16ToF32(c.want); F32ToBF16(back) != c.want {
			t.Errorf("BF16 round trip of %#04x", c.want)
		}
	}
	if got := F32ToBF16(float32(math.NaN())); !math.IsNaN(float64(BF16ToF32(got))) {
		t.Errorf("F32ToBF16(NaN) = %#04x, not a NaN", got)
	}
}
