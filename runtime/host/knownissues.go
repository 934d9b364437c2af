package host

import "fmt"

// checkKnownIssues turns the catalog's known issues of the unit's spec
// (tt-inference-server's acceptance waivers) into warnings, so that the
// operator learns before a start what a release of the unit will waive
// rather than from its report. They never block a start: the server may
// run fine, only a graded check is expected to fail.
func checkKnownIssues(need Need) []Check {
	if need.Spec == nil {
		return nil
	}
	var out []Check
	for _, k := range need.Spec.KnownIssues {
		reason := k.Reason
		if reason == "" {
			reason = "the catalog records no reason"
		}
		c := Check{Name: "known-issue", Status: Warn,
			Detail: fmt.Sprintf("%s is a known issue of %s (%s): release verdicts waive its failures and say so", k.Scope(), need.Spec.ModelID, reason)}
		if link := k.Link(); link != "" {
			c.Fix = "nothing to fix on this host; the issue is tracked at " + link
		}
		out = append(out, c)
	}
	return out
}
