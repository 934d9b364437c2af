package release

import (
	"fmt"
	"strings"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// Verdicts of a run. A certificate claims only what it measured: PASS
// needs every check the model's status enforces to have been measured and
// met.
const (
	// VerdictPass: everything the status enforces was measured and met.
	VerdictPass = string(verdict.Pass)
	// VerdictFail: something the status enforces was measured and missed.
	VerdictFail = string(verdict.Fail)
	// VerdictIncomplete: something required was not measured (a reference
	// task that could not run, a target point that did not run, failed
	// requests, an interrupted run), and nothing measured failed.
	VerdictIncomplete = "INCOMPLETE"
	// VerdictUngraded: there is nothing to grade against (no catalog
	// references, or a status that enforces nothing); the run checked
	// only that the server works.
	VerdictUngraded = "UNGRADED"
)

// Category statuses.
const (
	CategoryPass = string(verdict.Pass)
	CategoryFail = string(verdict.Fail)
	// CategoryIncomplete: something in the category was required but not
	// measured.
	CategoryIncomplete = "INCOMPLETE"
	// CategoryNA: the category ran but nothing in it was graded.
	CategoryNA = string(verdict.NA)
	// CategoryAbsent: the workflow did not run this category.
	CategoryAbsent = "ABSENT"
)

// Roles of an eval task in a run.
const (
	// RoleReference: the catalog grades the model with this task.
	RoleReference = "reference"
	// RoleSmoke: a built-in generated task that checks the plumbing; it
	// never stands in for a reference.
	RoleSmoke = "smoke"
	// RoleExtra: a task the operator asked for that the catalog does not
	// reference for the model.
	RoleExtra = "extra"
)

// Category is one acceptance category (Benchmarks, Evals).
type Category struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Total  int    `json:"total"`
	Passed int    `json:"passed"`
	Failed int    `json:"failed"`
	// Missing counts required checks that were not measured.
	Missing  int      `json:"not_measured"`
	NA       int      `json:"na"`
	Skipped  int      `json:"skipped"`
	Waived   int      `json:"waived"`
	Blockers []string `json:"blockers"`
}

