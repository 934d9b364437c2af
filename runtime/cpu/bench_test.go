package cpu

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// forwardThreads is BenchmarkForward's thread count: -forward.threads=1
// gives the single-core figures (compare per-core efficiency with
// llama-bench -t 1).
var forwardThreads = flag.Int("forward.threads", 2, "compute threads of BenchmarkForward")

// BenchmarkForward measures llama-bench's tests on the synthetic presets
// with 2 threads (-forward.threads): pp128 (one 128-token prompt batch),
// tg128 (128 decode steps of one sequence) and tg128@N (128 batched steps
// of N = 2, 4, 8, 16 sequences), reporting tokens/s. Models are written to
// a temp dir per preset and type, e.g.
//
//	go test -run '^$' -bench 'Forward/24m-q8_0' -benchtime 3x ./runtime/cpu/
//	go test -run '^$' -bench 'Forward/134m-f16/tg' -benchtime 3x ./runtime/cpu/ -forward.threads=1
func BenchmarkForward(b *testing.B) {
	for _, preset := range []string{"24m", "134m"} {
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0} {
			b.Run(fmt.Sprintf("%s-%s", preset, strings.ToLower(typ.String())), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "model.gguf")
				if err := synth.Create(path, synth.Options{Preset: preset, Type: typ, Seed: 1}); err != nil {
					b.Fatal(err)
				}
				bench, err := OpenBench(path, *forwardThreads, 128, "")
				if err != nil {
					b.Fatal(err)
				}
				defer bench.Close()
				run := func(name string, tokens int, f func() (time.Duration, error)) {
					b.Run(name, func(b *testing.B) {
						var total time.Duration
						cpu0 := processCPUTime()
						for b.Loop() {
							d, err := f()
							if err != nil {
								b.Fatal(err)
							}
							total += d
						}
						b.ReportMetric(float64(tokens*b.N)/total.Seconds(), "tok/s")
						if cpu := processCPUTime() - cpu0; cpu > 0 {
							// Steadier on a shared machine (the pool's spinning
							// workers count as busy).
							b.ReportMetric(float64(tokens*b.N)/cpu.Seconds(), "tok/cpu-s")
						}
					})
				}
				run("pp128", 128, func() (time.Duration, error) { return bench.Prompt(128) })
				run("tg128", 128, func() (time.Duration, error) { return bench.Generate(128, 1) })
				for _, seqs := range []int{2, 4, 8, 16} {
					run(fmt.Sprintf("tg128@%d", seqs), seqs*128, func() (time.Duration, error) { return bench.Generate(128, seqs) })
				}
			})
		}
	}
}

