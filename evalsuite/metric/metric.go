// Package metric implements lm-evaluation-harness's per-sample metrics
// (exact_match with its normalisation options, acc and acc_norm from
// log-likelihoods) and its aggregations with standard errors (the sample
// standard error of a mean, and the pooled error of a size-weighted group).
package metric

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// ExactMatchOptions are exact_match's normalisation options as lm-eval
// passes them to its hf-evaluate port: regexes are removed first (every
// match, Python re.sub semantics), then case, then punctuation, then digits.
type ExactMatchOptions struct {
	RegexesToIgnore   []string `json:"regexes_to_ignore,omitempty"`
	IgnoreCase        bool     `json:"ignore_case,omitempty"`
	IgnorePunctuation bool     `json:"ignore_punctuation,omitempty"`
	IgnoreNumbers     bool     `json:"ignore_numbers,omitempty"`
}

// ExactMatcher is a compiled ExactMatchOptions.
type ExactMatcher struct {
	opts    ExactMatchOptions
	ignores []*regexp2.Regexp
}

// NewExactMatcher compiles the ignore patterns (Python `re` syntax).
func NewExactMatcher(opts ExactMatchOptions) (*ExactMatcher, error) {
	m := &ExactMatcher{opts: opts}
	for _, p := range opts.RegexesToIgnore {
		re, err := regexp2.Compile(p, regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("exact_match regexes_to_ignore %q: %w", p, err)
		}
		re.MatchTimeout = 2 * time.Second
		m.ignores = append(m.ignores, re)
	}
	return m, nil
}

// Options returns the options the matcher was built from.
func (m *ExactMatcher) Options() ExactMatchOptions { return m.opts }

// pythonPunctuation is Python's string.punctuation, the set lm-eval removes
// for ignore_punctuation.
const pythonPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// Normalize applies the options to s.
func (m *ExactMatcher) Normalize(s string) (string, error) {
	for _, re := range m.ignores {
		out, err := re.Replace(s, "", -1, -1)
		if err != nil {
			return "", fmt.Errorf("exact_match regexes_to_ignore %q: %w", re.String(), err)
		}
		s = out
	}
	if m.opts.IgnoreCase {
		s = strings.ToLower(s)
	}
	if m.opts.IgnorePunctuation {
		s = strings.Map(func(r rune) rune {
			if r < 128 && strings.ContainsRune(pythonPunctuation, r) {
				return -1
			}
			return r
		}, s)
	}
	if m.opts.IgnoreNumbers {
		s = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, s)
	}
	return s, nil
}

// Score returns 1 when prediction and reference are equal after
// normalisation, else 0.
func (m *ExactMatcher) Score(prediction, reference string) (float64, error) {
	p, err := m.Normalize(prediction)
	if err != nil {
		return 0, err
	}
	r, err := m.Normalize(reference)
	if err != nil {
		return 0, err
	}
	if p == r {
		return 1, nil
	}
	return 0, nil
}

// MultipleChoice scores one multiple-choice document from the summed
// log-likelihood of each choice's continuation, as lm-eval does: acc is
// whether the most likely choice is gold; acc_norm divides each
// log-likelihood by the choice's length in characters first. Ties go to the
// first choice (numpy argmax).
func MultipleChoice(lls []float64, choices []string, gold int) (acc, accNorm float64, err error) {
	if len(lls) != len(choices) || len(lls) == 0 {
		return 0, 0, fmt.Errorf("multiple choice: %d log-likelihoods for %d choices", len(lls), len(choices))
	}
	if gold < 0 || gold >= len(choices) {
		return 0, 0, fmt.Errorf("multiple choice: gold index %d out of range [0,%d)", gold, len(choices))
	}
	norm := make([]float64, len(lls))
	for i, ll := range lls {
		n := float64(len([]rune(choices[i])))
		if n == 0 {
			n = 1
		}
		norm[i] = ll / n
	}
	if argmax(lls) == gold {
		acc = 1
	}
	if argmax(norm) == gold {
		accNorm = 1
	}
	return acc, accNorm, nil
}

func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] || (math.IsNaN(xs[best]) && !math.IsNaN(x)) {
			best = i
		}
	}
	return best
}

// Mean is the arithmetic mean (NaN for no values).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// SampleStdDev is the standard deviation with Bessel's correction (n-1), as
// lm-eval's sample_stddev; NaN for fewer than two values.
func SampleStdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	mu := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - mu) * (x - mu)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// MeanStderr is lm-eval's mean_stderr: sample_stddev / sqrt(n).
func MeanStderr(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	return SampleStdDev(xs) / math.Sqrt(float64(len(xs)))
}

// Subtask is one member's aggregate in a group.
type Subtask struct {
	Value  float64
	Stderr float64
	Size   int
}

// GroupMean aggregates subtask means as lm-eval's aggregate_subtask_metrics:
// weighted by size (a micro-average over all samples) or a plain mean of
// the subtask values.
func GroupMean(subs []Subtask, weightBySize bool) float64 {
	if len(subs) == 0 {
		return math.NaN()
	}
	var num, den float64
	for _, s := range subs {
		w := 1.0
		if weightBySize {
			w = float64(s.Size)
		}
		num += s.Value * w
		den += w
	}
	if den == 0 {
		return math.NaN()
	}
	return num / den
}

// PooledStderr is lm-eval's pooled_sample_stderr for a size-weighted group:
// sqrt( Σ (nᵢ-1)·seᵢ²·nᵢ / (Σnᵢ - k) / Σnᵢ ), which reproduces the standard
// error of the concatenated samples. Subtasks without a finite stderr make
// the result NaN.
func PooledStderr(subs []Subtask) float64 {
	var num float64
	total := 0
	for _, s := range subs {
		if math.IsNaN(s.Stderr) || math.IsInf(s.Stderr, 0) {
			return math.NaN()
		}
		n := float64(s.Size)
		num += (n - 1) * s.Stderr * s.Stderr * n
		total += s.Size
	}
	if total-len(subs) <= 0 {
		return math.NaN()
	}
	v := num / float64(total-len(subs))
	return math.Sqrt(v / float64(total))
}

// Letter returns the i-th upper-case choice letter ("A" for 0).
func Letter(i int) string {
	if i < 0 || i >= 26 {
		return fmt.Sprintf("(%d)", i)
	}
	return string(rune('A' + i))
}
