package cpu

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// BenchmarkForward measures llama-bench's tests on the synthetic presets
// with 2 threads: pp128 (one 128-token prompt batch), tg128 (128 decode
// steps of one sequence) and tg128@8 (128 batched steps of 8 sequences),
// reporting tokens/s. Models are written to a temp dir per preset, e.g.
//
//	go test -run '^$' -bench 'Forward/24m-q8_0' -benchtime 3x ./runtime/cpu/
func BenchmarkForward(b *testing.B) {
	for _, preset := range []string{"24m", "134m"} {
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0} {
			b.Run(fmt.Sprintf("%s-%s", preset, strings.ToLower(typ.String())), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "model.gguf")
				if err := synth.Create(path, synth.Options{Preset: preset, Type: typ, Seed: 1}); err != nil {
					b.Fatal(err)
				}
				bench, err := OpenBench(path, 2, 128)
				if err != nil {
					b.Fatal(err)
				}
				defer bench.Close()
				run := func(name string, tokens int, f func() (time.Duration, error)) {
					b.Run(name, func(b *testing.B) {
						var total time.Duration
						for b.Loop() {
							d, err := f()
							if err != nil {
								b.Fatal(err)
							}
							total += d
						}
						b.ReportMetric(float64(tokens*b.N)/total.Seconds(), "tok/s")
					})
				}
				run("pp128", 128, func() (time.Duration, error) { return bench.Prompt(128) })
				run("tg128", 128, func() (time.Duration, error) { return bench.Generate(128, 1) })
				run("tg128@8", 8*128, func() (time.Duration, error) { return bench.Generate(128, 8) })
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
