package gguf

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// sharedModel returns the path of a file in ../shared/models beside the
// module root, skipping the test when it is absent (a fresh clone).
func sharedModel(t testing.TB, name string) string {
	t.Helper()
	return testbin.Shared(t, "models/"+name)
}

func TestOpenStories260K(t *testing.T) {
	cases := []struct {
		file     string
		matrix   TensorType // 2-D weights
		ffnDown  TensorType
		fileType int
	}{
		{"stories260K-f32.gguf", TypeF32, TypeF32, -1},
		{"stories260K-f16.gguf", TypeF16, TypeF16, 1},
		{"stories260K-q8_0.gguf", TypeQ8_0, TypeF16, 7},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := Open(sharedModel(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || f.Alignment != 32 {
				t.Errorf("version %d alignment %d, want 3 and 32", f.Version, f.Alignment)
			}
			if a := f.Architecture(); a != "llama" {
				t.Errorf("architecture %q, want llama", a)
			}
			want := map[string]uint64{
				"llama.block_count": 5, "llama.embedding_length": 64, "llama.feed_forward_length": 172,
				"llama.attention.head_count": 8, "llama.attention.head_count_kv": 4,
				"llama.context_length": 512, "tokenizer.ggml.bos_token_id": 1,
				"tokenizer.ggml.eos_token_id": 2,
			}
			if c.fileType >= 0 { // the F32 file has no general.file_type
				want["general.file_type"] = uint64(c.fileType)
			}
			for k, v := range want {
				if got, ok := f.Uint(k); !ok || got != v {
					t.Errorf("%s = %d (ok %v), want %d", k, got, ok, v)
				}
			}
			if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || eps < 0.9e-5 || eps > 1.1e-5 {
				t.Errorf("rms eps %v %v", eps, ok)
			}
			tokens, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(tokens) != 512 || tokens[1] != "<s>" || tokens[3] != "<0x00>" {
				t.Fatalf("tokens: ok %v len %d", ok, len(tokens))
			}
			if scores, ok := f.Floats("tokenizer.ggml.scores"); !ok || len(scores) != 512 {
				t.Errorf("scores ok %v len %d", ok, len(scores))
			}
			if types, ok := f.Ints("tokenizer.ggml.token_type"); !ok || len(types) != 512 || types[1] != 3 || types[3] != 6 {
				t.Errorf("token types ok %v", ok)
			}
			if len(f.Tensors) != 2+5*9+1 {
				t.Errorf("%d tensors, want %d", len(f.Tensors), 2+5*9+1)
			}
			shapes := map[string][]int{
				"token_embd.weight": {64, 512}, "output.weight": {64, 512}, "output_norm.weight": {64},
			}
			for b := 0; b < 5; b++ {
				p := "blk." + string(rune('0'+b)) + "."
				shapes[p+"attn_q.weight"] = []int{64, 64}
				shapes[p+"attn_k.weight"] = []int{64, 32}
				shapes[p+"attn_v.weight"] = []int{64, 32}
				shapes[p+"attn_output.weight"] = []int{64, 64}
				shapes[p+"ffn_gate.weight"] = []int{64, 172}
				shapes[p+"ffn_up.weight"] = []int{64, 172}
				shapes[p+"ffn_down.weight"] = []int{172, 64}
				shapes[p+"attn_norm.weight"] = []int{64}
				shapes[p+"ffn_norm.weight"] = []int{64}
			}
			for name, dims := range shapes {
				ti, ok := f.Tensor(name)
				if !ok {
					t.Errorf("tensor %s missing", name)
					continue
				}
				if !equalInts(ti.Dims, dims) {
					t.Errorf("%s dims %v, want %v", name, ti.Dims, dims)
				}
				wantType := c.matrix
				switch {
				case len(dims) == 1:
					wantType = TypeF32
				case strings.HasSuffix(name, "ffn_down.weight"):
					wantType = c.ffnDown
				}
				if ti.Type != wantType {
					t.Errorf("%s type %s, want %s", name, ti.Type, wantType)
				}
				size, _ := tensorSize(ti.Type, ti.Dims)
				if len(ti.Data) != size {
					t.Errorf("%s: %d data bytes, want %d", name, len(ti.Data), size)
				}
			}
			if err := f.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if err := f.Close(); err != nil {
				t.Errorf("second close: %v", err)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rawFile builds GGUF bytes by hand so tests can produce what the writer
// refuses to.
type rawFile struct{ bytes.Buffer }

func (r *rawFile) u32(v uint32) *rawFile {
	_ = binary.Write(&r.Buffer, binary.LittleEndian, v)
	return r
}

func (r *rawFile) u64(v uint64) *rawFile {
	_ = binary.Write(&r.Buffer, binary.LittleEndian, v)
	return r
}

func (r *rawFile) str(s string) *rawFile {
	r.u64(uint64(len(s)))
	r.WriteString(s)
	return r
}

func (r *rawFile) header(version uint32, tensors, kvs uint64) *rawFile {
	r.WriteString("GGUF")
	return r.u32(version).u64(tensors).u64(kvs)
}

// tensor appends a tensor info entry.
func (r *rawFile) tensor(name string, typ uint32, off uint64, dims ...uint64) *rawFile {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(typ).u64(off)
}

// padData pads to 32 and appends n data bytes.
func (r *rawFile) padData(n int) []byte {
	for r.Len()%32 != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, n))
	return r.Bytes()
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name string
		data func() []byte
		want string
	}{
		{"empty", func() []byte { return nil }, "magic"},
		{"bad magic", func() []byte { return []byte("GGML\x03\x00\x00\x00") }, "not a GGUF file"},
		{"version 1", func() []byte { return new(rawFile).header(1, 0, 0).Bytes() }, "version 1 is not supported"},
		{"version 4", func() []byte { return new(rawFile).header(4, 0, 0).Bytes() }, "unsupported GGUF version 4"},
		{"big endian", func() []byte { return new(rawFile).header(3<<24, 0, 0).Bytes() }, "big-endian"},
		{"hostile tensor count", func() []byte { return new(rawFile).header(3, 1<<60, 0).Bytes() }, "tensor count"},
		{"hostile kv count", func() []byte { return new(rawFile).header(3, 0, 1<<62).Bytes() }, "metadata count"},
		{"hostile string length", func() []byte {
			r := new(rawFile).header(3, 0, 1).u64(1 << 40)
			r.Write(make([]byte, 16))
			return r.Bytes()
		}, "string length"},
		{"hostile array length", func() []byte {
			return new(rawFile).header(3, 0, 1).str("a").u32(uint32(ValueArray)).u32(uint32(ValueUint64)).u64(1 << 50).Bytes()
		}, "array length"},
		{"hostile string array", func() []byte {
			return new(rawFile).header(3, 0, 1).str("a").u32(uint32(ValueArray)).u32(uint32(ValueString)).u64(1 << 30).u64(0).Bytes()
		}, "array length"},
		{"duplicate key", func() []byte {
			r := new(rawFile).header(3, 0, 2)
			r.str("k").u32(uint32(ValueUint32)).u32(0)
			r.str("k").u32(uint32(ValueUint32)).u32(0)
			return r.Bytes()
		}, `"k" at offset`},
		{"unknown value type", func() []byte {
			return new(rawFile).header(3, 0, 1).str("k").u32(13).u32(0).Bytes()
		}, "unknown value type 13"},
		{"bad bool", func() []byte {
			r := new(rawFile).header(3, 0, 1).str("k").u32(uint32(ValueBool))
			r.WriteByte(2)
			return r.Bytes()
		}, "neither 0 nor 1"},
		{"deep arrays", func() []byte {
			r := new(rawFile).header(3, 0, 1).str("k").u32(uint32(ValueArray))
			for i := 0; i < 20; i++ {
				r.u32(uint32(ValueArray)).u64(1)
			}
			return r.Bytes()
		}, "nested deeper"},
		{"alignment not power of two", func() []byte {
			return new(rawFile).header(3, 0, 1).str("general.alignment").u32(uint32(ValueUint32)).u32(48).Bytes()
		}, "general.alignment 48"},
		{"five dims", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 0, 1, 1, 1, 1, 1).padData(64)
		}, "5 dimensions"},
		{"unknown tensor type", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 99, 0, 4).padData(64)
		}, "unknown tensor type 99"},
		{"misaligned offset", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 4, 4).padData(64)
		}, "not a multiple of the alignment"},
		{"offset past end", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 64, 4).padData(64)
		}, "past the end"},
		{"size past end", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 0, 17).padData(64)
		}, "past the end"},
		{"duplicate tensor", func() []byte {
			return new(rawFile).header(3, 2, 0).tensor("t", 0, 0, 4).tensor("t", 0, 32, 4).padData(64)
		}, `tensor "t" appears twice`},
		{"overlap", func() []byte {
			return new(rawFile).header(3, 2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 16).padData(128)
		}, "overlap"},
		{"partial block", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("q", uint32(TypeQ8_0), 0, 33).padData(128)
		}, "whole number"},
		{"size overflow", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 0, 1<<31, 1<<31, 1<<2).padData(64)
		}, "overflow"},
		{"element overflow", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 0, 1<<40, 1<<40).padData(64)
		}, "overflow"},
		{"negative dim", func() []byte {
			return new(rawFile).header(3, 1, 0).tensor("t", 0, 0, 1<<63).padData(64)
		}, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data())
			if err == nil {
				t.Fatal("parsed without error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestParseTruncatedEverywhere(t *testing.T) {
	data := sampleFile(t)
	if _, err := Parse(data); err != nil {
		t.Fatalf("full sample: %v", err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	// Only the padding after the last tensor's data may be cut off.
	end := 0
	for _, ti := range f.Tensors {
		end = max(end, int(f.DataOffset)+int(ti.Offset)+len(ti.Data))
	}
	for n := 0; n < end; n++ {
		if _, err := Parse(data[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes parsed without error", n, len(data))
		}
	}
}

func TestParseCorruptedNeverPanics(t *testing.T) {
	data := sampleFile(t)
	buf := make([]byte, len(data))
	for i := 0; i < len(data); i++ {
		for _, v := range []byte{0x00, 0xff, 0x7f, 0x80, data[i] ^ 0x01} {
			copy(buf, data)
			buf[i] = v
			_, _ = Parse(buf) // must not panic; errors are expected
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("missing file opened")
	}
	empty := filepath.Join(dir, "empty.gguf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("error does not name the file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sampleFile(f))
	f.Add(new(rawFile).header(3, 0, 0).Bytes())
	f.Add(new(rawFile).header(2, 1, 0).tensor("t", 0, 0, 4).padData(64))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for _, ti := range file.Tensors {
			size, err := tensorSize(ti.Type, ti.Dims)
			if err != nil || size != len(ti.Data) {
				t.Fatalf("tensor %q accepted with size error %v (%d vs %d)", ti.Name, err, size, len(ti.Data))
			}
		}
	})
}