// BenchmarkEngine measures end-to-end generation through the scheduler
// (sampling, streams, continuous batching) with 1 and 8 concurrent
// sequences of 64 greedy tokens on the 24m Q8_0 preset, reporting the
// aggregate tokens/s.
func BenchmarkEngine(b *testing.B) {
	path := filepath.Join(b.TempDir(), "model.gguf")
	if err := synth.Create(path, synth.Options{Preset: "24m", Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	e, err := New(path, Options{Threads: 2, MaxSeqs: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	prompt := []int{1, 100, 200, 300}
	for _, seqs := range []int{1, 8} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			tokens := 0
			start := time.Now()
			for b.Loop() {
				streams := make([]*runtime.Stream, seqs)
				for i := range streams {
					streams[i] = mustGenerate(b, e, &runtime.Request{Prompt: prompt, MaxTokens: 64, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
				}
				for _, st := range streams {
					toks, _, err := collect(b, st)
					if err != nil {
						b.Fatal(err)
					}
					tokens += len(toks)
				}
			}
			b.ReportMetric(float64(tokens)/time.Since(start).Seconds(), "tok/s")
		})
	}
}

// BenchmarkEngineConcurrency drives the engine the way a served benchmark
// does: c clients, each sending its next request as soon as the previous
// one ends (134-token prompts, 128 greedy output tokens, EOS ignored), on
// the 24m and 134m Q8_0 presets with 2 threads (and 1, t=1) and 16 slots,
// reporting output tokens/s. The ratio of c=8 to c=1 is what batched decode
// buys:
//
//	go test -run '^$' -bench 'EngineConcurrency/24m-q8_0/c' -benchtime 2x ./runtime/cpu/
func BenchmarkEngineConcurrency(b *testing.B) {
	for _, preset := range []string{"24m", "134m"} {
		b.Run(preset+"-q8_0", func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "model.gguf")
			if err := synth.Create(path, synth.Options{Preset: preset, Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			for _, threads := range []int{2, 1} {
				e, err := New(path, Options{Threads: threads, MaxSeqs: 16})
				if err != nil {
					b.Fatal(err)
				}
				prefix := ""
				if threads != 2 {
					prefix = fmt.Sprintf("t=%d/", threads)
				}
				for _, c := range []int{1, 2, 4, 8, 16} {
					b.Run(fmt.Sprintf("%sc=%d", prefix, c), func(b *testing.B) {
						benchConcurrent(b, e, c, 134, 128)
					})
				}
				e.Close()
			}
		})
	}
}

// benchConcurrent runs one round of c clients with one request each per
// iteration and reports the output tokens/s over the whole run, and per
// CPU-second of the process (steadier on a shared machine; the pool's
// spinning workers count as busy).
func benchConcurrent(b *testing.B, e *Engine, c, isl, osl int) {
	tokens := 0
	var elapsed time.Duration
	cpu0 := processCPUTime()
	for i := 0; b.Loop(); i++ {
		streams := make([]*runtime.Stream, c)
		start := time.Now()
		for k := range streams {
			prompt := make([]int, isl)
			for p := range prompt {
				prompt[p] = 1 + (p*7919+(i*c+k)*104729)%31000
			}
			streams[k] = mustGenerate(b, e, &runtime.Request{Prompt: prompt, MaxTokens: osl, IgnoreEOS: true, Logprobs: -1, PromptLogprobs: -1})
		}
		for _, st := range streams {
			toks, _, err := collect(b, st)
			if err != nil {
				b.Fatal(err)
			}
			tokens += len(toks)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(tokens)/elapsed.Seconds(), "tok/s")
	if cpu := processCPUTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(tokens)/cpu.Seconds(), "tok/cpu-s")
	}
}

// BenchmarkKVCacheType compares the F16 and F32 key/value caches on the
// same model, one thread, interleaved within each iteration (pp128, then
// tg128, for each type in turn, the first type alternating) so that a
// shared machine's load hits both alike; it reports tokens per CPU-second of each and their ratio, e.g.
//
//	go test -run '^$' -bench 'KVCacheType/24m' -benchtime 3x ./runtime/cpu/
func BenchmarkKVCacheType(b *testing.B) {
	for _, preset := range []string{"24m", "134m"} {
		b.Run(preset+"-q8_0", func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "model.gguf")
			if err := synth.Create(path, synth.Options{Preset: preset, Type: gguf.TypeQ8_0, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			types := []string{"f16", "f32"}
			benches := make([]*Bench, len(types))
			for i, kv := range types {
				bench, err := OpenBench(path, 1, 128, kv)
				if err != nil {
					b.Fatal(err)
				}
				defer bench.Close()
				benches[i] = bench
			}
			var pp, tg [2]time.Duration
			cpuTime := func(f func() (time.Duration, error)) time.Duration {
				start := processCPUTime()
				if _, err := f(); err != nil {
					b.Fatal(err)
				}
				return processCPUTime() - start
			}
			for iter := 0; b.Loop(); iter++ {
				// Alternate which type goes first, so that neither always
				// runs on the caches the other warmed.
				for k := range benches {
					i := (k + iter) % len(benches)
					pp[i] += cpuTime(func() (time.Duration, error) { return benches[i].Prompt(128) })
					tg[i] += cpuTime(func() (time.Duration, error) { return benches[i].Generate(128, 1) })
				}
			}
			rate := func(d time.Duration) float64 { return float64(128*b.N) / d.Seconds() }
			for i, kv := range types {
				b.ReportMetric(rate(pp[i]), "pp128-"+kv+"-tok/cpu-s")
				b.ReportMetric(rate(tg[i]), "tg128-"+kv+"-tok/cpu-s")
			}
			b.ReportMetric(rate(pp[0])/rate(pp[1]), "pp-f16/f32")
			b.ReportMetric(rate(tg[0])/rate(tg[1]), "tg-f16/f32")
		})
	}
}
