package gguf

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Open memory-maps the GGUF file at path read-only and parses it. Tensor data
// is read from the mapping on demand; call Close to unmap it.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("open gguf %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("open gguf %s: file is empty", path)
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("open gguf %s: %d bytes do not fit in memory", path, size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("open gguf %s: mmap: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		_ = syscall.Munmap(data)
		return nil, fmt.Errorf("open gguf %s: %w", path, err)
	}
	f.unmap = func() error { return syscall.Munmap(data) }
	f.mapping = data
	return f, nil
}

// Evict tells the kernel that the mapped pages lying wholly inside data (a
// tensor's bytes the caller has copied elsewhere) are not needed now, so
// that they leave the process's resident set instead of counting twice. A
// later read faults them back in from the file. It does nothing for data
// outside the mapping or for files from Parse.
func (f *File) Evict(data []byte) error {
	if f.mapping == nil || len(data) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.mapping)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if start < base || start+uintptr(len(data)) > base+uintptr(len(f.mapping)) {
		return nil
	}
	page := uintptr(os.Getpagesize())
	lo := (start - base + page - 1) &^ (page - 1)
	hi := (start - base + uintptr(len(data))) &^ (page - 1)
	if lo >= hi {
		return nil
	}
	if err := unix.Madvise(f.mapping[lo:hi], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("gguf: release %d mapped bytes: %w", hi-lo, err)
	}
	return nil
}

// Close unmaps a file opened with Open; tensor Data slices must not be used
// afterwards. It is a no-op for files from Parse and safe to call twice.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	unmap := f.unmap
	f.unmap = nil
	f.mapping = nil
	for i := range f.Tensors {
		f.Tensors[i].Data = nil
	}
	if err := unmap(); err != nil {
		return fmt.Errorf("unmap gguf: %w", err)
	}
	return nil
}
