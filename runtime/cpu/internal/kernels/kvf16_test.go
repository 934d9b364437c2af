package kernels

import (
	"fmt"
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

// TestKVF16KernelsMatchGo requires the dispatched kernels (assembly on
// amd64) to give the pure-Go twins' bits: key scores and value products in
// both of ggml's orders, with row counts that leave remainders, and the
// softmax exponentials and their sum, masked cells included.
func TestKVF16KernelsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f16 := func(n int, scale float64) []uint16 {
		out := make([]uint16, n)
		for i := range out {
			out[i] = F32ToF16(float32(rng.NormFloat64() * scale))
		}
		return out
	}
	rounded := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = F16ToF32(F32ToF16(float32(rng.NormFloat64())))
		}
		return out
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: [%d] = %g, Go %g", what, i, got[i], want[i])
			}
		}
	}
	// Row counts on both sides of the four-row tile and of 8 and 16, head
	// dims of the presets (48: 24m, 64: 134m, 128).
	for _, hd := range []int{16, 32, 48, 64, 80, 128} {
		for _, rows := range []int{1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			for _, gemm := range []bool{false, true} {
				if gemm && hd%16 != 0 {
					continue
				}
				keys, q := f16(rows*hd, 1), rounded(hd)
				got, want := make([]float32, rows), make([]float32, rows)
				keyScoresF16(got, q, keys, hd, gemm, keys)
				keyScoresF16Go(want, q, keys, hd, gemm)
				same("key scores", got, want)
			}
		}
	}
	for _, hd := range []int{1, 4, 6, 9, 48, 64, 66, 128} {
		for _, nkv := range []int{32, 64, 96, 160, 288} {
			stride := nkv + 32
			vT := f16(hd*stride, 3)
			p := rounded(nkv)
			for _, gemm := range []bool{false, true} {
				got, want := make([]float32, hd), make([]float32, hd)
				valuesF16(got, p, vT[:(hd-1)*stride+nkv], stride, gemm, vT)
				valuesF16Go(want, p, vT[:(hd-1)*stride+nkv], stride, gemm)
				same("values", got, want)
			}
		}
	}
	for _, n := range []int{1, 7, 8, 9, 16, 17, 48, 64, 100, 128} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * math.Pow(10, float64(i%12-6)))
		}
		src[0] = 65520 // rounds to +Inf
		got, want := make([]uint16, n), make([]uint16, n)
		ToF16(got, src)
		F32ToF16Slice(want, src)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("ToF16(%g) = %#x, Go %#x", src[i], got[i], want[i])
			}
		}
		// The strided store: every element its own row, the cells between
		// untouched.
		for _, stride := range []int{1, 3, 32, 288} {
			dst := make([]uint16, (n-1)*stride+2)
			for i := range dst {
				dst[i] = 0xabcd
			}
			ToF16Strided(dst, stride, src)
			for i := range dst {
				w := uint16(0xabcd)
				if i%stride == 0 && i/stride < n {
					w = want[i/stride]
				}
				if dst[i] != w {
					t.Fatalf("ToF16Strided(n=%d, stride %d): [%d] = %#x, want %#x", n, stride, i, dst[i], w)
				}
			}
		}
	}
	for _, n := range []int{16, 32, 48, 256} {
		x := make([]float32, n)
		for i := range x {
			switch i % 7 {
			case 0:
				x[i] = float32(math.Inf(-1))
			case 1:
				x[i] = -90 - rng.Float32()*50 // below ggml_v_expf's normal range
			default:
				x[i] = -rng.Float32() * 20
			}
		}
		x[n/2] = 0
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		sg, sw := expSumGGML(got, 0), expSumGGMLGo(want, 0)
		same("exp", got, want)
		if sg != sw {
			t.Fatalf("exp sum %v, Go %v", sg, sw)
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

// TestValuesF16SkipsMaskedCells holds ValuesF16, which skips masked cells
// where ggml's order allows, to the full product over all nkv cells, bit
// for bit, in both orders, for every attended count around the 16- and
// 64-lane boundaries. Values include -0 and probabilities include +0
// among the attended cells, the signed zeros the skipping argument is
// about.
func TestValuesF16SkipsMaskedCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, hd := range []int{4, 6, 48, 64} {
		for _, nkv := range []int{32, 64, 96, 128, 160, 288} {
			stride := nkv + 32
			vT := make([]uint16, (hd-1)*stride+nkv)
			for i := range vT {
				switch rng.IntN(8) {
				case 0:
					vT[i] = 0x8000 // -0
				case 1:
					vT[i] = 0
				default:
					vT[i] = F32ToF16(float32(rng.NormFloat64() * 3))
				}
			}
			for n := 1; n <= nkv; n++ {
				p := make([]float32, nkv)
				for i := range p[:n] {
					if rng.IntN(5) > 0 {
						p[i] = F16ToF32(F32ToF16(rng.Float32()))
					}
				}
				for _, batch := range []int{1, 8} {
					got, want := make([]float32, hd), make([]float32, hd)
					ValuesF16(got, p, vT, stride, n, nkv, batch, nil)
					valuesF16Go(want, p, vT, stride, f16Gemm(hd, nkv, batch))
					for d := range want {
						if math.Float32bits(got[d]) != math.Float32bits(want[d]) {
							t.Fatalf("hd %d nkv %d n %d batch %d: out[%d] = %g (%#x), all cells %g (%#x)",
								hd, nkv, n, batch, d, got[d], math.Float32bits(got[d]), want[d], math.Float32bits(want[d]))
						}
					}
				}
			}
		}
	}
}

// softmaxGGMLAllCells is SoftmaxGGML as ggml computes it, exponentiating
// and scaling every one of the nkv cells, masked ones included: the
// reference for the version that skips the masked groups.
func softmaxGGMLAllCells(x []float32, n, nkv int, scale float32) {
	x = x[:nkv]
	mx := float32(math.Inf(-1))
	for i := range n {
		x[i] *= scale
		mx = max(mx, x[i])
	}
	for i := n; i < nkv; i++ {
		x[i] = float32(math.Inf(-1))
	}
	n16 := nkv &^ 15
	sum := expSumGGML(x[:n16], mx)
	for i := n16; i < nkv; i++ {
		v := float32(math.Exp(float64(x[i] - mx)))
		x[i] = v
		sum += float64(v)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// TestSoftmaxGGMLSkipsMaskedGroups requires SoftmaxGGML's bits to be those
// of the softmax over all nkv cells, for every attended count, whatever
// the masked cells held before (they are overwritten), n_kv multiples of
// 32 as in attention and others that leave a scalar tail.
func TestSoftmaxGGMLSkipsMaskedGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, nkv := range []int{16, 32, 40, 64, 96, 100, 288} {
		for n := 1; n <= nkv; n++ {
			x := make([]float32, nkv)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 8)
			}
			want := append([]float32(nil), x...)
			SoftmaxGGML(x, n, nkv, 0.125)
			softmaxGGMLAllCells(want, n, nkv, 0.125)
			for i := range want {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("nkv %d n %d: p[%d] = %g, all cells %g", nkv, n, i, x[i], want[i])
				}
			}
		}
	}
}

