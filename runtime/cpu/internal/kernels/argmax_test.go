package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgmaxMatchesScalarLoop holds Argmax to the scalar loop on lengths
// around every vector boundary, with the maximum at each kind of place
// (first, vector part, tail), ties, NaNs, ±0 and infinities.
func TestArgmaxMatchesScalarLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	specials := []float32{nan, inf, -inf, 0, negZero, math.MaxFloat32, -math.MaxFloat32}
	for _, n := range []int{0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 95, 96, 127, 128, 129, 200, 1000, 32000} {
		for trial := range 40 {
			x := make([]float32, n)
			for i := range x {
				switch trial % 4 {
				case 0: // distinct values
					x[i] = r.Float32()*200 - 100
				case 1: // few values: many ties
					x[i] = float32(r.IntN(3))
				case 2: // all equal, then specials sprinkled below
					x[i] = -1
				default: // mostly negative with zeros
					x[i] = -r.Float32()
				}
			}
			for k := range trial % 6 {
				if n > 0 {
					x[r.IntN(n)] = specials[(trial+k)%len(specials)]
				}
			}
			if n > 0 && trial%9 == 0 {
				x[n-1] = 1000 // the maximum in the tail
			}
			if n > 0 && trial%11 == 0 {
				x[0] = nan
			}
			if got, want := Argmax(x), argmaxGo(x); got != want {
				t.Fatalf("n=%d trial %d: Argmax = %d (%v), scalar loop = %d (%v)", n, trial, got, x[got], want, x[want])
			}
		}
	}
}

// TestArgmaxReadsOnlyItsSlice puts a larger value just past the slice.
func TestArgmaxReadsOnlyItsSlice(t *testing.T) {
	for _, n := range []int{64, 65, 100, 127} {
		backing := make([]float32, n+8)
		for i := range backing {
			backing[i] = float32(i % 7)
		}
		for i := n; i < len(backing); i++ {
			backing[i] = 1e9
		}
		x := backing[:n]
		if got, want := Argmax(x), argmaxGo(x); got != want {
			t.Fatalf("n=%d: Argmax = %d, scalar loop = %d", n, got, want)
		}
	}
}

// FuzzArgmax compares Argmax with the scalar loop on arbitrary bit
// patterns (every NaN payload, subnormals, ±0, infinities).
func FuzzArgmax(f *testing.F) {
	f.Add(make([]byte, 4*70))
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f})
	f.Fuzz(func(t *testing.T, data []byte) {
		x := make([]float32, len(data)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		if got, want := Argmax(x), argmaxGo(x); got != want {
			t.Fatalf("Argmax = %d, scalar loop = %d over %v", got, want, x)
		}
	})
}

func BenchmarkArgmax(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 32000)
	for i := range x {
		x[i] = r.Float32()
	}
	b.Run("asm", func(b *testing.B) {
		for b.Loop() {
			Argmax(x)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for b.Loop() {
			argmaxGo(x)
		}
	})
}
