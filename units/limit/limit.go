// Package limit is the one vocabulary of run sizes that every workflow
// takes (--limit, a schedule's limit, a release's limit): smoke, ci-commit,
// ci-nightly, ci-long and full, after tt-inference-server's
// --limit-samples-mode, the size each caller gets when it names none, and
// the documents of one eval task (Docs: a count or a fraction, as
// lm-eval's --limit). What a mode means for a benchmark sweep lives in
// bench/sweep, for an eval in the catalog's per-task limit_samples (key
// EvalKey) with DefaultEvalLimit when it has none.
package limit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Mode is a run size.
type Mode string

// The modes, smallest first.
const (
	// Smoke checks the plumbing in minutes: the device's reference target
	// points, three documents per eval task.
	Smoke Mode = "smoke"
	// CICommit fits every commit: the target points and the short sweep
	// pairs, ten documents per eval task (or the catalog's ci_commit).
	CICommit Mode = "ci-commit"
	// CINightly is the nightly run: the whole sweep, the catalog's
	// ci_nightly eval sizes.
	CINightly Mode = "ci-nightly"
	// CILong is the catalog's ci_long eval sizes with the nightly sweep.
	CILong Mode = "ci-long"
	// Full runs everything: every sweep point and every document.
	Full Mode = "full"
)

// The run sizes of callers that name none, each chosen here once.
const (
	// DefaultRun is a workflow run's (ttisctl release, the plan of
	// ttisctl bench, any bench/release run): smoke, minutes end to end.
	DefaultRun = Smoke
	// DefaultSchedule is a [[schedule]] entry's: scheduled runs are
	// typically nightly.
	DefaultSchedule = CINightly
	// DefaultPlan is an evaluation's (ttisctl eval) or a sweep's planned
	// without a run size: everything, as lm-eval without --limit and a
	// full sweep.
	DefaultPlan = Full
)

// All lists the modes, smallest first.
func All() []Mode { return []Mode{Smoke, CICommit, CINightly, CILong, Full} }

// Parse checks a mode name; upstream's "smoke-test" is accepted for smoke.
func Parse(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case Smoke, CICommit, CINightly, CILong, Full:
		return m, nil
	case "smoke-test":
		return Smoke, nil
	}
	return "", fmt.Errorf("limit %q: want %s", s, Names())
}

// Names lists the modes for messages: "smoke, ci-commit, ci-nightly,
// ci-long or full".
func Names() string {
	all := All()
	names := make([]string, len(all))
	for i, m := range all {
		names[i] = string(m)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// EvalKey is the key of the mode in a catalog eval reference's
// limit_samples map ("" for full, which has none).
func (m Mode) EvalKey() string {
	switch m {
	case Smoke:
		return "smoke_test"
	case CICommit:
		return "ci_commit"
	case CINightly:
		return "ci_nightly"
	case CILong:
		return "ci_long"
	}
	return ""
}

// DefaultEvalLimit is the documents per task when the catalog gives no
// limit for the mode: smoke runs 3 (tt-inference-server's smoke-test
// --limit 3), ci-commit 10, the others everything ("").
func (m Mode) DefaultEvalLimit() string {
	switch m {
	case Smoke:
		return "3"
	case CICommit:
		return "10"
	}
	return ""
}

// Docs caps the documents of one eval task: a count, or a fraction of the
// dataset in (0, 1), as lm-eval's --limit (ceil(n·fraction) for a
// fraction). The zero Docs evaluates everything.
type Docs struct {
	Count    int
	Fraction float64
}

// ParseDocs reads "50", "0.2", or "", "full" and "none" (everything).
func ParseDocs(s string) (Docs, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "full" || s == "none" {
		return Docs{}, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Docs{}, fmt.Errorf("limit %q: want a count, a fraction in (0,1), or full", s)
	}
	d, err := DocsOf(v)
	if err != nil {
		return Docs{}, fmt.Errorf("limit %q: %w", s, err)
	}
	return d, nil
}

// DocsOf reads a number (a unit's [evals] limits, a catalog's
// limit_samples): a whole count of 1 or more, or a fraction in (0, 1).
func DocsOf(v float64) (Docs, error) {
	switch {
	case v > 0 && v < 1:
		return Docs{Fraction: v}, nil
	case v >= 1 && v == math.Trunc(v) && v <= math.MaxInt32:
		return Docs{Count: int(v)}, nil
	}
	return Docs{}, fmt.Errorf("want a count (a whole number ≥ 1) or a fraction in (0, 1), got %v", v)
}

// Apply returns how many of n documents to evaluate.
func (d Docs) Apply(n int) int {
	switch {
	case d.Fraction > 0:
		return min(n, int(math.Ceil(float64(n)*d.Fraction)))
	case d.Count > 0:
		return min(n, d.Count)
	}
	return n
}

// String formats d as ParseDocs reads it.
func (d Docs) String() string {
	switch {
	case d.Fraction > 0:
		return strconv.FormatFloat(d.Fraction, 'g', -1, 64)
	case d.Count > 0:
		return strconv.Itoa(d.Count)
	}
	return "full"
}
