package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

func TestVectorOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 3, 8, 15, 16, 33, 64, 100, 288} {
		a, b := randVec(rng, n), randVec(rng, n)
		var dot float64
		for i := range a {
			dot += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); !near(float64(got), dot, 1e-5*float64(n+1)) {
			t.Errorf("Dot n=%d: %g, want %g", n, got, dot)
		}
		y := append([]float32(nil), b...)
		Axpy(0.5, a, y)
		for i := range y {
			if want := b[i] + 0.5*a[i]; !near(float64(y[i]), float64(want), 1e-6) {
				t.Fatalf("Axpy n=%d [%d]: %g, want %g", n, i, y[i], want)
			}
		}
		y = append(y[:0], a...)
		Add(y, b)
		Mul(y, b)
		Scale(y, 2)
		for i := range y {
			if want := 2 * (a[i] + b[i]) * b[i]; !near(float64(y[i]), float64(want), 1e-6) {
				t.Fatalf("Add/Mul/Scale n=%d [%d]: %g, want %g", n, i, y[i], want)
			}
		}
		if n == 0 {
			continue
		}
		wt := randVec(rng, n)
		dst := make([]float32, n)
		RMSNorm(dst, a, wt, 1e-5)
		var ss float64
		for _, v := range a {
			ss += float64(v) * float64(v)
		}
		scale := 1 / math.Sqrt(ss/float64(n)+1e-5)
		for i := range dst {
			if want := float64(a[i]) * scale * float64(wt[i]); !near(float64(dst[i]), want, 1e-5) {
				t.Fatalf("RMSNorm n=%d [%d]: %g, want %g", n, i, dst[i], want)
			}
		}
		sm := append([]float32(nil), a...)
		sm[0] = 80 // large values must not overflow
		Softmax(sm)
		var total float64
		for _, v := range sm {
			total += float64(v)
		}
		if !near(total, 1, 1e-5) || (n > 1 && !(sm[0] > sm[1])) {
			t.Fatalf("Softmax n=%d: sum %g, %v", n, total, sm[:min(n, 4)])
		}
		g, u := append([]float32(nil), a...), b
		SwiGLU(g, u)
		s := append([]float32(nil), a...)
		SiLU(s)
		for i := range g {
			silu := float64(a[i]) / (1 + math.Exp(-float64(a[i])))
			if !near(float64(s[i]), silu, 1e-6) || !near(float64(g[i]), silu*float64(u[i]), 1e-6) {
				t.Fatalf("SiLU/SwiGLU n=%d [%d]: %g %g, want %g %g", n, i, s[i], g[i], silu, silu*float64(u[i]))
			}
		}
	}
}

func TestHalfSlices(t *testing.T) {
	src := []float32{0, 1, -2.5, 65504, 1e-7}
	h := make([]uint16, len(src))
	F32ToF16Slice(h, src)
	back := make([]float32, len(src))
	F16ToF32Slice(back, h)
	for i := range src {
		if back[i] != F16ToF32(F32ToF16(src[i])) {
			t.Errorf("[%d] %g -> %g", i, src[i], back[i])
		}
	}
	BF16ToF32Slice(back, []uint16{0x3f80, 0xc000, 0, 0, 0})
	if back[0] != 1 || back[1] != -2 {
		t.Errorf("BF16ToF32Slice = %v", back[:2])
	}
}

// TestExpf holds the fast exp to the float64 library over its whole range.
func TestExpf(t *testing.T) {
	for x := float32(-87); x <= 88; x += 0.01 {
		got, want := float64(expf(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 3e-7*want {
			t.Fatalf("expf(%g) = %g, want %g", x, got, want)
		}
	}
	if got := expf(-1000); got <= 0 || got > 1e-37 {
		t.Errorf("expf(-1000) = %g, want a tiny positive number", got)
	}
	if got := expf(1000); math.IsInf(float64(got), 0) || got < 1e38 {
		t.Errorf("expf(1000) = %g, want a large finite number", got)
	}
	x := []float32{1, 2, 3}
	if s := ExpSub(x, 3); !near(float64(s), math.Exp(-2)+math.Exp(-1)+1, 1e-6) || !near(float64(x[2]), 1, 1e-7) {
		t.Errorf("ExpSub = %g, %v", s, x)
	}
}

func TestDotRowsAxpyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, hd := range []int{1, 7, 8, 48, 64, 100} {
		const rows = 9
		stride := hd + 3
		m := randVec(rng, rows*stride)
		x := randVec(rng, hd)
		out := make([]float32, rows)
		DotRows(out, x, m, stride)
		a := randVec(rng, rows)
		y := randVec(rng, hd)
		y0 := append([]float32(nil), y...)
		AxpyRows(y, a, m, stride)
		for j := 0; j < rows; j++ {
			var want float64
			for c := 0; c < hd; c++ {
				want += float64(x[c]) * float64(m[j*stride+c])
			}
			if !near(float64(out[j]), want, 1e-5*float64(hd)) {
				t.Fatalf("DotRows hd=%d row %d: %g, want %g", hd, j, out[j], want)
			}
		}
		for c := 0; c < hd; c++ {
			want := float64(y0[c])
			for j := 0; j < rows; j++ {
				want += float64(a[j]) * float64(m[j*stride+c])
			}
			if !near(float64(y[c]), want, 1e-5*rows) {
				t.Fatalf("AxpyRows hd=%d [%d]: %g, want %g", hd, c, y[c], want)
			}
		}
	}
	DotRows(nil, []float32{1}, nil, 1) // no rows: nothing to do
	empty := []float32{5}
	DotRows(empty, nil, nil, 1) // empty vectors: a zero dot product
	if empty[0] != 0 {
		t.Errorf("DotRows of empty vectors = %g", empty[0])
	}
	AxpyRows([]float32{1}, nil, nil, 1)
}

// TestRowsMatchSingleCalls checks the promise attention relies on: DotRows
// and AxpyRows give the same bits as one Dot or Axpy per row.
func TestRowsMatchSingleCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, hd := range []int{3, 8, 32, 48, 64, 72, 100, 128} {
		for _, rows := range []int{1, 5, 200} {
			m := randVec(rng, rows*hd)
			x := randVec(rng, hd)
			out := make([]float32, rows)
			DotRows(out, x, m, hd)
			for j := range rows {
				if want := Dot(x, m[j*hd:(j+1)*hd]); out[j] != want {
					t.Fatalf("DotRows hd=%d rows=%d row %d: %g, Dot gives %g", hd, rows, j, out[j], want)
				}
			}
			a := randVec(rng, rows)
			y := randVec(rng, hd)
			want := append([]float32(nil), y...)
			AxpyRows(y, a, m, hd)
			for j := range rows {
				Axpy(a[j], m[j*hd:(j+1)*hd], want)
			}
			for c := range hd {
				if y[c] != want[c] {
					t.Fatalf("AxpyRows hd=%d rows=%d [%d]: %g, Axpy gives %g", hd, rows, c, y[c], want[c])
				}
			}
		}
	}
}
