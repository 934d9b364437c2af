package check

import (
	"strings"
	"testing"
)

// Answers are another party's bytes: reading them never panics, and what
// is read back has the shape promised.
func FuzzBase64Vectors(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":"AACAPwAAAEA="}]}`), 1)
	f.Add([]byte(`{"data":[{"index":5,"embedding":"AAA="}]}`), 1)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vecs, err := base64Vectors(raw, n)
		if err != nil {
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d inputs", len(vecs), n)
		}
		for i, v := range vecs {
			if len(v) == 0 {
				t.Fatalf("vector %d is empty", i)
			}
		}
	})
}

// A stop string is always a non-blank piece of the answer.
func FuzzStopString(f *testing.F) {
	f.Add(" hundred lead each does complete Ocean horse", 0.5)
	f.Add("héllo wörld", 0.75)
	f.Fuzz(func(t *testing.T, text string, frac float64) {
		if frac < 0 || frac > 1 {
			return
		}
		s := stopString(text, frac)
		if s != "" && (!strings.Contains(text, s) || strings.TrimSpace(s) == "") {
			t.Fatalf("stopString(%q, %v) = %q", text, frac, s)
		}
	})
}
