package r1grade

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMatchesFork compares every stage with the fork's Python results
// recorded in testdata/golden.json (see testdata/README).
func TestMatchesFork(t *testing.T) {
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Response  string  `json:"response"`
		Extracted string  `json:"extracted"`
		Candidate string  `json:"candidate"`
		Score     float64 `json:"exact_match_vs_B"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	gold := Gold("(B)")
	if gold != "B" {
		t.Fatalf("gold %q", gold)
	}
	for _, c := range cases {
		if got := StripAnswer(ExtractAnswer(StripThink(c.Response))); got != c.Extracted {
			t.Errorf("%q: extracted %q, want %q", c.Response, got, c.Extracted)
		}
		if got := Candidate(c.Response); got != c.Candidate {
			t.Errorf("%q: candidate %q, want %q", c.Response, got, c.Candidate)
		}
		if got := Score(gold, Candidate(c.Response)); got != c.Score {
			t.Errorf("%q: score %v, want %v", c.Response, got, c.Score)
		}
	}
}

// TestWordToNumber follows word2number 1.1's word_to_num.
func TestWordToNumber(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"one", "1", true},
		{"twenty-one", "21", true},
		{"Two Hundred and five", "205", true},
		{"one million two thousand three", "1002003", true},
		{"two billion", "2000000000", true},
		{"point five", "0.5", true},
		{"one point zero", "1.0", true},
		{"three point twenty", "3", true}, // a non-digit decimal word drops the decimals
		{"0042", "42", true},
		{"", "", false},
		{"option B", "", false},
		{"thousand thousand", "", false},
		{"thousand million", "", false},
		{"thousand five", "", false}, // number_formation of nothing fails
	} {
		got, ok := WordToNumber(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("WordToNumber(%q) = %q %v, want %q %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestPythonFloat(t *testing.T) {
	for f, want := range map[float64]string{2.5: "2.5", 3: "3.0", 1e16: "1e+16", 0.00001: "1e-05", 1000000.25: "1000000.25", 0: "0.0"} {
		if got := pythonFloat(f); got != want {
			t.Errorf("pythonFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

// FuzzCandidate grades arbitrary responses: grading must not panic and
// must produce valid text no longer than the input allows.
func FuzzCandidate(f *testing.F) {
	f.Add("<think>x</think>\\boxed{B}")
	f.Add("The answer is two hundred point five")
	f.Add("\\boxed{\\frac1}")
	f.Add("1,2,-3")
	f.Fuzz(func(t *testing.T, resp string) {
		got := Candidate(resp)
		if utf8.ValidString(resp) && !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q from %q", got, resp)
		}
		_ = Score("B", got)
	})
}

// BenchmarkCandidate grades a long reasoning response (about 40 KB of
// thinking, then a boxed letter), the common case for r1_gpqa_diamond.
func BenchmarkCandidate(b *testing.B) {
	resp := "<think>" + strings.Repeat("Consider option (A) versus option (C); the energy is 3.5 eV, so ", 600) + "</think>\n\nThe answer is \\boxed{C}."
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		if Candidate(resp) != "C" {
			b.Fatal("wrong candidate")
		}
	}
}
