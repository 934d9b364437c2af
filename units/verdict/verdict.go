// Package verdict is the one vocabulary of a check's outcome that every
// grader and report writes: a measurement against its reference passes,
// fails, or cannot be graded. Accuracy checks (evalsuite/results),
// benchmark tiers (bench/grade) and a run's acceptance categories
// (bench/release) all take their PASS, FAIL and NA from here.
package verdict

// Verdict is a check's outcome, written as tt-inference-server's reports
// write it.
type Verdict string

// The outcomes.
const (
	// Pass: measured, and the reference was met.
	Pass Verdict = "PASS"
	// Fail: measured, and the reference was missed.
	Fail Verdict = "FAIL"
	// NA: nothing to grade against (no reference, no target), or no
	// measurement to grade; never a pass.
	NA Verdict = "NA"
)
