package model

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
	"github.com/ttis-dev/ttis/runtime/cpu/synth"
)

// TestEmbeddingsStayUnmapped: a forward pass reads its tokens' embedding
// rows with pread, so the mapped pages holding those rows do not enter the
// process's resident set, while the output head, read through the mapping,
// does. The logits equal those of the same model reading its embeddings
// through the mapping.
func TestEmbeddingsStayUnmapped(t *testing.T) {
	// An 8 MiB F32 table; the tokens' rows lie 3-6 MiB into it, away from
	// the header and the next tensor, whose reads map the page cache's
	// folios (up to 2 MiB) around them.
	shape := synth.Preset{Name: "wide-vocab", Dim: 64, Layers: 1, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 32768, Context: 16, RopeTheta: 10000, RMSEpsilon: 1e-5}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Create(path, synth.Options{Shape: shape, Type: gguf.TypeF32, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	f, m := openModel(t, path)
	if m.tokRows == nil {
		t.Fatal("untied embeddings are read through the mapping")
	}
	tokens := []int{13000, 17000, 21000, 24000}
	forward := func(m *Model) []float32 {
		r := NewRunner(m, kernels.NewPool(1), len(tokens))
		c := m.NewCache(len(tokens))
		var b Batch
		for i, tok := range tokens {
			b.Add(c, tok, i, true)
		}
		logits, err := r.Forward(&b)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(logits)
	}
	got := forward(m)

	emb, _ := f.Tensor("token_embd.weight")
	rb := m.tokEmbd.RowBytes()
	for _, tok := range tokens {
		if n := residentPages(t, emb.Data[tok*rb:(tok+1)*rb]); n != 0 {
			t.Errorf("token %d: the pages of its embedding row are resident after a forward pass", tok)
		}
	}
	out, _ := f.Tensor("output.weight")
	if residentPages(t, out.Data) == 0 {
		t.Fatal("the output head is not resident either: pagemap does not show this process's pages")
	}

	mapped := *m // shares m's fused weights, so m must stay reachable
	mapped.tokRows = nil
	if want := forward(&mapped); !slices.Equal(got, want) {
		t.Error("logits differ between embeddings read with pread and through the mapping")
	}
	runtime.KeepAlive(m)
}

// residentPages counts the pages of b present in this process's page table
// (bit 63 of each page's /proc/self/pagemap entry).
func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no page map to check residency with: %v", err)
	}
	defer pm.Close()
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	n := 0
	for p := start &^ (page - 1); p < start+uintptr(len(b)); p += page {
		var e [8]byte
		if _, err := pm.ReadAt(e[:], int64(p/page*8)); err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint64(e[:])&(1<<63) != 0 {
			n++
		}
	}
	return n
}
