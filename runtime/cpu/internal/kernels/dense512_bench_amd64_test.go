//go:build linux && amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// threadClock is the calling thread's CPU time from CLOCK_THREAD_CPUTIME_ID,
// precise to the nanosecond (getrusage's is tick-sampled, too coarse for one
// product of a few milliseconds).
func threadClock() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return float64(ts.Nano()) / 1e9
}

// BenchmarkDenseAVX512 compares the AVX-512 dense kernels with the AVX2 ones
// on one thread, the two alternating call by call within one run so that a
// shared machine's load falls on both alike, and reports each one's median
// GFLOP/s per CPU-second of the calling thread and the ratio new/old:
//
//	go test -run '^$' -bench DenseAVX512 -benchtime 1x ./runtime/cpu/internal/kernels/
func BenchmarkDenseAVX512(b *testing.B) {
	cases := []struct {
		typ    gguf.TensorType
		toggle *bool
	}{
		{gguf.TypeBF16, &haveBF16Tiles},
		{gguf.TypeF16, &have512},
		{gguf.TypeF32, &have512},
	}
	rng := rand.New(rand.NewPCG(71, 72))
	p := NewPool(1)
	defer p.Close()
	for _, c := range cases {
		if !*c.toggle {
			continue
		}
		for _, sh := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}} {
			for _, batch := range []int{128, 512} {
				rows, cols := sh[0], sh[1]
				b.Run(fmt.Sprintf("%s/%dx%d/batch%d", c.typ, rows, cols, batch), func(b *testing.B) {
					w := mustWeight(b, c.typ, rows, cols, randVec(rng, rows*cols))
					x := randVec(rng, batch*cols)
					out := make([]float32, batch*rows)
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					defer func(v bool) { *c.toggle = v }(*c.toggle)
					flops := 2 * float64(rows*cols*batch)
					var rates [2][]float64
					for b.Loop() {
						for rep := 0; rep < 5; rep++ {
							for k, on := range []bool{false, true} {
								*c.toggle = on
								c0 := threadClock()
								p.MatMul(out, w, x, batch)
								if cpu := threadClock() - c0; cpu > 0 {
									rates[k] = append(rates[k], flops/cpu/1e9)
								}
							}
						}
					}
					med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
					old, new := med(rates[0]), med(rates[1])
					b.ReportMetric(old, "avx2-cpuGFLOP/s")
					b.ReportMetric(new, "avx512-cpuGFLOP/s")
					b.ReportMetric(new/old, "ratio")
				})
			}
		}
	}
}
