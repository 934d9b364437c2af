package model

import "fmt"

// KVType is the element type of a key/value cache.
type KVType uint8

const (
	// KVF16 stores keys and values in half precision, as llama.cpp does by
	// default (-ctk f16 -ctv f16): half the memory of F32, and attention
	// in ggml's F16 order (kernels/kvf16.go).
	KVF16 KVType = iota
	// KVF32 stores them in float32.
	KVF32
)

// ParseKVType reads "f16" or "f32" ("" is f16, the default).
func ParseKVType(s string) (KVType, error) {
	switch s {
	case "", "f16":
		return KVF16, nil
	case "f32":
		return KVF32, nil
	}
	return 0, fmt.Errorf("kv cache type %q: want \"f16\" or \"f32\"", s)
}

// String is the name ParseKVType reads.
func (t KVType) String() string {
	if t == KVF32 {
		return "f32"
	}
	return "f16"
}

// ElemBytes is the size of one cached key or value element.
func (t KVType) ElemBytes() int64 {
	if t == KVF32 {
		return 4
	}
	return 2
}
