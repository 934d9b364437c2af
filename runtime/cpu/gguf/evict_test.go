package gguf_test

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// TestEvictKeepsData: evicting a tensor's mapped pages only drops them from
// the resident set; reading the tensor again gives the same bytes.
func TestEvictKeepsData(t *testing.T) {
	f, ti := openTinyTensor(t, "token_embd.weight")
	defer f.Close()
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

// TestSparseReadsTheFile: a Sparse reader gives the tensor's bytes, from the
// file for a mapped tensor and from the slice otherwise, and stops at the
// tensor's end; after Close, reads fail instead of touching the unmapped
// memory.
func TestSparseReadsTheFile(t *testing.T) {
	f, ti := openTinyTensor(t, "output.weight")
	want := bytes.Clone(ti.Data)
	for name, data := range map[string][]byte{"mapped": ti.Data, "copy": want} {
		r := f.Sparse(data)
		got := make([]byte, len(want))
		if n, err := r.ReadAt(got, 0); n != len(want) || err != nil {
			t.Fatalf("%s: read %d of %d bytes: %v", name, n, len(want), err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: bytes differ from the tensor's", name)
		}
		tail := make([]byte, 8)
		if n, err := r.ReadAt(tail, int64(len(want)-4)); n != 4 || err != io.EOF {
			t.Errorf("%s: read across the tensor's end gave %d bytes, %v; want 4, EOF", name, n, err)
		}
	}
	r := f.Sparse(ti.Data)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(make([]byte, 4), 0); err == nil {
		t.Error("a Sparse reader still reads after Close")
	}
}

// openTinyTensor writes the synthetic tiny model, opens it and returns the
// file and its tensor name; the caller closes the file.
func openTinyTensor(t *testing.T, name string) (*gguf.File, *gguf.TensorInfo) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Create(path, synth.Options{Preset: "tiny", Seed: 4}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := f.Tensor(name)
	if !ok {
		f.Close()
		t.Fatalf("no %s", name)
	}
	return f, ti
}
