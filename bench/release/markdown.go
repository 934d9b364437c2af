package release

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/bench/report"
)

// simulatedBanner heads every report of a sim unit.
const simulatedBanner = "> **SIMULATED**: these results come from the `sim` runtime, which imitates the catalog's targets without hardware. They certify nothing about a device."

// Words, not symbols, carry every verdict: emoji render as empty boxes on
// servers without an emoji font.

func title(md *Metadata) string { return md.Model + " on " + md.Device }

// heading names the report after its workflow (upstream's release heading
// for release runs).
func heading(workflow string) string {
	switch workflow {
	case WorkflowBenchmarks:
		return "Tenstorrent Model Benchmark Summary"
	case WorkflowEvals:
		return "Tenstorrent Model Accuracy Summary"
	case WorkflowTests:
		return "Tenstorrent Model Spec Test Summary"
	}
	return "Tenstorrent Model Release Summary"
}

// conditionsLine says under which conditions the numbers were taken, for
// the summary (the metadata holds the full set).
func conditionsLine(md *Metadata) string {
	var parts []string
	if md.Simulated {
		p := "SIMULATED (sim runtime"
		if ts, ok := md.Conditions["time_scale"]; ok {
			p += ", time_scale " + ts
		}
		parts = append(parts, p+")")
	}
	for _, k := range []string{"runtime", "device", "chips", "catalog", "model_sha256", "engine", "server_version"} {
		if v := md.Conditions[k]; v != "" && !(k == "runtime" && md.Simulated) {
			if k == "model_sha256" && len(v) > 12 {
				v = v[:12]
			}
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// AcceptanceMarkdown renders the verdict, the categories, and what blocks,
// was not measured or was waived (also stored as
// acceptance_summary_markdown in report.json).
func AcceptanceMarkdown(r *Report) string {
	var b strings.Builder
	a := &r.Acceptance
	b.WriteString("### Acceptance Criteria\n\n")
	fmt.Fprintf(&b, "- Verdict: **%s**: %s\n", a.Verdict, a.Summary)
	if c := conditionsLine(&r.Metadata); c != "" {
		fmt.Fprintf(&b, "- Conditions: %s\n", c)
	}
	fmt.Fprintf(&b, "- Model status: %s\n", a.ModelStatus)
	fmt.Fprintf(&b, "- Enforcement: %s\n", a.EnforcementResult)
	for _, c := range a.Categories {
		if c.Status == CategoryAbsent {
			fmt.Fprintf(&b, "- %s: not run by this workflow\n", c.Name)
			continue
		}
		line := fmt.Sprintf("- %s: %s (%d/%d passed, %d failed, %d not measured, %d waived, %d NA", c.Name, c.Status, c.Passed, c.Total, c.Failed, c.Missing, c.Waived, c.NA)
		if c.Skipped > 0 {
			line += fmt.Sprintf(", %d smoke check(s) not graded", c.Skipped)
		}
		b.WriteString(line + ")\n")
	}
	for _, list := range []struct {
		title string
		items []Blocker
	}{{"Blockers (enforced checks that failed)", a.Blockers}, {"Not measured (required, so the run cannot pass)", a.Missing}, {"Waived (not counted, and why)", a.Waived}} {
		if len(list.items) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n#### %s\n\n", list.title)
		// A shared cause or message is said once, with every check it
		// stands for.
		for _, g := range GroupBlockers(list.items) {
			b.WriteString(groupMarkdown(g))
		}
	}
	return b.String()
}

// groupMarkdown is one group of blockers as a list item: a cause with its
// fix and the checks under it, or the checks that share one message.
func groupMarkdown(g Group) string {
	fix := ""
	if g.Fix != "" {
		fix = "; fix: `" + g.Fix + "`"
	}
	keys := make([]string, len(g.Items))
	for i, bl := range g.Items {
		keys[i] = "`" + bl.Key + "`"
	}
	switch {
	case g.Cause == "":
		return fmt.Sprintf("- %s: %s%s\n", strings.Join(keys, ", "), cell(g.Items[0].Message), fix)
	case len(g.Items) == 1:
		return fmt.Sprintf("- %s: %s: %s%s\n", keys[0], cell(g.Items[0].Message), cell(g.Cause), fix)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- %d checks: %s%s\n", len(g.Items), cell(g.Cause), fix)
	for i, bl := range g.Items {
		fmt.Fprintf(&b, "  - %s: %s\n", keys[i], cell(bl.Message))
	}
	return b.String()
}

// Markdown renders report.md in the layout of tt-inference-server's
// release report.
func Markdown(r *Report) []byte {
	var b strings.Builder
	md := &r.Metadata
	fmt.Fprintf(&b, "## %s: %s\n\n", heading(md.Workflow), title(md))
	if md.Simulated {
		b.WriteString(simulatedBanner + "\n\n")
	}
	if r.Interrupted {
		fmt.Fprintf(&b, "> **INTERRUPTED**: a signal stopped this run; what finished is kept below. `--resume %s` finishes it.\n\n", md.RunID)
	}
	fmt.Fprintf(&b, "### Metadata: %s\n\n```json\n", title(md))
	mj, _ := json.MarshalIndent(md, "", "  ")
	b.Write(mj)
	b.WriteString("\n```\n\n")
	b.WriteString(AcceptanceMarkdown(r))
	var sections []string
	if r.Regressions != nil {
		sections = append(sections, regressionsMarkdown(r.Regressions))
	}
	if r.Evals != nil {
		sections = append(sections, evalsMarkdown(md, r.Evals))
	}
	if r.Benchmarks != nil {
		sections = append(sections, benchMarkdown(md, r.Benchmarks))
	}
	if r.Tests != nil {
		sections = append(sections, testsMarkdown(md, r.Tests))
	}
	for _, s := range sections {
		b.WriteString("\n---\n\n")
		b.WriteString(s)
	}
	return []byte(b.String())
}

func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func num(v *float64, dec int) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', dec, 64)
}

func regressionsMarkdown(rg *Regressions) string {
	var b strings.Builder
	if rg.Against == "" {
		b.WriteString("### Regressions\n\nNo earlier run was taken under the same conditions, so nothing was compared:\n\n")
		for _, s := range rg.Skipped {
			fmt.Fprintf(&b, "- %s\n", cell(s))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "### Regressions against run %s\n\n", rg.Against)
	if len(rg.Skipped) > 0 {
		b.WriteString("Newer runs taken under other conditions were not compared:\n\n")
		for _, s := range rg.Skipped {
			fmt.Fprintf(&b, "- %s\n", cell(s))
		}
		b.WriteString("\n")
	}
	if len(rg.Items) == 0 {
		fmt.Fprintf(&b, "No regressions: %d metrics compared (thresholds: latency +%g%%, throughput -%g%%, eval score -%g stderr).\n",
			rg.Compared, rg.Thresholds.LatencyPct, rg.Thresholds.ThroughputPct, rg.Thresholds.EvalStderrs)
		return b.String()
	}
	fmt.Fprintf(&b, "%d of %d compared metrics are worse than in the earlier run (informational; not an acceptance blocker).\n\n", len(rg.Items), rg.Compared)
	b.WriteString("| Kind | Point / Task | Metric | Previous | Current | Change | Allowed |\n|---|---|---|---|---|---|---|\n")
	for _, it := range rg.Items {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.2f | %+.1f%% | %s |\n", it.Kind, it.Key, it.Metric, it.Previous, it.Current, it.ChangePct, it.Allowed)
	}
	return b.String()
}

func evalsMarkdown(md *Metadata, e *EvalSection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Accuracy Evaluations for %s\n\n", title(md))
	if e.Error != "" {
		fmt.Fprintf(&b, "The eval workflow did not finish: %s\n\n", cell(e.Error))
	}
	if len(e.Rows) > 0 {
		b.WriteString("| Task | Role | Tolerance | Published Score | GPU Reference Score | Subset Reference | Score | Stderr | Ratio to Published | Ratio to Reference | Samples | Errored | Accuracy Check |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for i := range e.Rows {
			r := &e.Rows[i]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n",
				cell(r.Task), r.Role, tolerance(r), num(r.Published, 2), num(r.GPUReference, 2), num(r.SubsetReference, 2),
				num(r.Score, 2), num(r.ScoreStderr, 2), num(r.RatioToPublished, 3), num(r.RatioToReference, 3),
				r.Samples, r.Errored, cell(evalVerdict(r)))
		}
		b.WriteString("\n")
	}
	b.WriteString("Scores are in percent. A task passes when score / GPU reference ≥ 1 − tolerance (a limit mode's subset reference first when the catalog has one, the published score when there is no GPU reference); with no reference the check is NA. Role `reference`: the catalog grades the model with the task; `smoke`: a built-in generated task that checks the plumbing and never stands in for a reference; `extra`: asked for, not referenced.\n")
	if m := mediaMarkdown(e, md.Simulated); m != "" {
		b.WriteString("Image and video tasks (load_image, load_video) are graded by their own rules (below); their score is the mean CLIP score, top-1 or mAP.\n\n")
		b.WriteString(m)
	}
	return b.String()
}

// tolerance is an eval row's tolerance, blank for a task that did not run
// (its reference was never consulted).
func tolerance(r *EvalRow) string {
	if r.NotRun != "" {
		return ""
	}
	return strconv.FormatFloat(r.Tolerance, 'f', 2, 64)
}

// evalVerdict is an eval row's check in words.
func evalVerdict(r *EvalRow) string {
	switch {
	case r.NotRun != "":
		return "NOT MEASURED: " + r.NotRun
	case r.Role == RoleSmoke && r.Errored == 0:
		return "ran (smoke check, not graded)"
	case r.Errored > 0:
		return fmt.Sprintf("INCOMPLETE: %d errored", r.Errored)
	}
	return string(r.Check)
}

// pointVerdict is a benchmark row's grade in words.
func pointVerdict(r *BenchRow) string { return r.Grade.Words(r.Error != "") }

var benchColumns = []struct {
	header string
	cell   func(r *BenchRow) string
}{
	{"ISL", func(r *BenchRow) string { return strconv.Itoa(r.ISL) }},
	{"OSL", func(r *BenchRow) string { return strconv.Itoa(r.OSL) }},
	{"Concurrency", func(r *BenchRow) string { return strconv.Itoa(r.Concurrency) }},
	{"Num Requests", func(r *BenchRow) string { return strconv.Itoa(r.Completed) }},
	{"TTFT (ms)", func(r *BenchRow) string { return num(r.TTFTms, 1) }},
	{"P50 TTFT (ms)", func(r *BenchRow) string { return num(r.P50TTFTms, 1) }},
	{"P99 TTFT (ms)", func(r *BenchRow) string { return num(r.P99TTFTms, 1) }},
	{"TPOT (ms)", func(r *BenchRow) string { return num(r.TPOTms, 1) }},
	{"E2EL (ms)", func(r *BenchRow) string { return num(r.E2ELms, 1) }},
	{"Tput User (TPS)", func(r *BenchRow) string { return num(r.TputUser, 2) }},
	{"Tput Input (TPS)", func(r *BenchRow) string { return num(r.TputInput, 1) }},
	{"Tput Output (TPS)", func(r *BenchRow) string { return num(r.TputOutput, 1) }},
	{"Tput Total (TPS)", func(r *BenchRow) string { return num(r.TputTotal, 1) }},
	{"Req Tput (RPS)", func(r *BenchRow) string { return num(r.ReqTput, 3) }},
	{"Errors", func(r *BenchRow) string {
		if r.Errors == 0 {
			return ""
		}
		return strconv.Itoa(r.Errors)
	}},
	{"Verdict", pointVerdict},
}

func benchMarkdown(md *Metadata, s *BenchSection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Benchmark Sweeps for %s\n\n", title(md))
	if md.Simulated {
		b.WriteString("**SIMULATED**: timings follow the sim runtime, not hardware.\n\n")
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "The benchmark sweep did not finish: %s\n\n", cell(s.Error))
	}
	if len(s.Rows) > 0 {
		benchColumns := columnsFor(s.Rows)
		// Empty columns are dropped, as upstream does.
		var cols []int
		for i, c := range benchColumns {
			for j := range s.Rows {
				if c.cell(&s.Rows[j]) != "" {
					cols = append(cols, i)
					break
				}
			}
		}
		b.WriteString("|")
		for _, i := range cols {
			b.WriteString(" " + benchColumns[i].header + " |")
		}
		b.WriteString("\n|")
		for range cols {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for j := range s.Rows {
			b.WriteString("|")
			for _, i := range cols {
				b.WriteString(" " + benchColumns[i].cell(&s.Rows[j]) + " |")
			}
			b.WriteString("\n")
		}
		for j := range s.Rows {
			if r := &s.Rows[j]; r.Error != "" {
				fmt.Fprintf(&b, "\nPoint ISL %d / OSL %d, concurrency %d did not run: %s\n", r.ISL, r.OSL, r.Concurrency, cell(r.Error))
			}
		}
	}
	for j := range s.Rows {
		r := &s.Rows[j]
		if len(r.Grade.Tiers) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n#### Targets — ISL %d / OSL %d, concurrency %d\n\n", r.ISL, r.OSL, r.Concurrency)
		b.WriteString(report.TargetChecks(r.Grade))
	}
	b.WriteString("\n**Notes**\n\n")
	if isMediaSection(s.Rows) {
		b.WriteString(mediaNotes)
		return b.String()
	}
	b.WriteString("- Columns without a percentile label are means; Tput User = 1000 / mean TPOT.\n")
	b.WriteString("- Verdict: a point passes when any single tier (functional, complete, target) meets all its checks, and names the strictest tier met; a failure counts only in the tiers the model status enforces. `NA` points have no target and are ungraded; `NOT MEASURED` and `INCOMPLETE` points did not run or had failed requests.\n")
	return b.String()
}
