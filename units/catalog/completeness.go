package catalog

import "strings"

// Completeness says whether a release of a spec can end complete (PASS or
// FAIL on what it measured, never INCOMPLETE by construction): every
// accuracy reference of the spec's model must be something ttis can
// measure, or be waived by one of the spec's known issues, which a
// release reports as waived rather than missing.
type Completeness struct {
	// References counts the model's reference tasks.
	References int  `json:"references"`
	Complete   bool `json:"complete"`
	// Unmeasurable lists the references that cannot be measured, with why.
	Unmeasurable []Unmeasurable `json:"unmeasurable,omitempty"`
}

// Unmeasurable is a reference task that cannot be measured.
type Unmeasurable struct {
	Task string `json:"task"`
	Why  string `json:"why"`
	// Waived is set when a known issue of the spec waives the task's
	// evals, so that it does not keep a release from completing.
	Waived bool `json:"waived,omitempty"`
}

// ReleaseCompleteness applies why (the reason a task cannot be measured
// for a model, "" when it can; the eval registry knows, this package does
// not) to every reference task of s's model.
func ReleaseCompleteness(s *Spec, why func(task, model string) string) Completeness {
	c := Completeness{Complete: true}
	seen := map[string]bool{}
	for _, r := range ModelEvalRefs(s.ModelName) {
		if seen[r.Task] {
			continue
		}
		seen[r.Task] = true
		c.References++
		reason := why(r.Task, s.ModelName)
		if reason == "" {
			continue
		}
		u := Unmeasurable{Task: r.Task, Why: reason}
		for _, k := range s.KnownIssues {
			if strings.EqualFold(k.Workflow, "EVALS") && (k.Task == "" || k.Task == r.Task) {
				u.Waived = true
			}
		}
		if !u.Waived {
			c.Complete = false
		}
		c.Unmeasurable = append(c.Unmeasurable, u)
	}
	return c
}
