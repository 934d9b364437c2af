package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	err := Write(&b, map[string]F32Tensor{
		"a.weight": {Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		"b":        {Shape: []int{}, Data: []float32{7}},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := strings.Join(f.Names(), ","); got != "a.weight,b" {
		t.Errorf("names %s", got)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
	w, err := f.Float32("a.weight", 2, 3)
	if err != nil || w[5] != 6 {
		t.Fatalf("a.weight %v %v", w, err)
	}
	if _, err := f.Float32("a.weight", 3, 2); err == nil || !strings.Contains(err.Error(), `"a.weight" has shape [2 3], want [3 2]`) {
		t.Errorf("wrong shape: %v", err)
	}
	if _, err := f.Float32("c"); err == nil || !strings.Contains(err.Error(), `no tensor "c"`) {
		t.Errorf("missing tensor: %v", err)
	}
	s, err := f.Float32("b")
	if err != nil || len(s) != 1 || s[0] != 7 {
		t.Errorf("scalar %v %v", s, err)
	}
}

func TestHalfTypes(t *testing.T) {
	// 1.5 as F16 is 0x3e00; as BF16 0x3fc0.
	for _, c := range []struct {
		dtype string
		bits  uint16
	}{{"F16", 0x3e00}, {"BF16", 0x3fc0}} {
		data := file(`{"x":{"dtype":"`+c.dtype+`","shape":[1],"data_offsets":[0,2]}}`, []byte{byte(c.bits), byte(c.bits >> 8)})
		f, err := Parse("h", data)
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Float32("x", 1)
		if err != nil || v[0] != 1.5 {
			t.Errorf("%s: %v %v", c.dtype, v, err)
		}
	}
}

func file(header string, buf []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), buf...)
}

func TestBadFiles(t *testing.T) {
	eight := make([]byte, 8)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"short", []byte{1, 2}, "shorter than the 8-byte header length"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<40), "more than the"},
		{"truncated header", binary.LittleEndian.AppendUint64(nil, 10), "only 0 bytes follow"},
		{"not json", file(`[1]`, nil), "not a JSON object"},
		{"trailing", file(`{} x`, nil), "data after its JSON object"},
		{"dtype", file(`{"x":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, eight), `tensor "x": unknown dtype "Q4"`},
		{"offsets", file(`{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, eight), `tensor "x": data_offsets [0, 16) outside the 8-byte buffer`},
		{"shape", file(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), `tensor "x": shape [3] of F32 needs 12 bytes, data_offsets give 8`},
		{"negative", file(`{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight), "negative dimension"},
		{"overflow", file(`{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, eight), "too large"},
		{"overlap", file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), "overlap"},
		{"unknown field", file(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}}`, eight), `tensor "x": json: unknown field "extra"`},
		{"metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__ is not an object of strings"},
	} {
		_, err := Parse("f.safetensors", c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "f.safetensors") {
			t.Errorf("%s: got %v, want an error naming the file with %q", c.name, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	var b bytes.Buffer
	_ = Write(&b, map[string]F32Tensor{"w": {Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}}, map[string]string{"k": "v"})
	f.Add(b.Bytes())
	f.Add(file(`{"x":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{0, 0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for _, n := range p.Names() {
			tn := p.Tensor(n)
			if len(tn.Data) != tn.Elements()*tn.DType.size() {
				t.Fatalf("tensor %q: %d bytes for %d elements", n, len(tn.Data), tn.Elements())
			}
			if v, err := tn.Float32(); err == nil && len(v) != tn.Elements() {
				t.Fatalf("tensor %q: %d values for %d elements", n, len(v), tn.Elements())
			}
		}
	})
}
