package gguf

import "fmt"

// TensorType is a ggml tensor element type as stored in a GGUF tensor info.
type TensorType uint32

// The ggml type ids (ggml.h). Only the ones the cpu runtime computes with are
// named; other valid ids are recognised by Known so that errors can name them.
const (
	TypeF32  TensorType = 0
	TypeF16  TensorType = 1
	TypeQ4_0 TensorType = 2
	TypeQ4_1 TensorType = 3
	TypeQ5_0 TensorType = 6
	TypeQ5_1 TensorType = 7
	TypeQ8_0 TensorType = 8
	TypeQ8_1 TensorType = 9
	TypeQ2_K TensorType = 10
	TypeQ3_K TensorType = 11
	TypeQ4_K TensorType = 12
	TypeQ5_K TensorType = 13
	TypeQ6_K TensorType = 14
	TypeQ8_K TensorType = 15
	TypeI8   TensorType = 24
	TypeI16  TensorType = 25
	TypeI32  TensorType = 26
	TypeI64  TensorType = 27
	TypeF64  TensorType = 28
	TypeBF16 TensorType = 30
)

type typeTraits struct {
	name      string
	blockSize int // elements per block
	typeSize  int // bytes per block
}

var traits = map[TensorType]typeTraits{
	TypeF32:  {"F32", 1, 4},
	TypeF16:  {"F16", 1, 2},
	TypeQ4_0: {"Q4_0", 32, 18},
	TypeQ4_1: {"Q4_1", 32, 20},
	TypeQ5_0: {"Q5_0", 32, 22},
	TypeQ5_1: {"Q5_1", 32, 24},
	TypeQ8_0: {"Q8_0", 32, 34},
	TypeQ8_1: {"Q8_1", 32, 36},
	TypeQ2_K: {"Q2_K", 256, 84},
	TypeQ3_K: {"Q3_K", 256, 110},
	TypeQ4_K: {"Q4_K", 256, 144},
	TypeQ5_K: {"Q5_K", 256, 176},
	TypeQ6_K: {"Q6_K", 256, 210},
	TypeQ8_K: {"Q8_K", 256, 292},
	TypeI8:   {"I8", 1, 1},
	TypeI16:  {"I16", 1, 2},
	TypeI32:  {"I32", 1, 4},
	TypeI64:  {"I64", 1, 8},
	TypeF64:  {"F64", 1, 8},
	TypeBF16: {"BF16", 1, 2},
}

// Known reports whether t is a type whose storage size is known.
func (t TensorType) Known() bool { _, ok := traits[t]; return ok }

// String returns ggml's name for the type ("Q8_0").
func (t TensorType) String() string {
	if tr, ok := traits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block (1 for plain types).
func (t TensorType) BlockSize() int { return traits[t].blockSize }

// TypeSize is the number of bytes in one block.
func (t TensorType) TypeSize() int { return traits[t].typeSize }

// RowBytes is the storage size of n elements, or an error when n is not a
// whole number of blocks or the type is unknown.
func (t TensorType) RowBytes(n int) (int, error) {
	tr, ok := traits[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n%tr.blockSize != 0 {
		return 0, fmt.Errorf("%d elements of %s are not a whole number of %d-element blocks", n, tr.name, tr.blockSize)
	}
	return n / tr.blockSize * tr.typeSize, nil
}
