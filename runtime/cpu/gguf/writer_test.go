package gguf

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// sampleKV holds one value of every GGUF type, nested arrays included.
func sampleKV() []KV {
	return []KV{
		{"general.architecture", "llama"},
		{"u8", uint8(200)}, {"i8", int8(-100)}, {"u16", uint16(60000)}, {"i16", int16(-30000)},
		{"u32", uint32(4000000000)}, {"i32", int32(-2000000000)},
		{"u64", uint64(1 << 60)}, {"i64", int64(-1 << 60)},
		{"f32", float32(1.5)}, {"f64", math.Pi}, {"yes", true}, {"no", false},
		{"s", "héllo ▁world"}, {"empty", ""},
		{"a.u8", []uint8{1, 2, 3}}, {"a.i8", []int8{-1, 2}}, {"a.u16", []uint16{7}}, {"a.i16", []int16{-7}},
		{"a.u32", []uint32{1, 2}}, {"a.i32", []int32{-1, 3}}, {"a.u64", []uint64{9}}, {"a.i64", []int64{-9}},
		{"a.f32", []float32{0.5, -2}}, {"a.f64", []float64{0.25}}, {"a.bool", []bool{true, false}},
		{"a.str", []string{"a", "", "ccc"}}, {"a.empty", []string{}},
		{"a.nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]bool{true}}, []any{}}},
	}
}

func sampleTensors() []TensorData {
	f32 := make([]byte, 4*3*2)
	for i := range f32 {
		f32[i] = byte(i + 1)
	}
	q8 := make([]byte, 34*2)
	for i := range q8 {
		q8[i] = byte(255 - i)
	}
	return []TensorData{
		{TensorSpec{"a", TypeF32, []int{3, 2}}, f32},
		{TensorSpec{"b", TypeQ8_0, []int{32, 2}}, q8},
		{TensorSpec{"c", TypeF16, []int{5}}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{TensorSpec{"d", TypeI8, []int{1, 1, 1, 3}}, []byte{7, 8, 9}},
	}
}

func sampleFile(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, sampleKV(), sampleTensors()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriteRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 32, 64, 4096} {
		kv := sampleKV()
		wantAlign := DefaultAlignment
		if align != 0 {
			kv = append(kv, KV{"general.alignment", align})
			wantAlign = int(align)
		}
		var buf bytes.Buffer
		if err := Write(&buf, kv, sampleTensors()); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("alignment %d: %v", align, err)
		}
		if f.Version != 3 || f.Alignment != wantAlign {
			t.Errorf("version %d alignment %d, want 3, %d", f.Version, f.Alignment, wantAlign)
		}
		if f.DataOffset%int64(wantAlign) != 0 || len(buf.Bytes())%wantAlign != 0 {
			t.Errorf("data offset %d / file size %d not aligned to %d", f.DataOffset, buf.Len(), wantAlign)
		}
		if !reflect.DeepEqual(f.KV, kv) {
			t.Errorf("metadata differs after round trip:\n got %#v\nwant %#v", f.KV, kv)
		}
		for _, want := range sampleTensors() {
			got, ok := f.Tensor(want.Name)
			if !ok {
				t.Fatalf("tensor %s missing", want.Name)
			}
			if got.Type != want.Type || !equalInts(got.Dims, want.Dims) || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("tensor %s: got %s %v %v", want.Name, got.Type, got.Dims, got.Data)
			}
			if got.Offset%uint64(wantAlign) != 0 {
				t.Errorf("tensor %s offset %d not aligned", want.Name, got.Offset)
			}
		}
	}
}

