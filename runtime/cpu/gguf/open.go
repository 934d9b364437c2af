package gguf

import (
	"fmt"
	"os"
	"syscall"
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
	return f, nil
}

// Close unmaps a file opened with Open; tensor Data slices must not be used
// afterwards. It is a no-op for files from Parse and safe to call twice.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	unmap := f.unmap
	f.unmap = nil
	for i := range f.Tensors {
		f.Tensors[i].Data = nil
	}
	if err := unmap(); err != nil {
		return fmt.Errorf("unmap gguf: %w", err)
	}
	return nil
}
