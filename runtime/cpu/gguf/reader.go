package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
const MaxDims = 4

// maxArrayDepth bounds nested arrays so that a hostile file cannot recurse
// the parser into a stack overflow.
const maxArrayDepth = 8

// File is a parsed GGUF file. Tensor data slices point into the bytes the
// file was parsed from (the memory mapping for Open) and become invalid
// after Close.
type File struct {
	// Version is the GGUF version (2 or 3).
	Version uint32
	// Alignment is the data alignment in bytes (general.alignment or 32).
	Alignment int
	// KV holds the metadata in file order.
	KV []KV
	// Tensors holds the tensor table in file order.
	Tensors []TensorInfo
	// DataOffset is the file offset of the tensor data section.
	DataOffset int64

	kvIndex     map[string]int
	tensorIndex map[string]int
	unmap       func() error
	mapping     []byte   // the file's mapping (Open only)
	fd          *os.File // the open file, for Sparse readers (Open only)
}

// TensorInfo describes one tensor and holds its data.
type TensorInfo struct {
	Name string
	Type TensorType
	// Dims are in ggml order: Dims[0] is the row length (innermost).
	Dims []int
	// Offset is relative to the start of the data section.
	Offset uint64
	// Data is the tensor's bytes, exactly Size() long.
	Data []byte
}