// Blocker is one reason the run is not accepted, or one waiver. A reason
// several checks share (the Hub could not be reached, the run is offline)
// is Cause, said once for all of them, with Fix, the command that fixes
// it; Message is then the check's own part.
type Blocker struct {
	Key     string `json:"key"`
	Message string `json:"message"`
	Cause   string `json:"cause,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// Text is the blocker in one sentence, for readers that take each alone
// (acceptance_blockers in report.json).
func (b Blocker) Text() string {
	s := b.Message
	if b.Cause != "" {
		s += ": " + b.Cause
	}
	if b.Fix != "" {
		s += "; fix: " + b.Fix
	}
	return s
}

// Acceptance is the run's verdict.
type Acceptance struct {
	// Verdict is PASS, FAIL, INCOMPLETE or UNGRADED; Passed is Verdict ==
	// PASS (upstream's acceptance_criteria).
	Verdict string
	Passed  bool
	// Summary says in one line what the verdict rests on.
	Summary     string
	ModelStatus string
	// EnforcementResult says what the model's status enforces.
	EnforcementResult string
	Categories        []Category
	// Blockers are measured failures of enforced checks; Missing are
	// required checks that were not measured; Waived are failures that
	// do not count (a status that enforces nothing, a tier it does not
	// enforce, a known issue of the catalog), with why.
	Blockers []Blocker
	Missing  []Blocker
	Waived   []Blocker
}

// enforcing reports whether a status enforces anything: EXPERIMENTAL and
// unknown statuses (a model outside the catalog) enforce nothing.
func enforcing(status string) bool { return len(catalog.RequiredTiers(status)) > 0 }

// waiver finds the catalog's known issue that covers a workflow's task
// ("" for the workflow as a whole).
func waiver(spec *catalog.Spec, workflow, task string) (catalog.KnownIssue, bool) {
	if spec == nil {
		return catalog.KnownIssue{}, false
	}
	for _, k := range spec.KnownIssues {
		if strings.EqualFold(k.Workflow, workflow) && (k.Task == "" || k.Task == task) {
			return k, true
		}
	}
	return catalog.KnownIssue{}, false
}

// Accept derives the verdict of a run from its sections and the catalog
// entry of the model on the device (nil: a model the catalog does not
// know, such as a custom GGUF on the cpu runtime):
//   - A benchmark point whose enforced tier failed is a blocker (grading
//     applied the status's tiers); failures in other tiers are waived. A
//     point whose requests failed, or a reference target point that did
//     not run, is not measured. A status that enforces a tier needs every
//     reference target point measured.
//   - An eval reference below its score is a blocker; one that could not
//     run (not implemented, no dataset, every sample errored, no sample)
//     is not measured. Built-in smoke tasks never count as references.
//   - The catalog's known issues waive the failures they name, and say so.
//   - A status that enforces nothing (EXPERIMENTAL, or no catalog entry)
//     is UNGRADED: what was measured is reported, nothing is certified.
func Accept(spec *catalog.Spec, bench *BenchSection, evals *EvalSection) Acceptance {
	return AcceptRun(spec, bench, evals, nil)
}

// AcceptRun is Accept with the run's spec tests (nil: the workflow ran
// none, and the category is left out): a required test that failed is a
// blocker (even without a catalog entry, since the tests then hold the
// server to its own limits; not for EXPERIMENTAL, which enforces nothing),
// and one that did not run is not measured.
func AcceptRun(spec *catalog.Spec, bench *BenchSection, evals *EvalSection, tests *TestSection) Acceptance {
	status := ""
	if spec != nil {
		status = spec.Status
	}
	a := Acceptance{ModelStatus: catalog.StatusName(status)}
	if spec == nil {
		a.ModelStatus = "not in the catalog for this device"
	}
	enforced := enforcing(status)
	required := catalog.RequiredTiers(status)
	fail := func(c *Category, key, msg string) {
		c.Failed++
		c.Blockers = append(c.Blockers, key)
		a.Blockers = append(a.Blockers, Blocker{Key: key, Message: msg})
	}
	missingBecause := func(c *Category, b Blocker) {
		c.Missing++
		c.Blockers = append(c.Blockers, b.Key)
		a.Missing = append(a.Missing, b)
	}
	missing := func(c *Category, key, msg string) { missingBecause(c, Blocker{Key: key, Message: msg}) }
	waive := func(c *Category, key, msg string) {
		c.Waived++
		a.Waived = append(a.Waived, Blocker{Key: key, Message: msg})
	}
	measuredPoints, smokeRan := 0, 0

	bc := Category{Name: "Benchmarks", Blockers: []string{}}
	if bench == nil {
		bc.Status = CategoryAbsent
	} else {
		if bench.Error != "" {
			missing(&bc, "task:benchmarks", bench.Error)
		}
		targetPoints := 0
		for i := range bench.Rows {
			r := &bench.Rows[i]
			bc.Total++
			key := "benchmarks:" + r.Key()
			if r.Source == "target" {
				targetPoints++
			}
			if r.Grade.Status != grade.StatusError && r.Error == "" {
				measuredPoints++
			}
			switch {
			case r.Error != "":
				missing(&bc, key, "did not run: "+r.Error)
			case r.Grade.Status == grade.StatusError:
				missing(&bc, key, "incomplete: "+strings.Join(r.Grade.Blockers, "; "))
			case r.Grade.Status == grade.StatusPass:
				bc.Passed++
			case r.Grade.Status == grade.StatusFail:
				msg := strings.Join(r.Grade.Blockers, "; ")
				if k, ok := waiver(spec, "BENCHMARKS", ""); ok {
					waive(&bc, key, fmt.Sprintf("%s (waived: known issue %s)", msg, knownIssue(k)))
				} else {
					fail(&bc, key, msg)
				}
			case r.Grade.Status == grade.StatusWaived:
				waive(&bc, key, "failed only tiers status "+a.ModelStatus+" does not enforce: "+strings.Join(r.Grade.Waived, "; "))
			default:
				bc.NA++
			}
		}
		// A dev spec without targets has nothing to grade against (the
		// prod catalog's targets are another spec's and never stand in):
		// the verdict says so instead of asking for target points.
		if !devNoTargets(spec) && len(required) > 0 && bench.Error == "" && targetPoints == 0 && !bench.Point {
			missing(&bc, "benchmarks:targets", fmt.Sprintf("no reference target point was measured, but status %s enforces the %s tier", status, strings.Join(required, ", ")))
		}
		bc.Status = categoryStatus(&bc)
	}

	ec := Category{Name: "Evals", Blockers: []string{}}
	if evals == nil {
		ec.Status = CategoryAbsent
	} else {
		if evals.Error != "" {
			missing(&ec, "task:evals", evals.Error)
		}
		for i := range evals.Rows {
			r := &evals.Rows[i]
			key := "evals:" + r.Task
			if r.Role == RoleSmoke {
				// Plumbing checks: never graded, but one that did not
				// complete means the server did not answer as it should.
				switch {
				case r.NotRun != "":
					missing(&ec, key, "smoke check not run: "+r.NotRun)
				case r.Errored > 0:
					missing(&ec, key, fmt.Sprintf("smoke check incomplete: %d of %d samples errored", r.Errored, r.Samples))
				default:
					smokeRan++
					ec.Skipped++
				}
				continue
			}
			ec.Total++
			k, waived := waiver(spec, "EVALS", r.Task)
			switch {
			case r.NotRun != "" && waived:
				waive(&ec, key, fmt.Sprintf("not measured: %s (waived: known issue %s)", r.NotRun, knownIssue(k)))
			case r.NotRun != "":
				missingBecause(&ec, Blocker{Key: key, Message: r.NotRun, Cause: r.NotRunCause, Fix: r.Fix})
			case r.Errored > 0 && r.Errored >= r.Samples:
				missing(&ec, key, fmt.Sprintf("all %d samples errored", r.Samples))
			case r.Errored > 0:
				missing(&ec, key, fmt.Sprintf("incomplete: %d of %d samples errored", r.Errored, r.Samples))
			case r.Samples == 0:
				missing(&ec, key, "no sample was evaluated")
			case r.Check == verdict.Pass:
				ec.Passed++
			case r.Check == verdict.Fail && !enforced:
				waive(&ec, key, fmt.Sprintf("score %s below %s, but status %s enforces nothing", pct(r.Score), r.Basis, a.ModelStatus))
			case r.Check == verdict.Fail && waived:
				waive(&ec, key, fmt.Sprintf("score %s below %s (waived: known issue %s)", pct(r.Score), r.Basis, knownIssue(k)))
			case r.Check == verdict.Fail && r.Media != nil:
				fail(&ec, key, mediaFailure(r))
			case r.Check == verdict.Fail:
				fail(&ec, key, fmt.Sprintf("score %s below %s (ratio %s, tolerance %.0f%%)", pct(r.Score), r.Basis, ratioOf(r), 100*r.Tolerance))
			default:
				ec.NA++
			}
		}
		ec.Status = categoryStatus(&ec)
	}
	a.Categories = []Category{bc, ec}
	testsPassed := 0
	if tests != nil {
		var tc Category
		tc, testsPassed = acceptTests(spec, tests, status, fail, missing, waive)
		a.Categories = append(a.Categories, tc)
	}

	checked := fmt.Sprintf("%d benchmark point(s) measured, %d smoke task(s) ran", measuredPoints, smokeRan)
	if tests != nil {
		checked += fmt.Sprintf(", %d spec test(s) passed", testsPassed)
	}
	onePoint := bench != nil && bench.Point && evals == nil && bc.Passed+bc.Failed+bc.Waived == 0
	switch {
	case bench != nil && devNoTargets(spec) && len(a.Blockers) == 0 && len(a.Missing) == 0:
		a.Verdict = VerdictUngraded
		a.Summary = fmt.Sprintf("the dev catalog's spec %s has no performance targets: benchmarks are not graded (the prod catalog's targets are not used for a dev spec; %s)", spec.ModelID, checked)
	case onePoint && len(a.Missing) == 0:
		a.Verdict = VerdictUngraded
		a.Summary = "one point measured; the catalog has no target at this point to grade it (no catalog target at this point)"
	case len(a.Blockers) > 0 && !enforced:
		// Only spec tests block without an enforcing status: the API
		// the server serves is graded even when its numbers are not.
		a.Verdict = VerdictFail
		a.Summary = fmt.Sprintf("%d spec test(s) failed", len(a.Blockers))
		if len(a.Missing) > 0 {
			a.Summary += fmt.Sprintf(", and %d required check(s) were not measured", len(a.Missing))
		}
	case !enforced && len(a.Missing) > 0:
		a.Verdict = VerdictIncomplete
		a.Summary = fmt.Sprintf("nothing is certified (status %s enforces nothing), and %d check(s) did not complete", a.ModelStatus, len(a.Missing))
	case !enforced && spec == nil:
		a.Verdict = VerdictUngraded
		a.Summary = "no catalog references for this model on this device: functional checks only (" + checked + ")"
	case !enforced:
		a.Verdict = VerdictUngraded
		a.Summary = fmt.Sprintf("status %s enforces nothing: results are informational (%s)", a.ModelStatus, checked)
	case len(a.Blockers) > 0:
		a.Verdict = VerdictFail
		a.Summary = fmt.Sprintf("%d enforced check(s) failed", len(a.Blockers))
		if len(a.Missing) > 0 {
			a.Summary += fmt.Sprintf(", and %d required check(s) were not measured", len(a.Missing))
		}
	case len(a.Missing) > 0:
		a.Verdict = VerdictIncomplete
		a.Summary = fmt.Sprintf("%d required check(s) were not measured; nothing measured failed", len(a.Missing))
	default:
		a.Verdict = VerdictPass
		a.Summary = "every check the model's status enforces was measured and met"
	}
	a.Passed = a.Verdict == VerdictPass
	if enforced {
		a.EnforcementResult = fmt.Sprintf("status %s enforces the %s tier(s) of every reference target point and every eval reference", status, strings.Join(required, ", "))
		if tests != nil {
			a.EnforcementResult += ", and every required spec test"
		}
	} else {
		a.EnforcementResult = "nothing enforced (status " + a.ModelStatus + ")"
		if tests != nil && spec == nil {
			a.EnforcementResult += "; the spec tests hold the server to its own limits"
		}
	}
	return a
}

// devNoTargets reports a spec of the dev catalog with no performance
// targets: its benchmarks are reported, never graded.
func devNoTargets(spec *catalog.Spec) bool {
	return spec != nil && spec.CatalogMode() == catalog.ModeDev && len(spec.Targets) == 0
}

func knownIssue(k catalog.KnownIssue) string {
	s := k.Workflow
	if k.Task != "" {
		s += ":" + k.Task
	}
	// The catalog's reason, where it has one, says why it is waived.
	if k.Reason != "" {
		s += " (" + k.Reason + ")"
	}
	return s
}

func categoryStatus(c *Category) string {
	switch {
	case c.Failed > 0:
		return CategoryFail
	case c.Missing > 0:
		return CategoryIncomplete
	case c.Passed > 0:
		return CategoryPass
	}
	return CategoryNA
}

// ratioOf is the ratio that decided an eval's check.
func ratioOf(r *EvalRow) string {
	switch {
	case r.SubsetReference != nil && r.Score != nil && *r.SubsetReference != 0:
		return fmt.Sprintf("%.3f", *r.Score / *r.SubsetReference)
	case r.RatioToReference != nil:
		return fmt.Sprintf("%.3f", *r.RatioToReference)
	case r.RatioToPublished != nil:
		return fmt.Sprintf("%.3f", *r.RatioToPublished)
	}
	return "NA"
}

func pct(v *float64) string {
	if v == nil {
		return "NA"
	}
	return fmt.Sprintf("%.2f", *v)
}
