package units

import (
	"slices"
	"strconv"
	"strings"
)

// The key/value cache element types a unit's [cpu] kv_cache_type names.
// These names are the whole vocabulary: the validator, the cpu engine's
// parser and ttisctl's --kv-type flags all take them from here.
const (
	// KVCacheF16 is half precision, llama.cpp's default (-ctk/-ctv f16).
	KVCacheF16 = "f16"
	// KVCacheF32 is float32: twice the memory of f16.
	KVCacheF32 = "f32"
)

// DefaultKVCacheType is the cpu engine's key/value cache type when a unit
// sets none: F16, llama.cpp's default.
const DefaultKVCacheType = KVCacheF16

// KVCacheTypes returns every kv_cache_type name, the default first. The
// slice is the caller's (a fresh one each call).
func KVCacheTypes() []string {
	return []string{KVCacheF16, KVCacheF32}
}

// IsKVCacheType reports whether name is one of KVCacheTypes (the empty
// name is not: it stands for the default only where a field may be unset).
func IsKVCacheType(name string) bool {
	return slices.Contains(KVCacheTypes(), name)
}

// KVCacheTypeChoices lists KVCacheTypes for a message or a flag's help,
// each name passed through format (e.g. strconv.Quote, or nil for the
// bare names): "f16 or f32".
func KVCacheTypeChoices(format func(name string) string) string {
	names := KVCacheTypes()
	if format != nil {
		for i, n := range names {
			names[i] = format(n)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// quoteMarkingDefaultKV quotes a kv_cache_type name for the validator's
// message and marks the one an unset field means.
func quoteMarkingDefaultKV(name string) string {
	if name == DefaultKVCacheType {
		return strconv.Quote(name) + " (the default)"
	}
	return strconv.Quote(name)
}
