package model

import (
	"bytes"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// FuzzLoad mutates a minimal synthetic model: any file the GGUF reader
// accepts must load or fail with an error, and a model that loads must run
// a forward pass without panicking.
func FuzzLoad(f *testing.F) {
	var seed bytes.Buffer
	shape := synth.Preset{Name: "fuzz", Dim: 8, Layers: 1, Heads: 2, KVHeads: 1, FFN: 16, Vocab: 300, Context: 16, RopeTheta: 10000, RMSEpsilon: 1e-5}
	if err := synth.Write(&seed, synth.Options{Shape: shape, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		m, err := Load(file)
		if err != nil {
			return
		}
		if m.Cfg.Dim*m.Cfg.FFN > 1<<16 || m.Cfg.Vocab > 1<<12 {
			return // keep each run small
		}
		pool := kernels.NewPool(1)
		defer pool.Close()
		r := NewRunner(m, pool, 2)
		var b Batch
		c := m.NewCache(min(m.Cfg.ContextLength, 4))
		b.Add(c, 0, 0, true)
		if _, err := r.Forward(&b); err != nil {
			t.Fatalf("forward on a loaded model: %v", err)
		}
	})
}
