package model

import (
	"bytes"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// TestFuseStacksIntoOneMapping: every layer's stacked Q/K/V and gate/up
// matrices hold the originals' bytes in order, one after another in the
// mapping fuse made: the first on a huge page boundary, each on a cache
// line, none overlapping.
func TestFuseStacksIntoOneMapping(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeF16} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := synth.Create(path, synth.Options{Preset: "tiny", Type: typ, Seed: 9}); err != nil {
			t.Fatal(err)
		}
		_, m := openModel(t, path)
		if !m.fusedQKV || !m.fusedGateUp {
			t.Fatalf("%s: tiny model not fused (qkv %v, gate/up %v)", typ, m.fusedQKV, m.fusedGateUp)
		}
		addr := func(w *kernels.Weight) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(w.Data))) }
		if a := addr(m.layers[0].qkv); a%hugePage != 0 {
			t.Errorf("%s: the first stacked matrix starts at %#x, not on a huge page boundary", typ, a)
		}
		end := addr(m.layers[0].qkv)
		for i := range m.layers {
			ly := &m.layers[i]
			for _, c := range []struct {
				name    string
				stacked *kernels.Weight
				parts   []*kernels.Weight
			}{{"qkv", ly.qkv, []*kernels.Weight{ly.wq, ly.wk, ly.wv}}, {"gate/up", ly.gateUp, []*kernels.Weight{ly.gate, ly.up}}} {
				var want []byte
				rows := 0
				for _, p := range c.parts {
					want = append(want, p.Data...)
					rows += p.Rows
				}
				if !bytes.Equal(c.stacked.Data, want) || c.stacked.Rows != rows || c.stacked.Type != typ {
					t.Errorf("%s layer %d %s: stacked matrix differs from its parts", typ, i, c.name)
				}
				if a := addr(c.stacked); a < end || a%64 != 0 {
					t.Errorf("%s layer %d %s: starts at %#x, before the previous end %#x or off a cache line", typ, i, c.name, a, end)
				}
				end = addr(c.stacked) + uintptr(len(c.stacked.Data))
			}
		}
		runtime.KeepAlive(m)
	}
}
