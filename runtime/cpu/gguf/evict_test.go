package gguf_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// TestEvictKeepsData: evicting a tensor's mapped pages only drops them from
// the resident set; reading the tensor again gives the same bytes.
func TestEvictKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 4}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	want := bytes.Clone(ti.Data)
	if err := f.Evict(ti.Data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ti.Data, want) {
		t.Error("tensor bytes changed after Evict")
	}
	// Outside the mapping and empty slices: nothing to do.
	if err := f.Evict(want); err != nil {
		t.Error(err)
	}
	if err := f.Evict(nil); err != nil {
		t.Error(err)
	}
}
