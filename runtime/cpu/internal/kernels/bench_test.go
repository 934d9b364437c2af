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
			if (typ == gguf.TypeQ4_K || typ == gguf.TypeQ6_K) && cols%256 != 0 {
				continue // K-quant rows are whole 256-element super-blocks
			}
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

// BenchmarkMatMul runs the reference shapes on all cores, e.g.
//
//	go test -run '^$' -bench '^BenchmarkMatMul(SingleThread)?$/(F32|Q8_0)/' -benchtime 100ms -count 3 ./runtime/cpu/internal/kernels/
//
// On a shared machine read the single-thread cpuGB/s and cpuGFLOP/s.
func BenchmarkMatMul(b *testing.B) {
	benchMatMul(b, 0, []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeQ4_0}, []int{1, 8, 128})
}

// BenchmarkMatMulSingleThread shows per-core efficiency.
func BenchmarkMatMulSingleThread(b *testing.B) {
	benchMatMul(b, 1, []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeQ4_0}, []int{1, 8, 128})
}

// BenchmarkMatMulQ8DecodeSingleThread covers the decode batches (one row
// per active sequence) on Q8_0, where every batch size, not only multiples
// of the tile's four activation rows, should read the weights once:
//
//	go test -run '^$' -bench 'Q8DecodeSingleThread/.*/(32000|2048)x768' -benchtime 20x -count 3 ./runtime/cpu/internal/kernels/
func BenchmarkMatMulQ8DecodeSingleThread(b *testing.B) {
	benchMatMul(b, 1, []gguf.TensorType{gguf.TypeQ8_0}, []int{1, 2, 3, 4, 5, 6, 7, 8, 16})
}

// BenchmarkMatMulKDecodeSingleThread is the Q4_K and Q6_K counterpart
// (dim 768 shapes): batches of 4 and up use 1x4 tiles, Q4_K batches of 2-3
// a two-row tile.
func BenchmarkMatMulKDecodeSingleThread(b *testing.B) {
	benchMatMul(b, 1, []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ6_K}, []int{1, 2, 3, 4, 8})
}

// BenchmarkMatMulBF16SingleThread is the BF16 counterpart (kept apart so
// the main benchmarks' run time does not grow):
//
//	go test -run '^$' -bench 'BF16SingleThread' -benchtime 100ms -count 3 ./runtime/cpu/internal/kernels/
func BenchmarkMatMulBF16SingleThread(b *testing.B) {
	benchMatMul(b, 1, []gguf.TensorType{gguf.TypeBF16}, []int{1, 8, 128})
}

// BenchmarkPoolRun measures the dispatch cost of a tiny job: a decode step
// issues about 7 products per layer, so this must stay in the microseconds.
func BenchmarkPoolRun(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	var sink [64]int
	fn := func(lo, hi int) { sink[lo%64] += hi }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Run(p.Threads()*2, fn)
	}
}

// BenchmarkDecodeMatMuls runs the matrix products of one decoded token
// through the reference models (q, k, v, o, gate, up and down per
// layer, then the output layer) with distinct weights per layer, so the
// weights stream from memory as in a real decode step. tok/s is an upper
// bound for decode: attention and the vector ops are not included.
func BenchmarkDecodeMatMuls(b *testing.B) {
	models := []struct {
		name                    string
		dim, ffn, layers, vocab int
	}{
		{"dim288", 288, 768, 6, 32000},
		{"dim768", 768, 2048, 12, 32000},
	}
	p := NewPool(0)
	defer p.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	for _, m := range models {
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0} {
			for _, batch := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/batch%d", typ, m.name, batch), func(b *testing.B) {
					type mm struct {
						w   *Weight
						x   []float32
						out []float32
					}
					var ops []mm
					add := func(rows, cols int) {
						ops = append(ops, mm{mustWeight(b, typ, rows, cols, randVec(rng, rows*cols)), randVec(rng, batch*cols), make([]float32, batch*rows)})
					}
					for l := 0; l < m.layers; l++ {
						for k := 0; k < 4; k++ {
							add(m.dim, m.dim)
						}
						add(m.ffn, m.dim)
						add(m.ffn, m.dim)
						add(m.dim, m.ffn)
					}
					add(m.vocab, m.dim)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						for _, o := range ops {
							p.MatMul(o.out, o.w, o.x, batch)
						}
					}
					b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}
