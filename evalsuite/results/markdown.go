package results

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}

func ratio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *v)
}

// Markdown renders the summary: run facts, one row per (task, metric,
// filter) with its standard error, the errored-sample counts, and the
// accuracy checks against the catalog's references.
func Markdown(r Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Accuracy evaluation: %s\n\n", r.Model)
	fmt.Fprintf(&b, "- Server: %s (%s API)\n", r.BaseURL, r.API)
	fmt.Fprintf(&b, "- Started: %s, took %.1f s\n", r.Start.UTC().Format("2006-01-02 15:04:05 UTC"), r.End.Sub(r.Start).Seconds())
	limit := r.Limit
	if r.LimitMode != "" {
		limit += " (mode " + r.LimitMode + ")"
	}
	fmt.Fprintf(&b, "- Limit: %s; concurrency %d; seed %d\n\n", limit, r.Concurrency, r.Seed)
	b.WriteString("| Task | Metric | Filter | Value | Stderr | N | Errored |\n|---|---|---|---|---|---|---|\n")
	for _, t := range r.Tasks {
		errored := fmt.Sprintf("%d", t.Errors.Errored)
		if t.Errors.Errored > 0 {
			errored += " (counted as " + string(t.Errors.Policy) + ")"
		}
		for _, a := range t.Aggregates {
			v, se := "-", "N/A"
			if !math.IsNaN(a.Value) {
				v = fmt.Sprintf("%.4f", a.Value)
			}
			if !math.IsNaN(a.Stderr) {
				se = fmt.Sprintf("%.4f", a.Stderr)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s |\n", t.Task.Name, a.Metric, a.Filter, v, se, a.N, errored)
		}
		for _, s := range t.Subtasks {
			for _, a := range s.Aggregates {
				fmt.Fprintf(&b, "| - %s | %s | %s | %.4f | %s | %d | |\n", s.Name, a.Metric, a.Filter, a.Value, fmtSE(a.Stderr), a.N)
			}
		}
	}
	b.WriteString("\n### Accuracy checks\n\n| Task | Score | Published | GPU Reference | Tolerance | Ratio to Published | Ratio to Reference | Check | Basis |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range r.Grades {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %s | %s | %s | %s |\n", g.Task, pct(g.Score), pct(g.Published), pct(g.GPUReference), g.Tolerance, ratio(g.RatioToPublished), ratio(g.RatioToReference), g.Check, g.Basis)
	}
	b.WriteString("\nScores are percentages of the reference's score keys. PASS means score / reference ≥ 1 − tolerance, using the GPU reference when the catalog has one and the published score otherwise; NA means the catalog has no reference for this model and task.\n")
	for _, g := range r.Grades {
		if g.Media == nil {
			continue
		}
		// Image and video figures hold only under their weights and files.
		fmt.Fprintf(&b, "\n%s (%s, %d of %d measured) was graded by its own rule (the score is its mean CLIP score, top-1 or mAP); its conditions:\n\n", g.Task, g.Media.Variant, g.Media.Measured, g.Media.Asked)
		keys := make([]string, 0, len(g.Media.Conditions))
		for k := range g.Media.Conditions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, ok := g.Media.Conditions[k].(string)
			if !ok {
				js, _ := json.Marshal(g.Media.Conditions[k])
				v = string(js)
			}
			fmt.Fprintf(&b, "- %s: %s\n", k, v)
		}
		if g.Media.NotMeasured != "" {
			fmt.Fprintf(&b, "- not measured: %s\n", g.Media.NotMeasured)
		}
	}
	var errLines []string
	for _, t := range r.Tasks {
		if t.Errors.Errored == 0 {
			continue
		}
		kinds := make([]string, 0, len(t.Errors.ByKind))
		for k, n := range t.Errors.ByKind {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
		}
		sort.Strings(kinds)
		errLines = append(errLines, fmt.Sprintf("- %s: %d of %d samples errored (%s), counted as %s", t.Task.Name, t.Errors.Errored, t.NEffective, strings.Join(kinds, ", "), t.Errors.Policy))
		for _, e := range t.Errors.Examples {
			errLines = append(errLines, "  - "+e)
		}
	}
	if len(errLines) > 0 {
		b.WriteString("\n### Errored samples\n\n" + strings.Join(errLines, "\n") + "\n")
	}
	return b.String()
}

func fmtSE(v float64) string {
	if math.IsNaN(v) {
		return "N/A"
	}
	return fmt.Sprintf("%.4f", v)
}