// Elements is the number of elements of the tensor.
func (t *TensorInfo) Elements() int {
	n := 1
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Rows is the number of rows (the product of Dims[1:]).
func (t *TensorInfo) Rows() int {
	n := 1
	for _, d := range t.Dims[1:] {
		n *= d
	}
	return n
}

// Size is the storage size of the tensor in bytes.
func (t *TensorInfo) Size() int { return len(t.Data) }

// Parse parses a GGUF file held in data. The returned File refers to data
// (tensor Data slices alias it), so data must outlive the File.
func Parse(data []byte) (*File, error) {
	p := &parser{buf: data}
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	return f, nil
}

// parser reads little-endian values from buf, never past its end.
type parser struct {
	buf []byte
	pos int
}

var errTruncated = errors.New("unexpected end of file")

func (p *parser) remaining() int { return len(p.buf) - p.pos }

func (p *parser) bytes(n int) ([]byte, error) {
	if n < 0 || n > p.remaining() {
		return nil, fmt.Errorf("at offset %d: need %d bytes, %d left: %w", p.pos, n, p.remaining(), errTruncated)
	}
	b := p.buf[p.pos : p.pos+n]
	p.pos += n
	return b, nil
}

func (p *parser) u8() (uint8, error) {
	b, err := p.bytes(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (p *parser) u16() (uint16, error) {
	b, err := p.bytes(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (p *parser) u32() (uint32, error) {
	b, err := p.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64() (uint64, error) {
	b, err := p.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a 64-bit element count and checks that count elements of at
// least minSize bytes each fit in what is left of the file, so a hostile
// count is an error before anything is allocated.
func (p *parser) count(what string, minSize int) (int, error) {
	at := p.pos
	n, err := p.u64()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(p.remaining()/minSize) {
		return 0, fmt.Errorf("%s %d at offset %d does not fit in the %d bytes left", what, n, at, p.remaining())
	}
	return int(n), nil
}

func (p *parser) str() (string, error) {
	n, err := p.count("string length", 1)
	if err != nil {
		return "", err
	}
	b, err := p.bytes(n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (p *parser) file() (*File, error) {
	magic, err := p.bytes(4)
	if err != nil {
		return nil, fmt.Errorf("read magic: %w", err)
	}
	if string(magic) != Magic {
		// The bytes themselves are not shown: errors reach logs and
		// status, and the file might be anything (a unit once named
		// /etc/shadow, whose first bytes then appeared there).
		return nil, errors.New("not a GGUF file (it does not start with the GGUF magic)")
	}
	version, err := p.u32()
	if err != nil {
		return nil, fmt.Errorf("read version: %w", err)
	}
	switch {
	case version == 1:
		return nil, errors.New("GGUF version 1 is not supported (convert the file to version 3)")
	case version&0xffff == 0 && bits.ReverseBytes32(version) <= 3:
		return nil, fmt.Errorf("GGUF version %d looks byte-swapped: big-endian files are not supported", bits.ReverseBytes32(version))
	case version != 2 && version != 3:
		return nil, fmt.Errorf("unsupported GGUF version %d (want 2 or 3)", version)
	}
	f := &File{Version: version, Alignment: DefaultAlignment}
	// Each tensor info takes at least 4+8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
	nTensors, err := p.count("tensor count", 28)
	if err != nil {
		return nil, err
	}
	// Each metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes.
	nKV, err := p.count("metadata count", 13)
	if err != nil {
		return nil, err
	}
	f.KV = make([]KV, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := 0; i < nKV; i++ {
		at := p.pos
		key, err := p.str()
		if err != nil {
			return nil, fmt.Errorf("metadata entry %d key: %w", i, err)
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, fmt.Errorf("metadata key %q at offset %d appears twice", key, at)
		}
		t, err := p.u32()
		if err != nil {
			return nil, fmt.Errorf("metadata key %q type: %w", key, err)
		}
		v, err := p.value(ValueType(t), 0)
		if err != nil {
			return nil, fmt.Errorf("metadata key %q: %w", key, err)
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	if v, ok := f.Value("general.alignment"); ok {
		a, ok := asUint(v)
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("general.alignment %v is not a power of two up to 1 MiB", v)
		}
		f.Alignment = int(a)
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensorIndex = make(map[string]int, nTensors)
	for i := 0; i < nTensors; i++ {
		ti, err := p.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		if _, dup := f.tensorIndex[ti.Name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice", ti.Name)
		}
		if ti.Offset%uint64(f.Alignment) != 0 {
			return nil, fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", ti.Name, ti.Offset, f.Alignment)
		}
		f.tensorIndex[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	dataStart := alignUp(p.pos, f.Alignment)
	f.DataOffset = int64(dataStart)
	if err := f.attachData(p.buf, dataStart); err != nil {
		return nil, err
	}
	return f, nil
}

// attachData points each tensor at its bytes, checking that every tensor
// lies inside the data section and that no two overlap.
func (f *File) attachData(buf []byte, dataStart int) error {
	if len(f.Tensors) == 0 {
		return nil
	}
	if dataStart > len(buf) {
		return fmt.Errorf("tensor data section at offset %d starts past the end of the file (%d bytes)", dataStart, len(buf))
	}
	data := buf[dataStart:]
	order := make([]int, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		size, err := tensorSize(t.Type, t.Dims)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if t.Offset > uint64(len(data)) || uint64(size) > uint64(len(data))-t.Offset {
			return fmt.Errorf("tensor %q: %d bytes at data offset %d run past the end of the file (data section is %d bytes)", t.Name, size, t.Offset, len(data))
		}
		t.Data = data[t.Offset : t.Offset+uint64(size) : t.Offset+uint64(size)]
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if prev.Offset+uint64(len(prev.Data)) > cur.Offset {
			return fmt.Errorf("tensors %q and %q overlap", prev.Name, cur.Name)
		}
	}
	return nil
}

// tensorSize computes the storage size of a tensor with overflow checks.
func tensorSize(t TensorType, dims []int) (int, error) {
	if !t.Known() {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if len(dims) == 0 {
		return 0, errors.New("tensor has no dimensions")
	}
	row, err := t.RowBytes(dims[0])
	if err != nil {
		return 0, fmt.Errorf("row length: %w", err)
	}
	size := row
	for _, d := range dims[1:] {
		hi, lo := bits.Mul64(uint64(size), uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("dimensions %v overflow the tensor size", dims)
		}
		size = int(lo)
	}
	return size, nil
}

func (p *parser) tensorInfo() (TensorInfo, error) {
	var ti TensorInfo
	name, err := p.str()
	if err != nil {
		return ti, fmt.Errorf("name: %w", err)
	}
	ti.Name = name
	nDims, err := p.u32()
	if err != nil {
		return ti, fmt.Errorf("tensor %q dimension count: %w", name, err)
	}
	if nDims == 0 || nDims > MaxDims {
		return ti, fmt.Errorf("tensor %q has %d dimensions (want 1 to %d)", name, nDims, MaxDims)
	}
	ti.Dims = make([]int, nDims)
	elems := uint64(1)
	for i := range ti.Dims {
		d, err := p.u64()
		if err != nil {
			return ti, fmt.Errorf("tensor %q dimension %d: %w", name, i, err)
		}
		if d > math.MaxInt64 {
			return ti, fmt.Errorf("tensor %q dimension %d is %d (negative as int64)", name, i, d)
		}
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > math.MaxInt64 {
			return ti, fmt.Errorf("tensor %q: element count of dimensions overflows", name)
		}
		elems = lo
		ti.Dims[i] = int(d)
	}
	t, err := p.u32()
	if err != nil {
		return ti, fmt.Errorf("tensor %q type: %w", name, err)
	}
	ti.Type = TensorType(t)
	if !ti.Type.Known() {
		return ti, fmt.Errorf("tensor %q has unknown tensor type %d", name, t)
	}
	off, err := p.u64()
	if err != nil {
		return ti, fmt.Errorf("tensor %q offset: %w", name, err)
	}
	ti.Offset = off
	return ti, nil
}

// value reads one metadata value of type t.
func (p *parser) value(t ValueType, depth int) (any, error) {
	switch t {
	case ValueUint8:
		return p.u8()
	case ValueInt8:
		v, err := p.u8()
		return int8(v), err
	case ValueUint16:
		return p.u16()
	case ValueInt16:
		v, err := p.u16()
		return int16(v), err
	case ValueUint32:
		return p.u32()
	case ValueInt32:
		v, err := p.u32()
		return int32(v), err
	case ValueUint64:
		return p.u64()
	case ValueInt64:
		v, err := p.u64()
		return int64(v), err
	case ValueFloat32:
		v, err := p.u32()
		return math.Float32frombits(v), err
	case ValueFloat64:
		v, err := p.u64()
		return math.Float64frombits(v), err
	case ValueBool:
		return p.boolean()
	case ValueString:
		return p.str()
	case ValueArray:
		return p.array(depth)
	}
	return nil, fmt.Errorf("unknown value type %d at offset %d", uint32(t), p.pos-4)
}

func (p *parser) boolean() (bool, error) {
	v, err := p.u8()
	if err != nil {
		return false, err
	}
	if v > 1 {
		return false, fmt.Errorf("bool value %d at offset %d is neither 0 nor 1", v, p.pos-1)
	}
	return v == 1, nil
}

// array reads an array's element type, count and elements into the typed
// slice KV documents.
func (p *parser) array(depth int) (any, error) {
	if depth >= maxArrayDepth {
		return nil, fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
	}
	et, err := p.u32()
	if err != nil {
		return nil, fmt.Errorf("array element type: %w", err)
	}
	elem := ValueType(et)
	if elem.minSize() < 0 {
		return nil, fmt.Errorf("array of unknown value type %d at offset %d", et, p.pos-4)
	}
	n, err := p.count("array length", elem.minSize())
	if err != nil {
		return nil, err
	}
	if size := elem.fixedSize(); size > 0 {
		raw, err := p.bytes(n * size)
		if err != nil {
			return nil, err
		}
		return decodeFixedArray(elem, raw, n)
	}
	switch elem {
	case ValueString:
		out := make([]string, n)
		for i := range out {
			if out[i], err = p.str(); err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return out, nil
	default: // ValueArray
		out := make([]any, n)
		for i := range out {
			if out[i], err = p.array(depth + 1); err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return out, nil
	}
}

func decodeFixedArray(elem ValueType, raw []byte, n int) (any, error) {
	le := binary.LittleEndian
	switch elem {
	case ValueUint8:
		return append([]uint8(nil), raw...), nil
	case ValueInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(raw[i])
		}
		return out, nil
	case ValueBool:
		out := make([]bool, n)
		for i := range out {
			if raw[i] > 1 {
				return nil, fmt.Errorf("bool array element %d is %d, neither 0 nor 1", i, raw[i])
			}
			out[i] = raw[i] == 1
		}
		return out, nil
	case ValueUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return out, nil
	case ValueInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return out, nil
	case ValueUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return out, nil
	case ValueInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case ValueFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case ValueUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return out, nil
	case ValueInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return out, nil
	case ValueFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("value type %s is not a fixed-size type", elem)
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }
