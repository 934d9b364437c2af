package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// TensorSpec describes a tensor to be written: its data follows later
// through Writer.WriteTensor.
type TensorSpec struct {
	Name string
	Type TensorType
	// Dims are in ggml order (Dims[0] is the row length).
	Dims []int
}

// TensorData is a tensor with its encoded bytes, for Write.
type TensorData struct {
	TensorSpec
	Data []byte
}

// Writer streams a GGUF version 3 file: NewWriter writes the header,
// metadata and tensor table, then each tensor's data is written in table
// order with WriteTensor, and Close checks that all were written. Nothing
// but the current tensor is held in memory, so files larger than RAM can be
// produced.
type Writer struct {
	w         *bufio.Writer
	specs     []TensorSpec
	sizes     []int
	offsets   []uint64
	alignment int
	next      int   // index of the next tensor to write
	written   int64 // bytes of the data section written so far
	err       error
}

// NewWriter validates kv and tensors and writes everything up to the data
// section to w. The alignment is general.alignment from kv (which must then
// be a uint32 power of two) or DefaultAlignment.
func NewWriter(w io.Writer, kv []KV, tensors []TensorSpec) (*Writer, error) {
	gw := &Writer{w: bufio.NewWriterSize(w, 1<<20), specs: tensors, alignment: DefaultAlignment}
	seen := make(map[string]bool, len(kv))
	for _, e := range kv {
		if seen[e.Key] {
			return nil, fmt.Errorf("write gguf: metadata key %q given twice", e.Key)
		}
		seen[e.Key] = true
		if _, err := e.Type(); err != nil {
			return nil, fmt.Errorf("write gguf: %w", err)
		}
		if e.Key == "general.alignment" {
			a, ok := e.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
				return nil, fmt.Errorf("write gguf: general.alignment must be a uint32 power of two up to 1 MiB, got %T %v", e.Value, e.Value)
			}
			gw.alignment = int(a)
		}
	}
	names := make(map[string]bool, len(tensors))
	var off uint64
	for _, t := range tensors {
		if names[t.Name] {
			return nil, fmt.Errorf("write gguf: tensor %q given twice", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) == 0 || len(t.Dims) > MaxDims {
			return nil, fmt.Errorf("write gguf: tensor %q has %d dimensions (want 1 to %d)", t.Name, len(t.Dims), MaxDims)
		}
		for _, d := range t.Dims {
			if d < 0 {
				return nil, fmt.Errorf("write gguf: tensor %q has negative dimension %d", t.Name, d)
			}
		}
		size, err := tensorSize(t.Type, t.Dims)
		if err != nil {
			return nil, fmt.Errorf("write gguf: tensor %q: %w", t.Name, err)
		}
		gw.sizes = append(gw.sizes, size)
		gw.offsets = append(gw.offsets, off)
		off += uint64(alignUp(size, gw.alignment))
	}
	gw.header(kv)
	if gw.err != nil {
		return nil, fmt.Errorf("write gguf header: %w", gw.err)
	}
	return gw, nil
}

// Write writes a complete GGUF version 3 file with the given metadata and
// tensors.
func Write(w io.Writer, kv []KV, tensors []TensorData) error {
	specs := make([]TensorSpec, len(tensors))
	for i, t := range tensors {
		specs[i] = t.TensorSpec
	}
	gw, err := NewWriter(w, kv, specs)
	if err != nil {
		return err
	}
	for _, t := range tensors {
		if err := gw.WriteTensor(t.Data); err != nil {
			return err
		}
	}
	return gw.Close()
}

// WriteTensor writes the data of the next tensor in table order; data must
// be exactly the tensor's storage size.
func (gw *Writer) WriteTensor(data []byte) error {
	if gw.err != nil {
		return gw.err
	}
	if gw.next >= len(gw.specs) {
		return errors.New("write gguf: more tensor data than tensors in the table")
	}
	spec := gw.specs[gw.next]
	if len(data) != gw.sizes[gw.next] {
		return fmt.Errorf("write gguf: tensor %q (%s %v) needs %d bytes, got %d", spec.Name, spec.Type, spec.Dims, gw.sizes[gw.next], len(data))
	}
	gw.pad(int64(gw.offsets[gw.next]) - gw.written)
	gw.raw(data)
	gw.written = int64(gw.offsets[gw.next]) + int64(len(data))
	gw.next++
	if gw.err != nil {
		return fmt.Errorf("write gguf tensor %q: %w", spec.Name, gw.err)
	}
	return nil
}

