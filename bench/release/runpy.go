package release

// A run also lays out its files as tt-inference-server's run.py does, so
// that CI written against run.py's workflow_logs reads a ttis run
// unchanged: lm-eval's files under eval_<model>_<device>/<org>__<repo>/,
// and the report as reports_output/<workflow>/data/report_data_<id>.json
// with run.py's keys (tt-inference-server.md §5; seeds 001 and 003).

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/result"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/units/verdict"
)

// EvalResultsDir is where a run's lm-eval files go inside its evals/
// folder: run.py's eval_<model>_<device>/<org>__<repo> (the seeds' layout,
// which run.py's report globs for results_*.json), named after the catalog
// model and its Hugging Face repository when the catalog knows them.
func EvalResultsDir(t *target.Target) string {
	model, repo := path.Base(t.CatalogModel), t.Model
	if t.Spec != nil {
		model, repo = t.Spec.ModelName, t.Spec.HFRepo
	}
	if model == "" || model == "." {
		model = "model"
	}
	device := t.Device
	if device == "" {
		device = "unknown"
	}
	return path.Join(results.Sanitize("eval_"+model+"_"+device), strings.ReplaceAll(results.Sanitize(repo), "/", "__"))
}

// runPyReportPaths names the files of run.py's report layout a run writes
// beside its own report.*: reports_output/<workflow>/report_<report_id>.md
// and reports_output/<workflow>/data/report_data_<report_id>.json, where CI
// aggregation (tt-inference-server's scripts/release/workflow_logs_parser.py)
// looks for them.
func runPyReportPaths(md *Metadata) (markdown, data string) {
	dir := path.Join("reports_output", results.Sanitize(md.Workflow))
	id := results.Sanitize(md.ReportID)
	return path.Join(dir, "report_"+id+".md"), path.Join(dir, "data", "report_data_"+id+".json")
}

// checkInt is run.py's ReportCheckTypes: NA 1, PASS 2, FAIL 3.
func checkInt(v verdict.Verdict) int {
	switch v {
	case verdict.Pass:
		return 2
	case verdict.Fail:
		return 3
	}
	return 1
}

// accuracyInt is an eval check as ReportCheckTypes.
func accuracyInt(c verdict.Verdict) int {
	switch c {
	case verdict.Pass:
		return 2
	case verdict.Fail:
		return 3
	}
	return 1
}

// runPyTargetChecks is run.py's target_checks of a graded point:
// {tier: {<metric>, <metric>_ratio, <metric>_check}} for ttft, tput_user
// and tput, a metric without a target only "<metric>_check": 1 (NA).
func runPyTargetChecks(g grade.Point) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, t := range g.Tiers {
		tier := map[string]any{}
		for _, c := range t.Checks {
			if c.Threshold <= 0 {
				tier[c.Metric+"_check"] = 1
				continue
			}
			tier[c.Metric] = c.Threshold
			tier[c.Metric+"_ratio"] = c.Ratio
			tier[c.Metric+"_check"] = checkInt(c.Verdict)
		}
		out[t.Name] = tier
	}
	return out
}

