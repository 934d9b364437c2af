package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Open memory-maps the GGUF file at path read-only and parses it. Tensor data
// is read from the mapping on demand; call Close to unmap it.
func Open(path string) (_ *File, err error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open gguf: %w", err)
	}
	defer func() {
		if err != nil {
			fd.Close()
		}
	}()
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
	// The file stays open for Sparse readers; Close closes it.
	f.unmap = func() error { return errors.Join(syscall.Munmap(data), fd.Close()) }
	f.mapping = data
	f.fd = fd
	return f, nil
}

// mappedOffset is the file offset of data when data lies wholly inside
// the mapping of a file from Open.
func (f *File) mappedOffset(data []byte) (int64, bool) {
	if f.mapping == nil || len(data) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.mapping)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if start < base || start+uintptr(len(data)) > base+uintptr(len(f.mapping)) {
		return 0, false
	}
	return int64(start - base), true
}

// Sparse returns a reader over data, a range of the mapping such as one
// tensor's bytes, that reads with pread(2) instead of through the mapping.
// It is for a tensor read a few rows at a time, as token embeddings are.
// A read through the mapping makes resident the pages the kernel maps
// around the fault, and recent kernels map the page cache's large folios
// whole: on Linux 6.18 a few hundred rows read from a freshly written
// 134m Q8_0 model's 25 MiB embedding table left all of it resident. A
// pread copies only the bytes asked for, from the same page cache. For
// files from Parse, and for data outside the mapping, the reader reads
// data itself.
func (f *File) Sparse(data []byte) io.ReaderAt {
	off, ok := f.mappedOffset(data)
	if !ok || f.fd == nil {
		return bytes.NewReader(data)
	}
	return io.NewSectionReader(f.fd, off, int64(len(data)))
}

// Evict tells the kernel that the mapped pages lying wholly inside data (a
// tensor's bytes the caller has copied elsewhere) are not needed now, so
// that they leave the process's resident set instead of counting twice. A
// later read faults them back in from the file. It does nothing for data
// outside the mapping or for files from Parse.
func (f *File) Evict(data []byte) error {
	off, ok := f.mappedOffset(data)
	if !ok {
		return nil
	}
	page := int64(os.Getpagesize())
	lo := (off + page - 1) &^ (page - 1)
	hi := (off + int64(len(data))) &^ (page - 1)
	if lo >= hi {
		return nil
	}
	if err := unix.Madvise(f.mapping[lo:hi], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("gguf: release %d mapped bytes: %w", hi-lo, err)
	}
	return nil
}

// Close unmaps a file opened with Open and closes it; tensor Data slices
// and Sparse readers must not be used afterwards. It is a no-op for files from Parse and safe to call twice.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	unmap := f.unmap
	f.unmap = nil
	f.mapping = nil
	f.fd = nil
	for i := range f.Tensors {
		f.Tensors[i].Data = nil
	}
	if err := unmap(); err != nil {
		return fmt.Errorf("unmap gguf: %w", err)
	}
	return nil
}
