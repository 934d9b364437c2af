package model

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// mappedMemory holds bytes outside the Go heap, in anonymous memory mapped
// like the model file is (gguf.Open). The two largest, longest-lived
// allocations of a server live there: the KV caches and the fused weight
// copies (fuse). On the heap they would count toward the garbage
// collector's goal (the heap may reach twice its live size before a
// collection; on 24m with 16 slots the goal fell from 69 to 37 MB), and a
// grown cache's old buffers would stay resident until the next collection.
// Mapped memory is released the moment it is replaced, and when its owner
// becomes unreachable.
type mappedMemory struct {
	b []byte // the whole mapping
}

// newMappedMemory returns a holder whose memory is released once owner is
// unreachable.
func newMappedMemory[T any](owner *T) *mappedMemory {
	m := &mappedMemory{}
	runtime.AddCleanup(owner, func(m *mappedMemory) { m.release() }, m)
	return m
}

// adopt makes the holder own mapping (from mapAnon or mapHuge) and
// releases what it held before, so no slice into that may be used after.
func (m *mappedMemory) adopt(mapping []byte) {
	m.release()
	m.b = mapping
}

func (m *mappedMemory) release() {
	if m.b != nil {
		if err := syscall.Munmap(m.b); err != nil {
			panic(fmt.Sprintf("model: unmap %d bytes: %v", len(m.b), err))
		}
		m.b = nil
	}
}

// carve cuts n elements of T from the front of *b.
func carve[T float32 | uint16](b *[]byte, n int) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	s := unsafe.Slice((*T)(unsafe.Pointer(&(*b)[0])), n)
	*b = (*b)[size:]
	return s
}

// mapAnon maps n zeroed bytes of anonymous memory for what; pages become
// resident only when written, so a cache's unused capacity costs nothing.
func mapAnon(n int, what string) []byte {
	if n == 0 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// Like a failed make: the process is out of memory.
		panic(fmt.Sprintf("model: map %d bytes for %s: %v", n, what, err))
	}
	return b
}

// hugePage is the size of a transparent huge page on x86-64 (and on arm64
// with 4 KiB pages).
const hugePage = 2 << 20

// mapHuge maps n zeroed bytes for what, starting on a huge page boundary
// and advised for transparent huge pages, and returns the mapping (for
// adopt) and the n bytes. It is for memory written whole at once and then
// streamed, as weight copies are: a decode step reads every weight, and
// with 4 KiB pages each 4 KiB of it costs a TLB miss (the 134m F16 model's
// fused copies alone are 118 MB). The advice is best effort: where
// transparent huge pages are off, the memory is ordinary pages.
func mapHuge(n int, what string) (mapping, b []byte) {
	if n == 0 {
		return nil, nil
	}
	// Map one huge page more, so that n bytes fit from the first boundary;
	// the pages before it and after the n bytes are never touched and cost
	// nothing.
	mapping = mapAnon(n+hugePage, what)
	start := int(-uintptr(unsafe.Pointer(unsafe.SliceData(mapping))) & (hugePage - 1))
	b = mapping[start : start+n : start+n]
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	return mapping, b
}