func TestGetters(t *testing.T) {
	f, err := Parse(sampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Uint("u8"); !ok || v != 200 {
		t.Errorf("Uint(u8) = %d %v", v, ok)
	}
	if v, ok := f.Uint("i64"); ok {
		t.Errorf("Uint of a negative value = %d, ok", v)
	}
	if v, ok := f.Uint("u64"); !ok || v != 1<<60 {
		t.Errorf("Uint(u64) = %d %v", v, ok)
	}
	if v, ok := f.Float("f32"); !ok || v != 1.5 {
		t.Errorf("Float(f32) = %v %v", v, ok)
	}
	if _, ok := f.Float("u8"); ok {
		t.Error("Float of an integer is ok")
	}
	if v, ok := f.Bool("yes"); !ok || !v {
		t.Errorf("Bool(yes) = %v %v", v, ok)
	}
	if v, ok := f.Ints("a.i32"); !ok || !equalInts(v, []int{-1, 3}) {
		t.Errorf("Ints(a.i32) = %v %v", v, ok)
	}
	if v, ok := f.Floats("a.f64"); !ok || v[0] != 0.25 {
		t.Errorf("Floats(a.f64) = %v %v", v, ok)
	}
	if _, ok := f.Strings("a.i32"); ok {
		t.Error("Strings of an int array is ok")
	}
	if f.Architecture() != "llama" {
		t.Errorf("architecture %q", f.Architecture())
	}
	if _, err := f.RequireString("missing"); err == nil || !strings.Contains(err.Error(), `"missing" is missing`) {
		t.Errorf("RequireString(missing): %v", err)
	}
	if _, err := f.RequireString("u32"); err == nil || !strings.Contains(err.Error(), "holds uint32 4000000000, want string") {
		t.Errorf("RequireString(u32): %v", err)
	}
	if _, err := f.RequireStrings("a.u8"); err == nil || !strings.Contains(err.Error(), "array of uint8") {
		t.Errorf("RequireStrings(a.u8): %v", err)
	}
	if v, err := f.RequireUint("u16"); err != nil || v != 60000 {
		t.Errorf("RequireUint(u16) = %d %v", v, err)
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("Tensor(nope) found")
	}
	if ti, _ := f.Tensor("d"); ti.Elements() != 3 || ti.Rows() != 3 || ti.Size() != 3 {
		t.Errorf("d: elements %d rows %d size %d", ti.Elements(), ti.Rows(), ti.Size())
	}
}

func TestWriterRejects(t *testing.T) {
	ok := []TensorSpec{{"t", TypeF32, []int{4}}}
	cases := []struct {
		name    string
		kv      []KV
		tensors []TensorSpec
		want    string
	}{
		{"dup key", []KV{{"a", uint8(1)}, {"a", uint8(2)}}, nil, "given twice"},
		{"bad type", []KV{{"a", 5}}, nil, "no GGUF encoding"},
		{"bad nested", []KV{{"a", []any{uint8(1)}}}, nil, "array of arrays"},
		{"bad alignment", []KV{{"general.alignment", uint32(24)}}, nil, "power of two"},
		{"alignment type", []KV{{"general.alignment", uint64(32)}}, nil, "uint32"},
		{"dup tensor", nil, append(ok, ok...), "given twice"},
		{"no dims", nil, []TensorSpec{{"t", TypeF32, nil}}, "0 dimensions"},
		{"partial block", nil, []TensorSpec{{"t", TypeQ4_0, []int{16}}}, "whole number"},
		{"unknown type", nil, []TensorSpec{{"t", TensorType(77), []int{16}}}, "unknown tensor type 77"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewWriter(&bytes.Buffer{}, c.kv, c.tensors)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	w, err := NewWriter(&bytes.Buffer{}, nil, append(ok, TensorSpec{"u", TypeF32, []int{1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor(make([]byte, 3)); err == nil || !strings.Contains(err.Error(), "needs 16 bytes, got 3") {
		t.Errorf("short tensor: %v", err)
	}
	if err := w.WriteTensor(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "only 1 of 2") {
		t.Errorf("close with a tensor missing: %v", err)
	}
	if err := w.WriteTensor(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTensor(make([]byte, 4)); err == nil {
		t.Error("extra tensor accepted")
	}
}

// TestRewriteIsByteIdentical re-encodes the llama.cpp-written stories260K
// files: the writer must reproduce them byte for byte (header, metadata,
// tensor table, alignment padding, data layout).
func TestRewriteIsByteIdentical(t *testing.T) {
	for _, name := range []string{"stories260K-f32.gguf", "stories260K-f16.gguf", "stories260K-q8_0.gguf"} {
		orig, err := os.ReadFile(sharedModel(t, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(orig)
		if err != nil {
			t.Fatal(err)
		}
		tensors := make([]TensorData, len(f.Tensors))
		for i, ti := range f.Tensors {
			tensors[i] = TensorData{TensorSpec{ti.Name, ti.Type, ti.Dims}, ti.Data}
		}
		var buf bytes.Buffer
		if err := Write(&buf, f.KV, tensors); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), orig) {
			t.Errorf("%s: rewritten file differs (%d bytes vs %d)", name, buf.Len(), len(orig))
		}
	}
}