// runPyPoint is one benchmark point with the keys of run.py's vLLM parser
// (llm_module/parsers/vllm.py) and of its seed-era summary
// (benchmarking/summary_report.py: max_con, num_prompts, filename), plus
// its grading.
func runPyPoint(md *Metadata, r *BenchRow) map[string]any {
	rec := map[string]any{
		"tool": "ttis", "backend": "openai", "model": md.Model, "model_id": md.ServedModel, "device": md.Device,
		"isl": r.ISL, "osl": r.OSL, "max_con": r.Concurrency, "concurrency": r.Concurrency, "num_prompts": r.NumPrompts,
		"num_requests": r.Completed, "error_request_count": r.Errors,
		"input_sequence_length": r.MeanInputLen, "output_sequence_length": r.MeanOutputLen,
		"mean_ttft_ms": r.TTFTms, "p50_ttft": r.P50TTFTms, "p99_ttft": r.P99TTFTms, "mean_tpot_ms": r.TPOTms,
		"mean_e2el_ms": r.E2ELms, "tput_user": r.TputUser, "mean_tps": r.TputUser,
		"tps_input_throughput": r.TputInput, "tps_output_throughput": r.TputOutput, "tps_total_throughput": r.TputTotal,
		"request_throughput": r.ReqTput, "task_type": "text", "filename": r.ResultFile,
	}
	if fi, err := result.ParseFileName(r.ResultFile); err == nil {
		rec["timestamp"] = fi.Time.Format("2006-01-02_15-04-05")
	}
	if r.Media != nil {
		rec["task_type"], rec["media"] = "media", r.Media
	}
	if r.Error != "" {
		rec["error"] = r.Error
	}
	switch r.Grade.Status {
	case grade.StatusNA:
		// Ungraded: run.py marks the block NA so it cannot pass a run.
		rec["status"] = "na"
	case grade.StatusError:
		rec["status"] = "error"
	}
	rec["target_check"] = checkInt(r.Grade.TargetCheck)
	if len(r.Grade.Tiers) > 0 {
		rec["target_checks"] = runPyTargetChecks(r.Grade)
	}
	return rec
}

// runPyEval is one eval task as run.py's eval block; a reference task that
// was not measured has no accuracy_check (run.py's CI parser then counts
// the evals incomplete) and status "error" with why.
func runPyEval(md *Metadata, r *EvalRow) map[string]any {
	rec := map[string]any{
		"model": md.Model, "device": md.Device, "task_name": r.Task, "tolerance": r.Tolerance,
		"published_score": r.Published, "published_score_ref": nil, "gpu_reference_score": r.GPUReference,
		"gpu_reference_score_ref": nil, "score": r.Score, "ratio_to_published": r.RatioToPublished,
		"ratio_to_reference": r.RatioToReference, "accuracy_check": accuracyInt(r.Check),
	}
	if r.NotRun != "" {
		rec["accuracy_check"] = nil
		rec["status"] = "error"
		rec["error"] = "not measured: " + r.NotRun
		if r.Role != RoleReference {
			rec["status"] = "na"
		}
	}
	return rec
}

// runPyDoc is report_data_<report_id>.json: run.py's report schema
// (metadata, one section per benchmark point and per eval task, the
// acceptance keys), plus the top-level lists of the release report it
// replaced (benchmarks, benchmarks_summary, evals), which run.py's CI
// aggregation still reads. Metadata keeps ttis's fields and adds run.py's
// server_mode ("API": ttis measures a server it did not start).
type runPyDoc struct {
	Metadata                   runPyMetadata       `json:"metadata"`
	Sections                   []Section           `json:"sections"`
	AcceptanceCriteria         bool                `json:"acceptance_criteria"`
	AcceptanceBlockers         map[string]string   `json:"acceptance_blockers"`
	AcceptanceCriteriaMetadata runPyAcceptanceMeta `json:"acceptance_criteria_metadata"`
	AcceptanceSummaryMarkdown  string              `json:"acceptance_summary_markdown"`
	Benchmarks                 []map[string]any    `json:"benchmarks"`
	BenchmarksSummary          []map[string]any    `json:"benchmarks_summary"`
	Evals                      []map[string]any    `json:"evals"`
	Verdict                    string              `json:"verdict"`
}

// runPyAcceptanceMeta is run.py's acceptance_criteria_metadata: its
// categories carry blockers and waivers as {key: message}.
type runPyAcceptanceMeta struct {
	EnforcementResult string          `json:"enforcement_result"`
	ModelStatus       string          `json:"model_status"`
	Categories        []runPyCategory `json:"categories"`
}

type runPyCategory struct {
	Name        string            `json:"name"`
	Status      string            `json:"status"`
	Total       int               `json:"total"`
	Passed      int               `json:"passed"`
	Failed      int               `json:"failed"`
	NotMeasured int               `json:"not_measured"`
	NA          int               `json:"na"`
	Skipped     int               `json:"skipped"`
	Blockers    map[string]string `json:"blockers"`
	Waived      map[string]string `json:"waived"`
}

