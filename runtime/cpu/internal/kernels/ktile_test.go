package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// kTileInputs returns one row of type typ (a K-quant) of nb super-blocks
// (with varied sub-block scales) and four Q8_K activation rows.
func kTileInputs(t *testing.T, rng *rand.Rand, typ gguf.TensorType, nb int) (*Weight, []int8, []float32, []int16) {
	t.Helper()
	cols := 256 * nb
	src := randVec(rng, cols)
	for i := range src {
		src[i] *= float32(1 + i%7)
	}
	w := mustWeight(t, typ, 1, cols, src)
	x := randVec(rng, 4*cols)
	xq, xd, xs := make([]int8, 4*cols), make([]float32, 4*nb), make([]int16, 4*16*nb)
	quantizeQ8KGo(x, xq, xd, xs)
	return w, xq, xd, kSums(typ, xq, xs)
}

// kSums is the sums argument typ's kernels take for activation codes xq
// with 16-code sums xs: xs itself, or for Q6_K the pair sums.
func kSums(typ gguf.TensorType, xq []int8, xs []int16) []int16 {
	if typ != gguf.TypeQ6_K {
		return xs
	}
	return q6kSumsOf(xq)
}

// q6kSumsOf returns the pair sums (q6kPairSums) of activation codes xq.
func q6kSumsOf(xq []int8) []int16 {
	xm := make([]int16, len(xq)/2)
	q6kPairSums(xq, xm)
	return xm
}

// TestKTileGoMatchesRowDot requires the Go tiles to equal dotQ4KGo,
// dotQ5KGo and dotQ6KGo bit for bit for each of their four activation rows.
func TestKTileGoMatchesRowDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, tc := range []struct {
		typ  gguf.TensorType
		tile kTile
		dot  kDot
	}{
		{gguf.TypeQ4_K, q4kTile1x4Go, dotQ4KGo},
		{gguf.TypeQ5_K, q5kTile1x4Go, dotQ5KGo},
		{gguf.TypeQ6_K, q6kTile1x4Go, func(w []byte, xq []int8, xd []float32, _ []int16) float32 { return dotQ6KGo(w, xq, xd) }},
	} {
		for _, nb := range []int{1, 2, 3, 8} {
			w, xq, xd, xs := kTileInputs(t, rng, tc.typ, nb)
			checkKTile(t, tc.typ, nb, w.Data, xq, xd, xs, tc.tile, tc.dot)
		}
	}
}

// TestKPairMatchesRowDot requires the K-quant pair tiles (q4kPair: the
// assembly two-row tile on amd64) to equal the row dot product bit for bit for both
// activation rows, and to write nothing else.
func TestKPairMatchesRowDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	for _, tc := range []struct {
		typ  gguf.TensorType
		pair kTile
		dot  kDot
	}{
		{gguf.TypeQ4_K, q4kPair, dotQ4K},
	} {
		for _, nb := range []int{1, 2, 3, 8} {
			checkKPair(t, rng, tc.typ, nb, tc.pair, tc.dot)
		}
	}
}

func checkKPair(t *testing.T, rng *rand.Rand, typ gguf.TensorType, nb int, pair kTile, dot kDot) {
	t.Helper()
	w, xq, xd, xs := kTileInputs(t, rng, typ, nb)
	cols := 256 * nb
	const os = 5
	out := make([]float32, 2*os)
	for i := range out {
		out[i] = 42
	}
	pair(w.Data, xq[:2*cols], xd[:2*nb], xs[:2*16*nb], nb, out, os)
	for i, got := range out {
		switch i {
		case 0, os:
			a := i / os
			if want := dot(w.Data, xq[a*cols:(a+1)*cols], xd[a*nb:(a+1)*nb], xs[a*16*nb:(a+1)*16*nb]); got != want {
				t.Fatalf("%s nb=%d act %d: pair %g, row dot %g", typ, nb, a, got, want)
			}
		default:
			if got != 42 {
				t.Fatalf("%s nb=%d: out[%d] written (%g)", typ, nb, i, got)
			}
		}
	}
}

// checkKTile runs tile on four activation rows and requires each output to
// equal dot's bit for bit.
func checkKTile(t *testing.T, typ gguf.TensorType, nb int, w []byte, xq []int8, xd []float32, xs []int16, tile kTile, dot kDot) {
	t.Helper()
	cols := 256 * nb
	const os = 5
	out := make([]float32, 3*os+1)
	ns := len(xs) / 4 // sums per activation row
	tile(w, xq, xd, xs, nb, out, os)
	for a := 0; a < 4; a++ {
		want := dot(w, xq[a*cols:(a+1)*cols], xd[a*nb:(a+1)*nb], xs[a*ns:(a+1)*ns])
		if got := out[a*os]; got != want {
			t.Fatalf("%s nb=%d act %d: tile %g, row dot %g", typ, nb, a, got, want)
		}
	}
}

