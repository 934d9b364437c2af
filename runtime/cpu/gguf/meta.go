package gguf

import (
	"fmt"
	"math"
)

// Value returns the Go value of a metadata key (see KV for the types).
func (f *File) Value(key string) (any, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Architecture returns general.architecture ("llama"), or "" when absent.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// String returns a string value; ok is false when the key is missing or
// holds another type.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Value(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// Uint returns an integer value of any integer type widened to uint64; ok is
// false when the key is missing, not an integer or negative.
func (f *File) Uint(key string) (uint64, bool) {
	v, ok := f.Value(key)
	if !ok {
		return 0, false
	}
	return asUint(v)
}

// Float returns a float32 or float64 value as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Value(key)
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	v, ok := f.Value(key)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	return b, ok
}

// Strings returns a string array.
func (f *File) Strings(key string) ([]string, bool) {
	v, ok := f.Value(key)
	if !ok {
		return nil, false
	}
	s, ok := v.([]string)
	return s, ok
}

// Floats returns a float32 or float64 array as float32.
func (f *File) Floats(key string) ([]float32, bool) {
	v, ok := f.Value(key)
	if !ok {
		return nil, false
	}
	switch x := v.(type) {
	case []float32:
		return x, true
	case []float64:
		out := make([]float32, len(x))
		for i, e := range x {
			out[i] = float32(e)
		}
		return out, true
	}
	return nil, false
}

// Ints returns an array of any integer type as []int; ok is false when an
// element does not fit an int.
func (f *File) Ints(key string) ([]int, bool) {
	v, ok := f.Value(key)
	if !ok {
		return nil, false
	}
	return asInts(v)
}

// RequireString is String with an error naming the key and the type found.
func (f *File) RequireString(key string) (string, error) {
	s, ok := f.String(key)
	if !ok {
		return "", f.typeError(key, "string")
	}
	return s, nil
}

// RequireUint is Uint with an error naming the key and the type found.
func (f *File) RequireUint(key string) (uint64, error) {
	u, ok := f.Uint(key)
	if !ok {
		return 0, f.typeError(key, "non-negative integer")
	}
	return u, nil
}

// RequireFloat is Float with an error naming the key and the type found.
func (f *File) RequireFloat(key string) (float64, error) {
	x, ok := f.Float(key)
	if !ok {
		return 0, f.typeError(key, "float")
	}
	return x, nil
}

// RequireStrings is Strings with an error naming the key and the type found.
func (f *File) RequireStrings(key string) ([]string, error) {
	s, ok := f.Strings(key)
	if !ok {
		return nil, f.typeError(key, "string array")
	}
	return s, nil
}

func (f *File) typeError(key, want string) error {
	v, ok := f.Value(key)
	if !ok {
		return fmt.Errorf("GGUF metadata key %q is missing", key)
	}
	return fmt.Errorf("GGUF metadata key %q holds %s, want %s", key, describe(v), want)
}

func describe(v any) string {
	t, elem, err := typeOf(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if t == ValueArray {
		return "array of " + elem.String()
	}
	if t == ValueString {
		return "string"
	}
	return fmt.Sprintf("%s %v", t, v)
}

func asUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

func asInts(v any) ([]int, bool) {
	conv := func(n int, at func(int) (int64, bool)) ([]int, bool) {
		out := make([]int, n)
		for i := range out {
			x, ok := at(i)
			if !ok || x < math.MinInt || x > math.MaxInt {
				return nil, false
			}
			out[i] = int(x)
		}
		return out, true
	}
	switch x := v.(type) {
	case []uint8:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []int8:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []uint16:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []int16:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []uint32:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []int32:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), true })
	case []int64:
		return conv(len(x), func(i int) (int64, bool) { return x[i], true })
	case []uint64:
		return conv(len(x), func(i int) (int64, bool) { return int64(x[i]), x[i] <= math.MaxInt64 })
	}
	return nil, false
}