// BenchmarkAttentionF16Decode is one batched decode step's attention as
// the 24m preset runs it at c=8: eight sequences of 200 cached positions,
// six layers of six 48-wide heads, 16 MiB of F16 keys and values in all,
// more than a core's share of the last-level cache, so the step streams
// them as the engine does. batch=1 is ggml's one-token order over the
// same cells (at c=1 the weights streamed between steps evict the cache
// just as well).
func BenchmarkAttentionF16Decode(b *testing.B) {
	for _, batch := range []int{8, 1} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchAttentionF16(b, batch) })
	}
}

func benchAttentionF16(b *testing.B, batch int) {
	const seqs, heads, hd, capPos, n = 8, 36, 48, 288, 200
	nkv := PaddedKV(n - 1)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]uint16, seqs*heads)
	vals := make([][]uint16, seqs*heads)
	for i := range keys {
		keys[i], vals[i] = make([]uint16, capPos*hd), make([]uint16, hd*capPos)
		for j := range keys[i] {
			keys[i][j] = F32ToF16(float32(rng.NormFloat64()))
			vals[i][j] = F32ToF16(float32(rng.NormFloat64()))
		}
	}
	q, q16 := make([]float32, hd), make([]float32, hd)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	p, out := make([]float32, nkv), make([]float32, hd)
	n4 := (n + 3) &^ 3
	for b.Loop() {
		for i := range keys {
			RoundF16(q16, q)
			KeyScoresF16(p[:n4], q16, keys[i][:n4*hd], hd, batch, nil)
			SoftmaxGGML(p, n, nkv, 0.144)
			RoundF16(p[:n], p[:n])
			ValuesF16(out, p, vals[i], capPos, n, nkv, batch, nil)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*seqs*heads*nkv*hd*2), "ns/cell-dim")
}
