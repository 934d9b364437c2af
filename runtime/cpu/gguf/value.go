package gguf

import "fmt"

// ValueType is the type tag of a GGUF metadata value.
type ValueType uint32

// The GGUF metadata value types (GGUF specification, "gguf_metadata_value_type").
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	ValueUint8: "uint8", ValueInt8: "int8", ValueUint16: "uint16", ValueInt16: "int16",
	ValueUint32: "uint32", ValueInt32: "int32", ValueFloat32: "float32", ValueBool: "bool",
	ValueString: "string", ValueArray: "array", ValueUint64: "uint64", ValueInt64: "int64",
	ValueFloat64: "float64",
}

// String returns the specification's name of the type ("uint32").
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value_type(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar of type t, 0 for strings and
// arrays (variable) and -1 for unknown types.
func (t ValueType) fixedSize() int {
	switch t {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64:
		return 8
	case ValueString, ValueArray:
		return 0
	}
	return -1
}

// minSize is the smallest encoding of one value of type t: what a hostile
// element count is checked against before anything is allocated.
func (t ValueType) minSize() int {
	switch t {
	case ValueString:
		return 8 // length prefix
	case ValueArray:
		return 12 // element type and count
	}
	return t.fixedSize()
}

// KV is one metadata entry. Value holds the Go value of the GGUF value, and
// its Go type determines the GGUF type:
//
//	uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32,
//	float64, bool, string: the scalar types;
//	[]uint8 ... []float64, []bool, []string: arrays of those;
//	[]any: an array of arrays, each element itself one of the slice types.
//
// The reader produces exactly these types and the writer accepts exactly
// these types.
type KV struct {
	Key   string
	Value any
}

// Type returns the GGUF type of the value, or an error when the Go type has
// no GGUF encoding.
func (kv KV) Type() (ValueType, error) {
	t, _, err := typeOf(kv.Value)
	if err == nil {
		err = checkNested(kv.Value, 0)
	}
	if err != nil {
		return 0, fmt.Errorf("metadata key %q: %w", kv.Key, err)
	}
	return t, nil
}

// checkNested checks that every element of an array of arrays is itself an
// encodable array, within the nesting depth the reader accepts.
func checkNested(v any, depth int) error {
	x, ok := v.([]any)
	if !ok {
		return nil
	}
	if len(x) > 0 && depth+1 >= maxArrayDepth {
		return fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
	}
	for i, e := range x {
		t, _, err := typeOf(e)
		if err != nil {
			return fmt.Errorf("array element %d: %w", i, err)
		}
		if t != ValueArray {
			return fmt.Errorf("array element %d is a %s in an array of arrays", i, t)
		}
		if err := checkNested(e, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// typeOf maps a Go value to its GGUF type and, for arrays, the element type.
func typeOf(v any) (ValueType, ValueType, error) {
	switch v.(type) {
	case uint8:
		return ValueUint8, 0, nil
	case int8:
		return ValueInt8, 0, nil
	case uint16:
		return ValueUint16, 0, nil
	case int16:
		return ValueInt16, 0, nil
	case uint32:
		return ValueUint32, 0, nil
	case int32:
		return ValueInt32, 0, nil
	case uint64:
		return ValueUint64, 0, nil
	case int64:
		return ValueInt64, 0, nil
	case float32:
		return ValueFloat32, 0, nil
	case float64:
		return ValueFloat64, 0, nil
	case bool:
		return ValueBool, 0, nil
	case string:
		return ValueString, 0, nil
	case []uint8:
		return ValueArray, ValueUint8, nil
	case []int8:
		return ValueArray, ValueInt8, nil
	case []uint16:
		return ValueArray, ValueUint16, nil
	case []int16:
		return ValueArray, ValueInt16, nil
	case []uint32:
		return ValueArray, ValueUint32, nil
	case []int32:
		return ValueArray, ValueInt32, nil
	case []uint64:
		return ValueArray, ValueUint64, nil
	case []int64:
		return ValueArray, ValueInt64, nil
	case []float32:
		return ValueArray, ValueFloat32, nil
	case []float64:
		return ValueArray, ValueFloat64, nil
	case []bool:
		return ValueArray, ValueBool, nil
	case []string:
		return ValueArray, ValueString, nil
	case []any:
		return ValueArray, ValueArray, nil
	}
	return 0, 0, fmt.Errorf("values of Go type %T have no GGUF encoding", v)
}