// Close pads the last tensor, flushes buffered output and reports tensors
// whose data was never written. It does not close the underlying writer.
func (gw *Writer) Close() error {
	if gw.err != nil {
		return gw.err
	}
	if gw.next != len(gw.specs) {
		return fmt.Errorf("write gguf: only %d of %d tensors written (next is %q)", gw.next, len(gw.specs), gw.specs[gw.next].Name)
	}
	if len(gw.specs) > 0 {
		gw.pad(int64(alignUp(int(gw.written), gw.alignment)) - gw.written)
	}
	if gw.err == nil {
		gw.err = gw.w.Flush()
	}
	if gw.err != nil {
		return fmt.Errorf("write gguf: %w", gw.err)
	}
	gw.err = errors.New("write gguf: writer is closed")
	return nil
}

func (gw *Writer) header(kv []KV) {
	gw.raw([]byte(Magic))
	gw.u32(3)
	gw.u64(uint64(len(gw.specs)))
	gw.u64(uint64(len(kv)))
	pos := int64(4 + 4 + 8 + 8)
	for _, e := range kv {
		pos += gw.str(e.Key)
		t, _, _ := typeOf(e.Value)
		gw.u32(uint32(t))
		pos += 4 + gw.value(e.Value)
	}
	for i, t := range gw.specs {
		pos += gw.str(t.Name)
		gw.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			gw.u64(uint64(d))
		}
		gw.u32(uint32(t.Type))
		gw.u64(gw.offsets[i])
		pos += 4 + 8*int64(len(t.Dims)) + 4 + 8
	}
	gw.pad(int64(alignUp(int(pos), gw.alignment)) - pos)
}

func (gw *Writer) raw(b []byte) {
	if gw.err == nil {
		_, gw.err = gw.w.Write(b)
	}
}

func (gw *Writer) pad(n int64) {
	var zero [64]byte
	for n > 0 && gw.err == nil {
		k := min(n, int64(len(zero)))
		gw.raw(zero[:k])
		n -= k
	}
}

func (gw *Writer) u8(v uint8) { gw.raw([]byte{v}) }

func (gw *Writer) u16(v uint16) {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	gw.raw(b[:])
}

func (gw *Writer) u32(v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	gw.raw(b[:])
}

func (gw *Writer) u64(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	gw.raw(b[:])
}

// str writes a length-prefixed string and returns the bytes written.
func (gw *Writer) str(s string) int64 {
	gw.u64(uint64(len(s)))
	gw.raw([]byte(s))
	return 8 + int64(len(s))
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// value writes one value of a type typeOf accepts and returns its size.
func (gw *Writer) value(v any) int64 {
	switch x := v.(type) {
	case uint8:
		gw.u8(x)
		return 1
	case int8:
		gw.u8(uint8(x))
		return 1
	case bool:
		gw.u8(boolByte(x))
		return 1
	case uint16:
		gw.u16(x)
		return 2
	case int16:
		gw.u16(uint16(x))
		return 2
	case uint32:
		gw.u32(x)
		return 4
	case int32:
		gw.u32(uint32(x))
		return 4
	case float32:
		gw.u32(math.Float32bits(x))
		return 4
	case uint64:
		gw.u64(x)
		return 8
	case int64:
		gw.u64(uint64(x))
		return 8
	case float64:
		gw.u64(math.Float64bits(x))
		return 8
	case string:
		return gw.str(x)
	}
	return gw.array(v)
}

// array writes an array value: element type, count, elements.
func (gw *Writer) array(v any) int64 {
	_, elem, _ := typeOf(v)
	gw.u32(uint32(elem))
	n := int64(12)
	writeAll := func(count int, one func(i int) int64) {
		gw.u64(uint64(count))
		for i := 0; i < count && gw.err == nil; i++ {
			n += one(i)
		}
	}
	switch x := v.(type) {
	case []uint8:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []int8:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []bool:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []uint16:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []int16:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []uint32:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []int32:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []float32:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []uint64:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []int64:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []float64:
		writeAll(len(x), func(i int) int64 { return gw.value(x[i]) })
	case []string:
		writeAll(len(x), func(i int) int64 { return gw.str(x[i]) })
	case []any:
		writeAll(len(x), func(i int) int64 { return gw.array(x[i]) })
	}
	return n
}
