package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// q4kTileInputs returns one Q4_K row of nb super-blocks (with varied
// sub-block scales) and four Q8_K activation rows.
func q4kTileInputs(t *testing.T, rng *rand.Rand, nb int) (*Weight, []int8, []float32, []int16) {
	t.Helper()
	cols := 256 * nb
	src := randVec(rng, cols)
	for i := range src {
		src[i] *= float32(1 + i%7)
	}
	w := mustWeight(t, gguf.TypeQ4_K, 1, cols, src)
	x := randVec(rng, 4*cols)
	xq, xd, xs := make([]int8, 4*cols), make([]float32, 4*nb), make([]int16, 4*16*nb)
	quantizeQ8KGo(x, xq, xd, xs)
	return w, xq, xd, xs
}

// TestQ4KTileGoMatchesRowDot requires the Go tile to equal dotQ4KGo bit
// for bit for each of its four activation rows.
func TestQ4KTileGoMatchesRowDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, nb := range []int{1, 2, 3, 8} {
		w, xq, xd, xs := q4kTileInputs(t, rng, nb)
		cols := 256 * nb
		const os = 5
		out := make([]float32, 3*os+1)
		q4kTile1x4Go(w.Data, xq, xd, xs, nb, out, os)
		for a := 0; a < 4; a++ {
			want := dotQ4KGo(w.Data, xq[a*cols:(a+1)*cols], xd[a*nb:(a+1)*nb], xs[a*16*nb:(a+1)*16*nb])
			if got := out[a*os]; got != want {
				t.Fatalf("nb=%d act %d: tile %g, row dot %g", nb, a, got, want)
			}
		}
	}
}

// TestQ4KMatMulTilesMatchSingleRows requires a batched Q4_K MatMul (tiles
// for groups of four activation rows, row dots for the rest) to equal
// single-row MatMuls exactly, on every build.
func TestQ4KMatMulTilesMatchSingleRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	p := NewPool(2)
	defer p.Close()
	const rows, cols = 13, 512
	w := mustWeight(t, gguf.TypeQ4_K, rows, cols, randVec(rng, rows*cols))
	for _, batch := range []int{4, 7, 9} {
		x := randVec(rng, batch*cols)
		out := make([]float32, batch*rows)
		p.MatMul(out, w, x, batch)
		one := make([]float32, rows)
		for b := 0; b < batch; b++ {
			p.MatMul(one, w, x[b*cols:(b+1)*cols], 1)
			for r, want := range one {
				if got := out[b*rows+r]; got != want {
					t.Fatalf("batch %d row %d, weight row %d: %g, single-row MatMul %g", batch, b, r, got, want)
				}
			}
		}
	}
}

// BenchmarkQ4KPrefill is the A/B of the Q4_K batch tile against the row
// path it replaced (each weight row dotted with one activation row at a
// time), single-threaded on the 134m model's shapes at prefill batch 128:
//
//	go test -run '^$' -bench BenchmarkQ4KPrefill -count 5 ./runtime/cpu/internal/kernels/
//
// On a shared machine compare cpuGFLOP/s (work per CPU-second of this
// thread), and interleave the two sub-benchmarks with -count.
func BenchmarkQ4KPrefill(b *testing.B) {
	rng := rand.New(rand.NewPCG(57, 58))
	for _, sh := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}} {
		rows, cols := sh[0], sh[1]
		const batch = 128
		w := mustWeight(b, gguf.TypeQ4_K, rows, cols, randVec(rng, rows*cols))
		x := randVec(rng, batch*cols)
		j := &matmulJob{out: make([]float32, batch*rows), w: w, batch: batch, rowBytes: w.rowBytes()}
		n := batch * cols
		j.xq, j.xd, j.xs = make([]int8, n), make([]float32, n/256), make([]int16, n/16)
		quantizeQ8KGo(x, j.xq, j.xd, j.xs)
		paths := []struct {
			name string
			run  func()
		}{
			{"rows", func() {
				j.rowDots(0, rows, func(row []byte, b int) float32 {
					xq, xd := j.quantAct(b, 256)
					return dotQ4K(row, xq, xd, j.sums16(b))
				})
			}},
			{"tile", func() { matmulQ4K(j, 0, rows) }},
		}
		for _, path := range paths {
			b.Run(fmt.Sprintf("%dx%d/batch%d/%s", rows, cols, batch, path.name), func(b *testing.B) {
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
}
