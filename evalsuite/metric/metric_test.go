package metric

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// Expected values were computed with lm-eval's formulas in Python
// (sample_stddev/sqrt(n); pooled_sample_stderr).
func TestStderrFormulas(t *testing.T) {
	a := []float64{1, 0, 1, 1}
	b := []float64{0, 0, 1, 0, 1, 1}
	if got := MeanStderr(a); !near(got, 0.25) {
		t.Errorf("MeanStderr(a) = %v, want 0.25", got)
	}
	if got := MeanStderr(b); !near(got, 0.22360679774997896) {
		t.Errorf("MeanStderr(b) = %v", got)
	}
	subs := []Subtask{{Value: Mean(a), Stderr: MeanStderr(a), Size: 4}, {Value: Mean(b), Stderr: MeanStderr(b), Size: 6}}
	if got := PooledStderr(subs); !near(got, 0.16770509831248423) {
		t.Errorf("PooledStderr = %v, want 0.16770509831248423", got)
	}
	if got := GroupMean(subs, true); !near(got, 0.6) {
		t.Errorf("weighted GroupMean = %v, want 0.6", got)
	}
	if got := GroupMean(subs, false); !near(got, 0.625) {
		t.Errorf("plain GroupMean = %v, want 0.625", got)
	}
	if !math.IsNaN(MeanStderr([]float64{1})) || !math.IsNaN(Mean(nil)) {
		t.Error("one sample has no stderr and no samples no mean")
	}
}

func TestMultipleChoice(t *testing.T) {
	tests := []struct {
		name         string
		lls          []float64
		choices      []string
		gold         int
		acc, accNorm float64
	}{
		{"raw and normalised agree", []float64{-1, -5, -6}, []string{" a", " b", " c"}, 0, 1, 1},
		// " long answer" (12 chars) at -6 is -0.5/char; " x" (2) at -2 is -1/char.
		{"length normalisation flips the choice", []float64{-2, -6}, []string{" x", " long answer"}, 1, 0, 1},
		{"ties go to the first choice", []float64{-3, -3}, []string{" p", " q"}, 1, 0, 0},
	}
	for _, tt := range tests {
		acc, norm, err := MultipleChoice(tt.lls, tt.choices, tt.gold)
		if err != nil {
			t.Fatal(err)
		}
		if acc != tt.acc || norm != tt.accNorm {
			t.Errorf("%s: acc=%v acc_norm=%v, want %v %v", tt.name, acc, norm, tt.acc, tt.accNorm)
		}
	}
	if _, _, err := MultipleChoice([]float64{-1}, []string{"a", "b"}, 0); err == nil {
		t.Error("want an error for mismatched lengths")
	}
	if _, _, err := MultipleChoice([]float64{-1, -2}, []string{"a", "b"}, 2); err == nil {
		t.Error("want an error for a gold index out of range")
	}
}

func TestExactMatchOptions(t *testing.T) {
	tests := []struct {
		opts      ExactMatchOptions
		pred, ref string
		want      float64
	}{
		{ExactMatchOptions{}, "Paris", "paris", 0},
		{ExactMatchOptions{IgnoreCase: true}, "Paris", "paris", 1},
		{ExactMatchOptions{IgnorePunctuation: true}, "(B).", "B", 1},
		{ExactMatchOptions{IgnorePunctuation: true}, "«B»", "B", 0}, // only ASCII punctuation
		{ExactMatchOptions{IgnoreNumbers: true}, "a1b2", "ab", 1},
		{ExactMatchOptions{RegexesToIgnore: []string{`\s+`}}, " 4 2 ", "42", 1},
		// regexes run before lower-casing: the pattern must match the original case
		{ExactMatchOptions{IgnoreCase: true, RegexesToIgnore: []string{"ANSWER: "}}, "ANSWER: x", "x", 1},
		{ExactMatchOptions{IgnoreCase: true, RegexesToIgnore: []string{"answer: "}}, "ANSWER: x", "x", 0},
	}
	for _, tt := range tests {
		m, err := NewExactMatcher(tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Score(tt.pred, tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%+v %q vs %q = %v, want %v", tt.opts, tt.pred, tt.ref, got, tt.want)
		}
	}
	if _, err := NewExactMatcher(ExactMatchOptions{RegexesToIgnore: []string{"("}}); err == nil {
		t.Error("want an error for a bad ignore pattern")
	}
}
