package runner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limit caps the documents evaluated: a count, or a fraction of the
// dataset in (0, 1), as lm-eval's --limit (ceil(n·fraction) for a
// fraction). The zero Limit evaluates everything.
type Limit struct {
	Count    int
	Fraction float64
}

// ParseLimit reads "50", "0.2", "" or "full" (no limit).
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "full" || s == "none" {
		return Limit{}, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return Limit{}, fmt.Errorf("limit %q: want a count, a fraction in (0,1), or full", s)
	}
	if v < 1 {
		return Limit{Fraction: v}, nil
	}
	if v != math.Trunc(v) {
		return Limit{}, fmt.Errorf("limit %q: a count must be a whole number", s)
	}
	return Limit{Count: int(v)}, nil
}

// Apply returns how many of n documents to evaluate.
func (l Limit) Apply(n int) int {
	switch {
	case l.Fraction > 0:
		return min(n, int(math.Ceil(float64(n)*l.Fraction)))
	case l.Count > 0:
		return min(n, l.Count)
	}
	return n
}

// String formats the limit as ParseLimit reads it.
func (l Limit) String() string {
	switch {
	case l.Fraction > 0:
		return strconv.FormatFloat(l.Fraction, 'g', -1, 64)
	case l.Count > 0:
		return strconv.Itoa(l.Count)
	}
	return "full"
}
