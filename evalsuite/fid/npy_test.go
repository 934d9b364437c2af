package fid

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npy writes an .npy file by hand (format 1.0), as NumPy lays it out.
func npy(header string, data []byte) []byte {
	h := header
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	return append(append(b, h...), data...)
}

func f64s(v ...float64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func TestParseNPY(t *testing.T) {
	a, err := ParseNPY(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", f64s(1, 2, 3, 4, 5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Shape) != 2 || a.Shape[0] != 2 || a.Shape[1] != 3 || a.Data[5] != 6 {
		t.Fatalf("%+v", a)
	}
	// Fortran order is column-major on disk.
	a, err = ParseNPY(npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f64s(1, 4, 2, 5, 3, 6)))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float64{1, 2, 3, 4, 5, 6} {
		if a.Data[i] != v {
			t.Fatalf("fortran order read as %v", a.Data)
		}
	}
	var f4 []byte
	for _, v := range []float32{0.5, -2} {
		f4 = binary.LittleEndian.AppendUint32(f4, math.Float32bits(v))
	}
	a, err = ParseNPY(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f4))
	if err != nil || a.Data[0] != 0.5 || a.Data[1] != -2 {
		t.Fatalf("%+v %v", a, err)
	}
	for _, tc := range []struct {
		file []byte
		want string
	}{
		{[]byte("PK\x03\x04"), "no \\x93NUMPY magic"},
		{npy("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", f64s(1)), `dtype ">f8"`},
		{npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", f64s(1)), "data is 8 bytes; shape [3] of <f8 needs 24"},
		{npy("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (1,), }", f64s(1)), "fortran_order"},
		{npy("{'descr': '<f8', 'shape': (1,), }", f64s(1)), `no "fortran_order"`},
		{npy("{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }", nil), "larger than"},
		{npy("['descr']", nil), "not a dict literal"},
	} {
		if _, err := ParseNPY(tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func zipOf(t testing.TB, members map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range members {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	zw.Close()
	return buf.Bytes()
}

func TestLoadStatsChecks(t *testing.T) {
	mu := npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f64s(1, 2))
	for _, tc := range []struct {
		sigma []byte
		want  string
	}{
		{npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", f64s(1, 0.5, 0.4, 1)), "not symmetric"},
		{npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }", f64s(1, 0, 0, 0, 1, 0, 0, 0, 1)), "want (2, 2)"},
		{npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", f64s(1, math.NaN(), math.NaN(), 1)), "not finite"},
	} {
		if _, err := LoadStats(zipOf(t, map[string][]byte{"mu.npy": mu, "sigma.npy": tc.sigma})); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	if _, err := LoadStats(zipOf(t, map[string][]byte{"mu.npy": mu})); err == nil || !strings.Contains(err.Error(), `no array "sigma" in the archive (it holds mu)`) {
		t.Errorf("error %v", err)
	}
}

// FuzzParseNPZ feeds archives and bare .npy files to the readers: they
// must fail cleanly, never panic or allocate what a header announces.
func FuzzParseNPZ(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "ref64.npz")); err == nil {
		f.Add(b)
	}
	f.Add(npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1), }", f64s(1, 2)))
	f.Add(zipOf(f, map[string][]byte{"mu.npy": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", []byte{0, 0, 128, 63})}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseNPY(b)
		_, _ = LoadStats(b)
	})
}
