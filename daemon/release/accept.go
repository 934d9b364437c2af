package release

import (
	"fmt"
	"strings"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Category statuses.
const (
	CategoryPass = "PASS"
	CategoryFail = "FAIL"
	// CategoryNA: the category ran but nothing in it was graded.
	CategoryNA = "NA"
	// CategoryAbsent: the workflow did not run this category.
	CategoryAbsent = "ABSENT"
)

// Category is one acceptance category (Benchmarks, Evals).
type Category struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Total    int      `json:"total"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	NA       int      `json:"na"`
	Skipped  int      `json:"skipped"`
	Waived   int      `json:"waived"`
	Blockers []string `json:"blockers"`
}

// Blocker is one reason the run is not accepted.
type Blocker struct {
	Key     string
	Message string
}

// Acceptance is the run's verdict.
type Acceptance struct {
	Passed      bool
	ModelStatus string
	// EnforcementResult says what the model's status enforces and
	// whether it held.
	EnforcementResult string
	Categories        []Category
	Blockers          []Blocker
}

// enforcing reports whether a status enforces anything: EXPERIMENTAL and
// unknown statuses (a model outside the catalog) enforce nothing.
func enforcing(status string) bool { return len(catalog.RequiredTiers(status)) > 0 }

// Accept derives the verdict of a run from its sections and the model's
// catalog status:
//   - A task that could not run (the sweep or the eval workflow failed)
//     and a benchmark point or eval task with failed requests are always
//     blockers: the measurement is incomplete.
//   - A benchmark point whose enforced tier failed is a blocker (grading
//     already applied the status's tiers); failures in other tiers are
//     waived.
//   - An eval task below its reference is a blocker unless the model is
//     EXPERIMENTAL (or not in the catalog), where it is waived.
//   - A status that enforces a tier needs at least one benchmark point
//     graded PASS; a sweep with no graded point is a blocker.
//
// The run passes when there is no blocker.
func Accept(status string, bench *BenchSection, evals *EvalSection) Acceptance {
	a := Acceptance{ModelStatus: catalog.StatusDisplay(status)}
	if status == "" {
		a.ModelStatus = "unknown (not in the catalog)"
	}
	add := func(c *Category, key, msg string) {
		c.Blockers = append(c.Blockers, key)
		a.Blockers = append(a.Blockers, Blocker{Key: key, Message: msg})
	}
	required := catalog.RequiredTiers(status)

	bc := Category{Name: "Benchmarks", Blockers: []string{}}
	if bench == nil {
		bc.Status = CategoryAbsent
	} else {
		if bench.Error != "" {
			add(&bc, "task:benchmarks", bench.Error)
		}
		for i := range bench.Rows {
			r := &bench.Rows[i]
			bc.Total++
			switch r.Grade.Status {
			case grade.StatusPass:
				bc.Passed++
			case grade.StatusFail:
				bc.Failed++
				add(&bc, "benchmarks:"+r.Key(), strings.Join(r.Grade.Blockers, "; "))
			case grade.StatusError:
				bc.Failed++
				msg := r.Error
				if msg == "" {
					msg = strings.Join(r.Grade.Blockers, "; ")
				}
				add(&bc, "benchmarks:"+r.Key(), "incomplete: "+msg)
			case grade.StatusWaived:
				bc.Waived++
			default:
				bc.NA++
			}
		}
		if len(required) > 0 && bench.Error == "" && bc.Passed == 0 && bc.Failed == 0 {
			add(&bc, "benchmarks:targets", fmt.Sprintf("no sweep point was graded against targets, but status %s enforces the %s tier", status, strings.Join(required, ", ")))
		}
		bc.Status = categoryStatus(&bc)
	}

	ec := Category{Name: "Evals", Blockers: []string{}}
	if evals == nil {
		ec.Status = CategoryAbsent
	} else {
		if evals.Error != "" {
			add(&ec, "task:evals", evals.Error)
		}
		for i := range evals.Rows {
			r := &evals.Rows[i]
			ec.Total++
			switch {
			case r.Errored > 0:
				ec.Failed++
				add(&ec, "evals:"+r.Task, fmt.Sprintf("incomplete: %d of %d samples errored", r.Errored, r.Samples))
			case r.Check == results.Pass:
				ec.Passed++
			case r.Check == results.Fail && enforcing(status):
				ec.Failed++
				add(&ec, "evals:"+r.Task, fmt.Sprintf("score %s below %s (ratio %s, tolerance %.0f%%)", pct(r.Score), r.Basis, ratioOf(r), 100*r.Tolerance))
			case r.Check == results.Fail:
				ec.Waived++
			default:
				ec.NA++
			}
		}
		ec.Status = categoryStatus(&ec)
	}
	a.Categories = []Category{bc, ec}
	a.Passed = len(a.Blockers) == 0
	switch {
	case !enforcing(status) && a.Passed:
		a.EnforcementResult = "nothing enforced (status " + a.ModelStatus + "); no task failed"
	case !enforcing(status):
		a.EnforcementResult = "nothing enforced (status " + a.ModelStatus + "), but a task failed or was incomplete"
	case a.Passed:
		a.EnforcementResult = fmt.Sprintf("status %s enforces the %s tier(s) and eval references: no blocker", status, strings.Join(required, ", "))
	default:
		a.EnforcementResult = fmt.Sprintf("status %s enforces the %s tier(s) and eval references: %d blocker(s)", status, strings.Join(required, ", "), len(a.Blockers))
	}
	return a
}

func categoryStatus(c *Category) string {
	switch {
	case len(c.Blockers) > 0:
		return CategoryFail
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