// runPyCategories converts the acceptance categories to run.py's shape.
func runPyCategories(a *Acceptance) []runPyCategory {
	msgs := map[string]string{}
	for _, b := range append(append([]Blocker(nil), a.Blockers...), a.Missing...) {
		msgs[b.Key] = b.Message
	}
	out := []runPyCategory{}
	for _, c := range a.Categories {
		rc := runPyCategory{Name: c.Name, Status: c.Status, Total: c.Total, Passed: c.Passed, Failed: c.Failed,
			NotMeasured: c.Missing, NA: c.NA, Skipped: c.Skipped, Blockers: map[string]string{}, Waived: map[string]string{}}
		for _, k := range c.Blockers {
			rc.Blockers[k] = msgs[k]
		}
		prefix := strings.ToLower(c.Name) + ":"
		for _, w := range a.Waived {
			if strings.HasPrefix(w.Key, prefix) {
				rc.Waived[w.Key] = w.Message
			}
		}
		out = append(out, rc)
	}
	return out
}

type runPyMetadata struct {
	Metadata
	ServerMode string `json:"server_mode"`
}

// RunPyReportData renders report_data_<report_id>.json.
func RunPyReportData(r *Report) ([]byte, error) {
	md := &r.Metadata
	doc := runPyDoc{Metadata: runPyMetadata{Metadata: *md, ServerMode: "API"}, Sections: []Section{},
		AcceptanceCriteria: r.Acceptance.Passed, AcceptanceBlockers: map[string]string{},
		AcceptanceCriteriaMetadata: runPyAcceptanceMeta{EnforcementResult: r.Acceptance.EnforcementResult,
			ModelStatus: r.Acceptance.ModelStatus, Categories: runPyCategories(&r.Acceptance)},
		AcceptanceSummaryMarkdown: AcceptanceMarkdown(r), Benchmarks: []map[string]any{}, BenchmarksSummary: []map[string]any{},
		Evals: []map[string]any{}, Verdict: r.Acceptance.Verdict}
	for _, b := range append(append([]Blocker(nil), r.Acceptance.Blockers...), r.Acceptance.Missing...) {
		doc.AcceptanceBlockers[b.Key] = b.Message
	}
	id := BlockID(md.Model, md.Device)
	if e := r.Evals; e != nil {
		for i := range e.Rows {
			row := &e.Rows[i]
			if row.Role == RoleSmoke {
				continue // ttis's plumbing checks: not evals run.py knows
			}
			rec := runPyEval(md, row)
			doc.Evals = append(doc.Evals, rec)
			doc.Sections = append(doc.Sections, Section{Kind: WorkflowEvals, Title: "Accuracy Evaluations: " + row.Task,
				TaskType: "text", ID: id, Data: rec})
		}
	}
	if b := r.Benchmarks; b != nil {
		for i := range b.Rows {
			row := &b.Rows[i]
			rec := runPyPoint(md, row)
			doc.Benchmarks = append(doc.Benchmarks, rec)
			if len(row.Grade.Tiers) > 0 {
				doc.BenchmarksSummary = append(doc.BenchmarksSummary, rec)
			}
			// As run.py titles them: a graded point is its own section,
			// the ungraded ones share the sweep's title.
			title := "Benchmark Sweeps"
			if len(row.Grade.Tiers) > 0 {
				title = fmt.Sprintf("Benchmark Targets — ISL %d / OSL %d, concurrency %d", row.ISL, row.OSL, row.Concurrency)
			}
			doc.Sections = append(doc.Sections, Section{Kind: WorkflowBenchmarks, Title: title, TaskType: "text", ID: id, Data: rec})
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render run.py report data: %w", err)
	}
	return append(out, '\n'), nil
}

// writeRunPyReports writes the report in run.py's layout.
func writeRunPyReports(run *runs.Run, r *Report) error {
	data, err := RunPyReportData(r)
	if err != nil {
		return err
	}
	mdPath, dataPath := runPyReportPaths(&r.Metadata)
	if err := run.WriteFile(mdPath, Markdown(r)); err != nil {
		return err
	}
	return run.WriteFile(dataPath, data)
}
