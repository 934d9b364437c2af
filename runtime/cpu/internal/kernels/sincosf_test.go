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
		t.Fatalf("sincosf.json: %d values, want the generator's 2408", len(fix.Values))
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

// TestSincosfSpecial checks the small arguments glibc returns unchanged
// (sin) or as 1 (cos), and that Inf and NaN give NaN.
func TestSincosfSpecial(t *testing.T) {
	for _, x := range []float32{1e-5, -1e-5, 0} {
		if s, c := Sincosf(x); s != x || c != 1 {
			t.Errorf("Sincosf(%g) = %g, %g; glibc gives %g, 1", x, s, c, x)
		}
	}
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		if s, c := Sincosf(x); !math.IsNaN(float64(s)) || !math.IsNaN(float64(c)) {
			t.Errorf("Sincosf(%g) = %g, %g; want NaN, NaN", x, s, c)
		}
	}
}
