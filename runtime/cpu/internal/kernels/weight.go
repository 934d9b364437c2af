package kernels

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ttis-dev/ttis/runtime/cpu/gguf"
)

// Weight is a row-major 2-D weight matrix stored in a GGUF tensor type: Rows
// output features, each a row of Cols inputs (Cols is the GGUF Dims[0]). Data
// holds the raw tensor bytes, typically a slice of a memory-mapped file; it is
// only read.
type Weight struct {
	Type       gguf.TensorType
	Rows, Cols int
	Data       []byte
	// vnniCorr is, for Q8_0, the sum of each row's codes per block
	// (q8VNNICorr, int16), which lets the eight-row VNNI tiles read the
	// blocks unprepared: made once, by the first product that runs those
	// tiles (vnniCorrTable), so that a weight read only at small batches
	// or by rows (embeddings), or replaced by a fused copy, costs no memory
	// for it.
	vnniOnce sync.Once
	vnniCorr []int16
}

// NewWeight checks that t is a type the kernels compute with, that cols is a
// whole number of its blocks and that data holds exactly rows rows.
func NewWeight(t gguf.TensorType, rows, cols int, data []byte) (*Weight, error) {
	if !supported(t) {
		return nil, fmt.Errorf("weight of type %s: unsupported by the cpu kernels", t)
	}
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("weight of type %s: shape %dx%d must be positive", t, rows, cols)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("weight row of %d columns: %w", cols, err)
	}
	if want := rb * rows; len(data) != want {
		return nil, fmt.Errorf("weight %s %dx%d: have %d bytes, want %d", t, rows, cols, len(data), want)
	}
	return &Weight{Type: t, Rows: rows, Cols: cols, Data: data}, nil
}

func supported(t gguf.TensorType) bool {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K,
		gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K:
		return true
	}
	return false
}

// rowBytes is the storage size of one row; it panics on a Weight that
// NewWeight would have rejected, because that is a programming error.
func (w *Weight) rowBytes() int {
	rb, err := w.Type.RowBytes(w.Cols)
	if err != nil || !supported(w.Type) {
		panic(fmt.Sprintf("kernels: invalid weight %s %dx%d", w.Type, w.Rows, w.Cols))
	}
	if len(w.Data) < rb*w.Rows {
		panic(fmt.Sprintf("kernels: weight %s %dx%d has %d bytes, want %d", w.Type, w.Rows, w.Cols, len(w.Data), rb*w.Rows))
	}
	return rb
}

// RowBytes is the storage size of one of w's rows.
func (w *Weight) RowBytes() int { return w.rowBytes() }

// DequantizeRowBytes writes row, one row of w's type and width read from
// somewhere other than w.Data (see gguf.File.Sparse), converted to float32,
// into dst[:w.Cols]. It panics when row is not RowBytes long or dst is too
// short.
func DequantizeRowBytes(w *Weight, row []byte, dst []float32) {
	if rb := w.rowBytes(); len(row) != rb {
		panic(fmt.Sprintf("kernels: row of %d bytes for a weight whose rows have %d", len(row), rb))
	}
	dequantize(w.Type, row, dst[:w.Cols])
}

// DequantizeRow writes row r of w, converted to float32, into dst[:w.Cols].
// It panics when r is out of range or dst is too short.
func DequantizeRow(w *Weight, r int, dst []float32) {
	if r < 0 || r >= w.Rows {
		panic(fmt.Sprintf("kernels: row %d out of range [0,%d)", r, w.Rows))
	}
	rb := w.rowBytes()
	dequantize(w.Type, w.Data[r*rb:(r+1)*rb], dst[:w.Cols])
}

// dequantize converts the blocks in src (a whole number of rows or blocks of
// type t) to dst, which has exactly the number of elements src holds.
func dequantize(t gguf.TensorType, src []byte, dst []float32) {
	switch t {
	case gguf.TypeF32:
		copy(dst, bytesF32(src))
	case gguf.TypeF16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case gguf.TypeBF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case gguf.TypeQ8_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[b*blockQ8_0:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < 32; j++ {
				dst[b*32+j] = d * float32(int8(blk[2+j]))
			}
		}
	case gguf.TypeQ4_0:
		for b := 0; b < len(dst)/32; b++ {
			blk := src[b*blockQ4_0:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < 16; j++ {
				q := blk[2+j]
				dst[b*32+j] = d * float32(int(q&0xf)-8)
				dst[b*32+j+16] = d * float32(int(q>>4)-8)
			}
		}
	case gguf.TypeQ4_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ4K(src[b*blockQ4_K:(b+1)*blockQ4_K], dst[b*256:(b+1)*256])
		}
	case gguf.TypeQ6_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ6K(src[b*blockQ6_K:(b+1)*blockQ6_K], dst[b*256:(b+1)*256])
		}
	case gguf.TypeQ5_0:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ5_0(src[b*blockQ5_0:(b+1)*blockQ5_0], dst[b*32:(b+1)*32])
		}
	case gguf.TypeQ5_1:
		for b := 0; b < len(dst)/32; b++ {
			dequantQ5_1(src[b*blockQ5_1:(b+1)*blockQ5_1], dst[b*32:(b+1)*32])
		}
	case gguf.TypeQ5_K:
		for b := 0; b < len(dst)/256; b++ {
			dequantQ5K(src[b*blockQ5_K:(b+1)*blockQ5_K], dst[b*256:(b+1)*256])
		}
	default:
		panic(fmt.Sprintf("kernels: dequantize %s unsupported", t))
	}
}

// Block sizes in bytes (gguf's type table has the same numbers; these are
// constants so that the inner loops can use them).
const (
	blockQ8_0 = 34  // f16 d, 32 x int8
	blockQ4_0 = 18  // f16 d, 16 bytes of nibble pairs
	blockQ4_K = 144 // f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles
	blockQ6_K = 210 // 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 scales, f16 d
)

// bytesF32 views little-endian float32 storage as a []float32 (amd64 and
// arm64 are little-endian and tolerate unaligned loads).
func bytesF32(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// bytesU16 views little-endian 16-bit storage as a []uint16.
func bytesU16(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// vnniCorrTable returns w's block code sums for the VNNI tiles (Q8_0
// only), making them on the first call; safe for concurrent use (engines may share a weight).
func (w *Weight) vnniCorrTable() []int16 {
	w.vnniOnce.Do(func() {
		w.vnniCorr = q8VNNICorr(w.Data, w.Rows, w.Cols/32, w.rowBytes())
	})
	return w.vnniCorr
}
