package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
	"golang.org/x/sys/unix"
)

// guarded copies b to the very end of a readable page that is followed by an
// inaccessible one, as the last tensor of a memory-mapped file may be: a
// kernel that reads even one byte past the data faults.
func guarded(t *testing.T, b []byte) []byte {
	t.Helper()
	page := unix.Getpagesize()
	size := (len(b) + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	if err := unix.Mprotect(mem[size:], unix.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	dst := mem[size-len(b) : size]
	copy(dst, b)
	return dst
}

// TestMatMulNoOverread runs every weight type with its data ending at a
// guard page, for the single-row and the tiled paths.
func TestMatMulNoOverread(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	rng := rand.New(rand.NewPCG(33, 34))
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K,
		gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K} {
		cols := 256
		// 6 rows take the row loops; 8 the 4-row tiles of every type
		// (F16 and BF16 tile only matrices of whole 4-row groups).
		for _, rows := range []int{6, 8} {
			data, err := Quantize(typ, randVec(rng, rows*cols))
			if err != nil {
				t.Fatal(err)
			}
			w, err := NewWeight(typ, rows, cols, guarded(t, data))
			if err != nil {
				t.Fatal(err)
			}
			for _, batch := range []int{1, 4, 7} {
				checkMatMul(t, p, w, randVec(rng, batch*cols), batch)
			}
		}
	}
}