// TestKQuantMatMulTilesMatchSingleRows requires a batched Q4_K, Q5_K or Q6_K
// MatMul (tiles for groups of four activation rows, row dots for the rest)
// to equal single-row MatMuls exactly, on every build.
func TestKQuantMatMulTilesMatchSingleRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	p := NewPool(2)
	defer p.Close()
	const rows, cols = 13, 512
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		w := mustWeight(t, typ, rows, cols, randVec(rng, rows*cols))
		for _, batch := range []int{2, 3, 4, 6, 7, 9} {
			x := randVec(rng, batch*cols)
			out := make([]float32, batch*rows)
			p.MatMul(out, w, x, batch)
			one := make([]float32, rows)
			for b := 0; b < batch; b++ {
				p.MatMul(one, w, x[b*cols:(b+1)*cols], 1)
				for r, want := range one {
					if got := out[b*rows+r]; got != want {
						t.Fatalf("%s batch %d row %d, weight row %d: %g, single-row MatMul %g", typ, batch, b, r, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkKQuantPrefill is the A/B of the Q4_K, Q5_K and Q6_K batch tiles
// against the row path they replaced (each weight row dotted with one
// activation row at a time), single-threaded on the 134m model's shapes at prefill batch 128:
//
//	go test -run '^$' -bench BenchmarkKQuantPrefill -count 5 ./runtime/cpu/internal/kernels/
//
// On a shared machine compare cpuGFLOP/s (work per CPU-second of this
// thread), and interleave the two sub-benchmarks with -count.
func BenchmarkKQuantPrefill(b *testing.B) {
	rng := rand.New(rand.NewPCG(57, 58))
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, sh := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}} {
			benchKQuantPrefill(b, rng, typ, sh[0], sh[1])
		}
	}
}

// benchKQuantPrefill runs the row path and the tiles on one shape.
func benchKQuantPrefill(b *testing.B, rng *rand.Rand, typ gguf.TensorType, rows, cols int) {
	const batch = 128
	w := mustWeight(b, typ, rows, cols, randVec(rng, rows*cols))
	x := randVec(rng, batch*cols)
	j := &matmulJob{out: make([]float32, batch*rows), w: w, batch: batch, rowBytes: w.rowBytes()}
	n := batch * cols
	j.xq, j.xd, j.xs = make([]int8, n), make([]float32, n/256), make([]int16, n/16)
	quantizeQ8KGo(x, j.xq, j.xd, j.xs)
	j.xm = kSums(gguf.TypeQ6_K, j.xq, nil)
	paths := []struct {
		name string
		run  func()
	}{
		{"rows", func() {
			j.rowDots(0, rows, func(row []byte, b int) float32 {
				xq, xd := j.quantAct(b, 256)
				xs := j.xs[b*cols/16 : (b+1)*cols/16]
				if typ == gguf.TypeQ6_K {
					return dotQ6K(row, xq, xd, j.xm[b*cols/2:(b+1)*cols/2])
				}
				return dotQ4K(row, xq, xd, xs)
			})
		}},
		{"tile", func() {
			if typ == gguf.TypeQ6_K {
				matmulQ6K(j, 0, rows)
			} else {
				matmulQ4K(j, 0, rows)
			}
		}},
	}
	for _, path := range paths {
		b.Run(fmt.Sprintf("%s/%dx%d/batch%d/%s", typ, rows, cols, batch, path.name), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPUTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				path.run()
			}
			b.StopTimer()
			if cpu := (threadCPUTime() - cpu0).Seconds() / float64(b.N); cpu > 0 {
				b.ReportMetric(2*float64(rows*cols*batch)/cpu/1e9, "cpuGFLOP/s")
			}
		})
	}
}

// BenchmarkKQuantDecode is the A/B of decode's K-quant loops (one
// activation row): a row dot product call per row ("dots", the path
// before) against one call for the run of rows ("rows"), single-threaded,
// per CPU-second.
func BenchmarkKQuantDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, tc := range []struct {
		typ  gguf.TensorType
		rows func(w []byte, rb, r0 int, xq []int8, xd []float32, xs []int16, out []float32)
		dot  kDot
	}{
		{gguf.TypeQ4_K, q4kRowDots, dotQ4K},
		{gguf.TypeQ5_K, q5kRowDots, dotQ5K},
		{gguf.TypeQ6_K, q6kRowDots, dotQ6K},
	} {
		for _, sh := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}} {
			rows, cols := sh[0], sh[1]
			w := mustWeight(b, tc.typ, rows, cols, randVec(rng, rows*cols))
			rb, nb := w.rowBytes(), cols/256
			xq, xd, xs := make([]int8, cols), make([]float32, nb), make([]int16, 16*nb)
			quantizeQ8KGo(randVec(rng, cols), xq, xd, xs)
			xs = kSums(tc.typ, xq, xs)
			out := make([]float32, rows)
			for _, path := range []struct {
				name string
				run  func()
			}{
				{"dots", func() {
					for r := range out {
						out[r] = tc.dot(w.Data[r*rb:(r+1)*rb], xq, xd, xs)
					}
				}},
				{"rows", func() { tc.rows(w.Data, rb, 0, xq, xd, xs, out) }},
			} {
				b.Run(fmt.Sprintf("%s/%dx%d/%s", tc.typ, rows, cols, path.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPUTime()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						path.run()
					}
					b.StopTimer()
					if cpu := (threadCPUTime() - cpu0).Seconds() / float64(b.N); cpu > 0 {
						b.ReportMetric(float64(len(w.Data))/cpu/1e9, "cpuGB/s")
					}
				})
			}
		}
	}
}
