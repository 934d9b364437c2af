package torchfile

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/runtime/cpu/internal/kernels"
)

func values(t *Tensor) []float64 {
	n := t.Elements()
	out := make([]float64, n)
	for i := range out {
		switch t.DType {
		case "float32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		case "float64":
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		case "float16":
			out[i] = float64(kernels.F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:])))
		case "int64":
			out[i] = float64(int64(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	}
	return out
}

// TestBothFormatsMatchTorch reads the same state_dict saved by torch 1.13
// as a zip archive and as a legacy stream (the FID Inception weights were
// published in the legacy format's era) and compares every tensor with the
// values torch printed.
func TestBothFormatsMatchTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Tensors map[string]struct {
			Shape  []int
			Values []float64
		}
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"testdata/state_zip.pth", "testdata/state_legacy.pth"} {
		sd, err := ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(sd) != len(want.Tensors) {
			t.Errorf("%s: %d tensors, want %d", file, len(sd), len(want.Tensors))
		}
		for name, w := range want.Tensors {
			got := sd[name]
			if got == nil {
				t.Errorf("%s: no tensor %q", file, name)
				continue
			}
			shape := got.Shape
			if shape == nil {
				shape = []int{}
			}
			if !reflect.DeepEqual(shape, w.Shape) && !(len(shape) == 0 && len(w.Shape) == 0) {
				t.Errorf("%s: %s has shape %v, want %v", file, name, got.Shape, w.Shape)
			}
			if v := values(got); !reflect.DeepEqual(v, w.Values) && !(len(v) == 0 && len(w.Values) == 0) {
				t.Errorf("%s: %s = %v, want %v", file, name, v, w.Values)
			}
		}
	}
	sd, err := ReadFile("testdata/param.pth")
	if err != nil || sd["p"] == nil || sd["p"].Elements() != 4 {
		t.Errorf("a saved Parameter: %v %v", sd, err)
	}
}

func TestRejects(t *testing.T) {
	zipData, err := os.ReadFile("testdata/state_zip.pth")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := os.ReadFile("testdata/state_legacy.pth")
	if err != nil {
		t.Fatal(err)
	}
	evil := []byte("\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.")
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"os.system", evil, "neither a zip archive nor a legacy"},
		{"truncated legacy", legacy[:len(legacy)-10], "bytes, "},
		{"truncated zip", zipData[:len(zipData)/2], "zip archive"},
		{"empty", nil, "neither a zip archive nor a legacy"},
	} {
		_, err := Parse(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
	// The global itself is refused before anything is called.
	u := &unpickler{data: evil}
	if _, err := u.load(); err == nil || !strings.Contains(err.Error(), "global os.system is not part of a state_dict") {
		t.Errorf("os.system global: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/state_zip.pth", "testdata/state_legacy.pth", "testdata/param.pth"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := Parse(data)
		if err != nil {
			return
		}
		for name, tn := range sd {
			if len(tn.Data) != tn.Elements()*tn.DType.Size() {
				t.Fatalf("%s: %d bytes for %d elements of %s", name, len(tn.Data), tn.Elements(), tn.DType)
			}
		}
	})
}
