// Package safetensors reads the safetensors format (huggingface/safetensors,
// docs/source/index.mdx "Format"): an 8-byte little-endian header length N,
// N bytes of JSON mapping each tensor name to its dtype, shape and
// data_offsets [begin, end) into the byte buffer that follows (an optional
// "__metadata__" maps strings to strings), then the buffer.
//
// The file may come from anyone, so the header is bounded, every offset
// and shape is checked against the buffer and the dtype's size (with
// overflow checks), tensors must not overlap, and every error names the
// file and the tensor. The file is memory-mapped, never copied.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"syscall"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

// MaxHeader bounds the JSON header, as the reference implementation does
// (100 MB).
const MaxHeader = 100 << 20

// DType is a tensor element type as the format names it.
type DType string

// The element types OpenCLIP reads; the others are listed by name and
// rejected when read as float32.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
)

// size is the byte size of one element, 0 for an unknown type.
func (d DType) size() int {
	switch d {
	case "F64", "I64", "U64":
		return 8
	case F32, "I32", "U32":
		return 4
	case F16, BF16, "I16", "U16":
		return 2
	case "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// Tensor is one tensor of a file.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	// Data is the tensor's bytes, a slice of the mapping.
	Data []byte
}

// Elements is the number of elements (1 for a scalar).
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file.
type File struct {
	Name     string
	Metadata map[string]string
	tensors  map[string]*Tensor
	names    []string
	unmap    func() error
}

// Open maps the file at path and parses its header.
func Open(path string) (_ *File, err error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 8 {
		return nil, fmt.Errorf("safetensors file %s: %d bytes, shorter than the 8-byte header length", path, st.Size())
	}
	if st.Size() != int64(int(st.Size())) {
		return nil, fmt.Errorf("safetensors file %s: %d bytes do not fit in memory", path, st.Size())
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors file %s: mmap: %w", path, err)
	}
	f, err := Parse(path, data)
	if err != nil {
		_ = syscall.Munmap(data)
		return nil, err
	}
	f.unmap = func() error { return syscall.Munmap(data) }
	return f, nil
}

// Close unmaps the file; its tensors' Data must not be used afterwards.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	return u()
}

// entry is one header entry as JSON has it.
type entry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Parse reads a whole file held in data; name is used in errors. The
// tensors' Data alias data.
func Parse(name string, data []byte) (*File, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("safetensors file %s: %s", name, fmt.Sprintf(format, a...))
	}
	if len(data) < 8 {
		return nil, bad("%d bytes, shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeader {
		return nil, bad("header of %d bytes, more than the %d allowed", n, MaxHeader)
	}
	if n > uint64(len(data)-8) {
		return nil, bad("header of %d bytes, but only %d bytes follow the length", n, len(data)-8)
	}
	header := data[8 : 8+n]
	buf := data[8+n:]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(header))
	if err := dec.Decode(&raw); err != nil {
		return nil, bad("header is not a JSON object: %v", err)
	}
	if raw == nil {
		return nil, bad("header is not a JSON object")
	}
	// The writer pads the header with spaces to an 8-byte boundary;
	// anything else after the object is an error.
	if rest := bytes.TrimSpace(header[dec.InputOffset():]); len(rest) > 0 {
		return nil, bad("header has data after its JSON object")
	}
	f := &File{Name: name, tensors: make(map[string]*Tensor, len(raw))}
	type span struct {
		begin, end int64
		name       string
	}
	var spans []span
	for key, msg := range raw {
		if key == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, bad("__metadata__ is not an object of strings: %v", err)
			}
			continue
		}
		var e entry
		d := json.NewDecoder(bytes.NewReader(msg))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, bad("tensor %q: %v", key, err)
		}
		es := e.DType.size()
		if es == 0 {
			return nil, bad("tensor %q: unknown dtype %q", key, e.DType)
		}
		if len(e.DataOffsets) != 2 {
			return nil, bad("tensor %q: data_offsets has %d numbers, want 2", key, len(e.DataOffsets))
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin || end > int64(len(buf)) {
			return nil, bad("tensor %q: data_offsets [%d, %d) outside the %d-byte buffer", key, begin, end, len(buf))
		}
		count := int64(1)
		shape := make([]int, len(e.Shape))
		for i, dim := range e.Shape {
			if dim < 0 {
				return nil, bad("tensor %q: negative dimension %d in shape %v", key, dim, e.Shape)
			}
			if dim != 0 && count > math.MaxInt32*int64(256)/dim {
				return nil, bad("tensor %q: shape %v is too large", key, e.Shape)
			}
			count *= dim
			shape[i] = int(dim)
		}
		if count*int64(es) != end-begin {
			return nil, bad("tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", key, e.Shape, e.DType, count*int64(es), end-begin)
		}
		f.tensors[key] = &Tensor{Name: key, DType: e.DType, Shape: shape, Data: buf[begin:end:end]}
		f.names = append(f.names, key)
		if end > begin {
			spans = append(spans, span{begin, end, key})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, bad("tensors %q and %q overlap", spans[i-1].name, spans[i].name)
		}
	}
	sort.Strings(f.names)
	return f, nil
}

// Names lists the tensors, sorted.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Tensor returns the named tensor, or nil.
func (f *File) Tensor(name string) *Tensor { return f.tensors[name] }

// Float32 returns the named tensor's elements as float32 after checking
// its shape: a view of the mapping for F32, a converted copy for F16 and
// BF16. Every error names the file and the tensor.
func (f *File) Float32(name string, shape ...int) ([]float32, error) {
	t := f.tensors[name]
	if t == nil {
		return nil, fmt.Errorf("safetensors file %s: no tensor %q", f.Name, name)
	}
	if !sameShape(t.Shape, shape) {
		return nil, fmt.Errorf("safetensors file %s: tensor %q has shape %v, want %v", f.Name, name, t.Shape, shape)
	}
	return t.Float32()
}

// Float32 returns t's elements as float32 (see File.Float32).
func (t *Tensor) Float32() ([]float32, error) {
	n := t.Elements()
	switch t.DType {
	case F32:
		return asF32(t.Data, n), nil
	case F16:
		out := make([]float32, n)
		for i := range out {
			out[i] = kernels.F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
		return out, nil
	case BF16:
		out := make([]float32, n)
		for i := range out {
			out[i] = kernels.BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("tensor %q: dtype %s is not a float type", t.Name, t.DType)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
