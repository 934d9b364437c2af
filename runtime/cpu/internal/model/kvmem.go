package model

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// kvMemory holds a cache's keys and values outside the Go heap, in
// anonymous memory mapped like the model file is (gguf.Open). The caches
// are a server's largest and longest-lived allocation: on the heap they
// would count toward the garbage collector's goal (the heap may reach
// twice its live size before a collection; on 24m with 16 slots the goal
// fell from 69 to 37 MB), and a grown cache's old buffers would stay
// resident until the next collection. Mapped memory is released the
// moment the cache grows, and when the cache becomes unreachable.
type kvMemory struct {
	b []byte
}

// newKVMemory returns a holder whose memory is released once owner is
// unreachable.
func newKVMemory[T any](owner *T) *kvMemory {
	m := &kvMemory{}
	runtime.AddCleanup(owner, func(m *kvMemory) { m.release() }, m)
	return m
}

// adopt makes the holder own b (from allocKV) and releases what it held
// before, so no slice into that may be used after.
func (m *kvMemory) adopt(b []byte) {
	m.release()
	m.b = b
}

func (m *kvMemory) release() {
	if m.b != nil {
		freeKV(m.b)
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

// allocKV maps n zeroed bytes of anonymous memory; pages become resident
// only when written, so a cache's unused capacity costs nothing.
func allocKV(n int) []byte {
	if n == 0 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// Like a failed make: the process is out of memory.
		panic(fmt.Sprintf("model: map %d bytes for a KV cache: %v", n, err))
	}
	return b
}

func freeKV(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic(fmt.Sprintf("model: unmap a KV cache of %d bytes: %v", len(b), err))
	}
}
