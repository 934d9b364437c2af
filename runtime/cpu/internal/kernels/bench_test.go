package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// benchShapes are the matrices of the reference models: dim 288
// (ffn 768) and dim 768 (ffn 2048), vocabulary 32000.
var benchShapes = [][2]int{{288, 288}, {768, 288}, {32000, 288}, {768, 768}, {2048, 768}, {32000, 768}}

func benchMatMul(b *testing.B, threads int, types []gguf.TensorType, batches []int) {
	p := NewPool(threads)
	defer p.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, typ := range types {
		for _, sh := range benchShapes {
			rows, cols := sh[0], sh[1]
			var w *Weight
			for _, batch := range batches {
				b.Run(fmt.Sprintf("%s/%dx%d/batch%d", typ, rows, cols, batch), func(b *testing.B) {
					if w == nil {
						w = mustWeight(b, typ, rows, cols, randVec(rng, rows*cols))
					}
					x := randVec(rng, batch*cols)
					out := make([]float32, batch*rows)
					p.MatMul(out, w, x, batch)
					if threads == 1 {
						// Single-threaded runs stay on this OS thread, so
						// its CPU time is the kernel's.
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
					}
					b.ReportAllocs()
					cpu0 := threadCPUTime()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						p.MatMul(out, w, x, batch)
					}
					b.StopTimer()
					sec := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(float64(len(w.Data))/sec/1e9, "GB/s")
					b.ReportMetric(2*float64(rows*cols*batch)/sec/1e9, "GFLOP/s")
					if cpu := (threadCPUTime() - cpu0).Seconds() / float64(b.N); threads == 1 && cpu > 0 {
						// Throughput per CPU-second: what the kernel does on a
						// core of its own, however loaded the machine is.
						b.ReportMetric(float64(len(w.Data))/cpu/1e9, "cpuGB/s")
						b.ReportMetric(2*float64(rows*cols*batch)/cpu/1e9, "cpuGFLOP/s")
					}
				})
			}
		}
	}
}

// BenchmarkMatMul runs the reference shapes on all cores.
func BenchmarkMatMul(b *testing.B) {
	benchMatMul(b, 0, []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeQ4_0}, []int{1, 8, 128})
}

// BenchmarkMatMulSingleThread shows per-core efficiency.
func BenchmarkMatMulSingleThread(b *testing.B) {
	benchMatMul(b, 1, []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeQ4_0}, []int{1, 8, 128})
}
