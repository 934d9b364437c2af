// Package limit is the one vocabulary of run sizes that every workflow
// takes (--limit, a schedule's limit, a release's limit): smoke, ci-commit,
// ci-nightly, ci-long and full, after tt-inference-server's
// --limit-samples-mode. What a mode means for a benchmark sweep lives in
// bench/sweep, for an eval in the catalog's per-task limit_samples (key
// EvalKey) with DefaultEvalLimit when it has none.
package limit

import (
	"fmt"
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
