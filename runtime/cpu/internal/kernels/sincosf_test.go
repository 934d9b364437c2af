package kernels

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestSincosfMatchesGlibc requires Sincosf to return glibc's sinf and cosf
// bit for bit on sincosf.json (gen/sincosf.c): ggml's rope angles for the
// first 33 positions of a 64-wide head, and values spread over (-120, 120).
// A correctly rounded cosine misses some of them (position 30, pair 12,
// for one); the test requires the fixture to hold such values.
func TestSincosfMatchesGlibc(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "llamacpp", "sincosf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fix struct {
		Values [][3]uint32 `json:"values"`
	}
	if err := json.Unmarshal(raw, &fix); err != nil {
		t.Fatalf("sincosf.json: %v", err)
	}
	if len(fix.Values) < 1000 {
		t.Fatalf("sincosf.json: %d values, want the generator's 1656", len(fix.Values))
	}
	rounded := 0
	for _, v := range fix.Values {
		x := math.Float32frombits(v[0])
		s, c := Sincosf(x)
		if math.Float32bits(s) != v[1] || math.Float32bits(c) != v[2] {
			t.Errorf("Sincosf(%g) = %g, %g; glibc %g, %g", x, s, c, math.Float32frombits(v[1]), math.Float32frombits(v[2]))
		}
		if float32(math.Cos(float64(x))) != math.Float32frombits(v[2]) || float32(math.Sin(float64(x))) != math.Float32frombits(v[1]) {
			rounded++
		}
	}
	if rounded == 0 {
		t.Error("correctly rounded sin/cos match every value: the fixture no longer tells Sincosf from math.Sincos")
	}
	t.Logf("correctly rounded sin/cos differ from glibc's on %d of %d values", rounded, len(fix.Values))
}

// TestSincosfLargeAndSpecial checks the range Sincosf leaves to math
// (|x| >= 120) and the small arguments glibc returns unchanged.
func TestSincosfLargeAndSpecial(t *testing.T) {
	for _, x := range []float32{120, -120, 1000.5, 1e-5, -1e-5, 0} {
		s, c := Sincosf(x)
		ws, wc := math.Sincos(float64(x))
		if math.Abs(float64(s)-ws) > 1e-6 || math.Abs(float64(c)-wc) > 1e-6 {
			t.Errorf("Sincosf(%g) = %g, %g; want about %g, %g", x, s, c, ws, wc)
		}
	}
	if s, c := Sincosf(1e-5); s != 1e-5 || c != 1 {
		t.Errorf("Sincosf(1e-5) = %g, %g; glibc gives 1e-5, 1", s, c)
	}
}
