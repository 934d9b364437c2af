package metric

import (
	"math"
	"testing"
)

func TestRelaxedCorrect(t *testing.T) {
	for _, c := range []struct {
		pred, target string
		want         bool
	}{
		{"12", "12", true}, {"12.5", "12", true}, {"12.7", "12.0", false}, {"11.4", "12", true},
		{"50%", "0.5", true}, {"Yes", "yes", true}, {"0", "0", true}, {"0.01", "0", false}, {" 12", "12", true}, {"12 ", "12", true},
	} {
		if got := RelaxedCorrect(c.pred, c.target); got != c.want {
			t.Errorf("RelaxedCorrect(%q, %q) = %v", c.pred, c.target, got)
		}
	}
}

func TestANLS(t *testing.T) {
	if got := ANLS("  University of  California ", []string{"university of california"}); got != 1 {
		t.Errorf("case and spaces fold: %v", got)
	}
	if got := ANLS("1/8/93", []string{"1/8/93", "January 8, 1993"}); got != 1 {
		t.Errorf("best reference: %v", got)
	}
	if got := ANLS("itc ltd.", []string{"itc ltd"}); math.Abs(got-(1-1.0/8)) > 1e-12 {
		t.Errorf("partial: %v", got)
	}
	if got := ANLS("xyz", []string{"itc ltd"}); got != 0 {
		t.Errorf("below the threshold: %v", got)
	}
	if levenshtein([]rune("kitten"), []rune("sitting")) != 3 {
		t.Error("levenshtein")
	}
}
