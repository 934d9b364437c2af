package model

import (
	"fmt"
	"strconv"

	"github.com/ttis-dev/ttis/units"
)

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

// ParseKVType reads one of units.KVCacheTypes, the names a unit's [cpu]
// kv_cache_type takes ("" is units.DefaultKVCacheType).
func ParseKVType(s string) (KVType, error) {
	if s == "" {
		s = units.DefaultKVCacheType
	}
	switch s {
	case units.KVCacheF16:
		return KVF16, nil
	case units.KVCacheF32:
		return KVF32, nil
	}
	return 0, fmt.Errorf("kv cache type %q: want %s", s, units.KVCacheTypeChoices(strconv.Quote))
}

// String is the name ParseKVType reads.
func (t KVType) String() string {
	if t == KVF32 {
		return units.KVCacheF32
	}
	return units.KVCacheF16
}

// ElemBytes is the size of one cached key or value element.
func (t KVType) ElemBytes() int64 {
	if t == KVF32 {
		return 4
	}
	return 2
}
