// Package release runs ttis's workflows against one server — benchmarks
// (a sweep or one point), evals, spec tests, or a release (benchmarks,
// evals, then spec tests) —
// into one run folder of the results store (bench/runs), for ttisctl and
// ttisd's schedules alike, and renders the run's report: report.md,
// report.json (tt-inference-server's report_data shape: metadata, sections,
// acceptance_criteria, acceptance_blockers, acceptance_criteria_metadata,
// acceptance_summary_markdown) and a self-contained report.html with
// charts. The verdict follows the model's catalog status and claims only
// what was measured; metrics are compared with the unit's previous
// complete run taken under the same conditions.
package release

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/media"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// Workflows this package runs.
const (
	WorkflowBenchmarks = "benchmarks"
	WorkflowEvals      = "evals"
	WorkflowRelease    = "release"
)

// Report file names inside a run folder.
const (
	ReportMarkdown = "report.md"
	ReportJSON     = "report.json"
	ReportHTML     = "report.html"
)

// MaxReportBytes bounds what is read back of a run's reports (report.md,
// report.json, report.html) and of a sweep's summary: ours hold tens of
// kilobytes, and a bigger file in the store is refused with the reason
// rather than read (see bench/runs).
const MaxReportBytes = 16 << 20

// Metadata describes the run a report covers.
type Metadata struct {
	ReportID    string `json:"report_id"`
	RunID       string `json:"run_id"`
	Unit        string `json:"unit"`
	Model       string `json:"model_name"`
	ModelRepo   string `json:"model_repo,omitempty"`
	ModelID     string `json:"model_id,omitempty"`
	ServedModel string `json:"served_model,omitempty"`
	Device      string `json:"device"`
	Runtime     string `json:"runtime,omitempty"`
	// Simulated is true for a sim unit: the figures are not hardware's.
	Simulated   bool   `json:"simulated"`
	ModelStatus string `json:"model_status,omitempty"`
	Workflow    string `json:"workflow"`
	Limit       string `json:"limit"`
	GeneratedAt string `json:"generated_at"`
	BaseURL     string `json:"base_url,omitempty"`
	// Catalog pins of the (model, device) entry.
	InferenceEngine string `json:"inference_engine,omitempty"`
	ModelImpl       string `json:"model_impl,omitempty"`
	CatalogVersion  string `json:"catalog_version,omitempty"`
	TTMetalCommit   string `json:"tt_metal_commit,omitempty"`
	VllmCommit      string `json:"vllm_commit,omitempty"`
	DockerImage     string `json:"docker_image,omitempty"`
	TargetsSource   string `json:"targets_source,omitempty"`
	EvalTasks       string `json:"eval_tasks,omitempty"`
	EvalSettings    string `json:"eval_settings,omitempty"`
	TTISVersion     string `json:"ttis_version,omitempty"`
	// Conditions is what shaped the numbers (bench/target): runtime,
	// simulated, time scale, device, chips, model file hash, versions.
	Conditions map[string]string `json:"conditions,omitempty"`
}

// BenchRow is one benchmark sweep point in the report (vLLM/upstream key
// names). Metrics are nil when not measured.
type BenchRow struct {
	ISL           int         `json:"isl"`
	OSL           int         `json:"osl"`
	Concurrency   int         `json:"concurrency"`
	NumPrompts    int         `json:"num_prompts"`
	Source        string      `json:"source,omitempty"`
	Completed     int         `json:"num_requests"`
	Errors        int         `json:"error_request_count"`
	MeanInputLen  *float64    `json:"input_sequence_length"`
	MeanOutputLen *float64    `json:"output_sequence_length"`
	TTFTms        *float64    `json:"mean_ttft_ms"`
	P50TTFTms     *float64    `json:"p50_ttft_ms"`
	P99TTFTms     *float64    `json:"p99_ttft_ms"`
	TPOTms        *float64    `json:"mean_tpot_ms"`
	E2ELms        *float64    `json:"mean_e2el_ms"`
	TputUser      *float64    `json:"tput_user"`
	TputInput     *float64    `json:"tps_input_throughput"`
	TputOutput    *float64    `json:"tps_output_throughput"`
	TputTotal     *float64    `json:"tps_total_throughput"`
	ReqTput       *float64    `json:"request_throughput"`
	TargetTTFTms  *float64    `json:"target_ttft_ms,omitempty"`
	TargetUser    *float64    `json:"target_tput_user,omitempty"`
	TargetTput    *float64    `json:"target_tput,omitempty"`
	ResultFile    string      `json:"result_file,omitempty"`
	Error         string      `json:"error,omitempty"`
	Grade         grade.Point `json:"target_checks"`
	// Media holds a media point's own measurements (media.go).
	Media *media.Point `json:"media,omitempty"`
}

// Key names the point in blockers and regressions.
func (r *BenchRow) Key() string {
	return fmt.Sprintf("isl-%d_osl-%d_c-%d", r.ISL, r.OSL, r.Concurrency)
}

func opt(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// BenchRowsOf converts bench's graded points into report rows.
func BenchRowsOf(pts []report.Point) []BenchRow {
	out := make([]BenchRow, 0, len(pts))
	for _, p := range pts {
		out = append(out, BenchRow{
			ISL: p.ISL, OSL: p.OSL, Concurrency: p.Concurrency, NumPrompts: p.NumPrompts, Source: p.Source,
			Completed: p.Completed, Errors: p.Failed,
			MeanInputLen: opt(p.MeanInputLen), MeanOutputLen: opt(p.MeanOutputLen),
			TTFTms: opt(p.TTFTms), P50TTFTms: opt(p.P50TTFTms), P99TTFTms: opt(p.P99TTFTms),
			TPOTms: opt(p.TPOTms), E2ELms: opt(p.E2ELms), TputUser: opt(p.TputUser),
			TputInput: opt(p.TputInput), TputOutput: opt(p.TputOutput), TputTotal: opt(p.TputTotal), ReqTput: opt(p.ReqTput),
			ResultFile: p.ResultFile, Error: p.Error, Grade: p.Grade,
		})
		row := &out[len(out)-1]
		for _, t := range p.Grade.Tiers {
			if t.Name != catalog.TierTarget {
				continue
			}
			for _, c := range t.Checks {
				if c.Threshold <= 0 {
					continue
				}
				v := c.Threshold
				switch c.Metric {
				case "ttft":
					row.TargetTTFTms = &v
				case "tput_user":
					row.TargetUser = &v
				case "tput":
					row.TargetTput = &v
				}
			}
		}
	}
	return out
}

// EvalRow is one eval task in the report: upstream's eval block fields
// plus the score's standard error and sample counts.
type EvalRow struct {
	Task string `json:"task_name"`
	// Role is reference (the catalog grades the model with it), smoke (a
	// built-in plumbing check) or extra (asked for, not referenced).
	Role string `json:"role"`
	// NotRun says why a task was not measured: its own part, when the
	// reason has one (the data it lacks), with the cause it may share with
	// other tasks in NotRunCause and the command that fixes it in Fix.
	NotRun           string          `json:"not_run,omitempty"`
	NotRunCause      string          `json:"not_run_cause,omitempty"`
	Fix              string          `json:"fix,omitempty"`
	Tolerance        float64         `json:"tolerance"`
	Published        *float64        `json:"published_score"`
	GPUReference     *float64        `json:"gpu_reference_score"`
	SubsetReference  *float64        `json:"subset_reference_score,omitempty"`
	Score            *float64        `json:"score"`
	ScoreStderr      *float64        `json:"score_stderr,omitempty"`
	RatioToPublished *float64        `json:"ratio_to_published"`
	RatioToReference *float64        `json:"ratio_to_reference"`
	Check            verdict.Verdict `json:"accuracy_check"`
	Basis            string          `json:"basis,omitempty"`
	Samples          int             `json:"n_samples"`
	Errored          int             `json:"errored_samples"`
	// Media holds an image or video task's figures and conditions.
	Media *results.MediaFigures `json:"media,omitempty"`
}

// EvalRowsOf converts an eval run's grades into report rows, taking the
// score's standard error (in percent) from the task's aggregates.
func EvalRowsOf(run *results.Run) []EvalRow {
	var out []EvalRow
	for i, g := range run.Grades {
		row := EvalRow{
			Task: g.Task, Tolerance: g.Tolerance, Published: g.Published, GPUReference: g.GPUReference,
			SubsetReference: g.SubsetReference, Score: g.Score, RatioToPublished: g.RatioToPublished,
			RatioToReference: g.RatioToReference, Check: g.Check, Basis: g.Basis, Media: g.Media,
		}
		if i < len(run.Tasks) && run.Tasks[i] != nil {
			t := run.Tasks[i]
			row.Samples, row.Errored = t.NEffective, t.Errors.Errored
			var se float64
			var n int
			for _, a := range t.Aggregates {
				for _, k := range g.ScoreKeys {
					if a.Key() == k && !math.IsNaN(a.Stderr) {
						se += a.Stderr * a.Stderr
						n++
					}
				}
			}
			if n > 0 {
				// The mean of n keys has stderr sqrt(Σse²)/n (independence
				// assumed); in percent like the score.
				v := 100 * math.Sqrt(se) / float64(n)
				row.ScoreStderr = &v
			}
		}
		out = append(out, row)
	}
	return out
}

// Section is one report block, upstream's Block shape.
type Section struct {
	Kind     string         `json:"kind"`
	Title    string         `json:"title"`
	TaskType string         `json:"task_type,omitempty"`
	ID       string         `json:"id"`
	Targets  map[string]any `json:"targets,omitempty"`
	Data     any            `json:"data"`
	// Error says why the section's workflow step did not finish.
	Error string `json:"error,omitempty"`
}

// Report is a rendered run.
type Report struct {
	Metadata Metadata
	// Benchmarks, Evals and Tests are nil when the workflow did not run
	// them.
	Benchmarks *BenchSection
	Evals      *EvalSection
	Tests      *TestSection
	Acceptance Acceptance
	// Regressions compares with the previous complete run (nil: none).
	Regressions *Regressions
	// Interrupted is set when a signal stopped the run: the report is
	// partial.
	Interrupted bool
}

// BenchSection is the benchmark part of a run.
type BenchSection struct {
	// Point is set for a one-point run (ttisctl bench without --limit):
	// no sweep was asked for, so no reference target point is required.
	Point bool `json:"-"`
	Rows  []BenchRow
	// TierFactors are the tiers' fractions of the theoretical target.
	TierFactors map[string]float64
	// Error is set when the sweep could not run (a task failure).
	Error string
}

// EvalSection is the eval part of a run.
type EvalSection struct {
	Rows  []EvalRow
	Error string
}

// BlockID is upstream's block id "<model>_<device>" with '/' as "__".
func BlockID(model, device string) string {
	return strings.ReplaceAll(model+"_"+device, "/", "__")
}

// document is report.json.
type document struct {
	Metadata Metadata  `json:"metadata"`
	Sections []Section `json:"sections"`
	// Verdict is PASS, FAIL, INCOMPLETE or UNGRADED; AcceptanceCriteria
	// (upstream's key) is true for PASS alone.
	Verdict            string `json:"verdict"`
	VerdictSummary     string `json:"verdict_summary"`
	Interrupted        bool   `json:"interrupted,omitempty"`
	AcceptanceCriteria bool   `json:"acceptance_criteria"`
	// AcceptanceBlockers holds everything that keeps the run from
	// passing: failed enforced checks and required checks not measured.
	AcceptanceBlockers         map[string]string `json:"acceptance_blockers"`
	NotMeasured                []Blocker         `json:"not_measured"`
	Waived                     []Blocker         `json:"waived"`
	AcceptanceCriteriaMetadata acceptanceMeta    `json:"acceptance_criteria_metadata"`
	AcceptanceSummaryMarkdown  string            `json:"acceptance_summary_markdown"`
	Regressions                *Regressions      `json:"regressions,omitempty"`
}

type acceptanceMeta struct {
	EnforcementResult string     `json:"enforcement_result"`
	ModelStatus       string     `json:"model_status"`
	Categories        []Category `json:"categories"`
}

// JSON renders report.json.
func JSON(r *Report) ([]byte, error) {
	doc := document{
		Metadata: r.Metadata, Sections: []Section{}, Verdict: r.Acceptance.Verdict, VerdictSummary: r.Acceptance.Summary, Interrupted: r.Interrupted,
		AcceptanceCriteria: r.Acceptance.Passed, AcceptanceBlockers: map[string]string{},
		NotMeasured: append([]Blocker{}, r.Acceptance.Missing...), Waived: append([]Blocker{}, r.Acceptance.Waived...),
		AcceptanceCriteriaMetadata: acceptanceMeta{
			EnforcementResult: r.Acceptance.EnforcementResult, ModelStatus: r.Acceptance.ModelStatus,
			Categories: r.Acceptance.Categories,
		},
		AcceptanceSummaryMarkdown: AcceptanceMarkdown(r),
		Regressions:               r.Regressions,
	}
	for _, b := range append(slices.Clone(r.Acceptance.Blockers), r.Acceptance.Missing...) {
		doc.AcceptanceBlockers[b.Key] = b.Text()
	}
	id := BlockID(r.Metadata.Model, r.Metadata.Device)
	if e := r.Evals; e != nil {
		rows := e.Rows
		if rows == nil {
			rows = []EvalRow{}
		}
		doc.Sections = append(doc.Sections, Section{Kind: WorkflowEvals, Title: "Accuracy Evaluations", TaskType: "text", ID: id, Data: rows, Error: e.Error})
	}
	if b := r.Benchmarks; b != nil {
		rows := b.Rows
		if rows == nil {
			rows = []BenchRow{}
		}
		var targets map[string]any
		if len(b.TierFactors) > 0 {
			targets = map[string]any{"tier_factors": b.TierFactors, "source": r.Metadata.TargetsSource}
		}
		doc.Sections = append(doc.Sections, Section{Kind: WorkflowBenchmarks, Title: "Benchmark Sweeps", TaskType: "text", ID: id, Targets: targets, Data: rows, Error: b.Error})
	}
	if ts := r.Tests; ts != nil {
		rows := ts.Rows
		if rows == nil {
			rows = []spectest.Result{}
		}
		doc.Sections = append(doc.Sections, Section{Kind: SpecTestsKind, Title: "Spec Tests", TaskType: ts.Class, ID: id, Data: rows, Error: ts.Error})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", ReportJSON, err)
	}
	return append(out, '\n'), nil
}

// ParseJSON reads a report.json written by JSON (for regressions and
// `ttisctl report`).
func ParseJSON(b []byte) (*Report, error) {
	var raw struct {
		Metadata Metadata `json:"metadata"`
		Sections []struct {
			Kind     string          `json:"kind"`
			TaskType string          `json:"task_type"`
			Targets  map[string]any  `json:"targets"`
			Data     json.RawMessage `json:"data"`
			Error    string          `json:"error"`
		} `json:"sections"`
		Verdict            string            `json:"verdict"`
		VerdictSummary     string            `json:"verdict_summary"`
		Interrupted        bool              `json:"interrupted"`
		AcceptanceCriteria bool              `json:"acceptance_criteria"`
		AcceptanceBlockers map[string]string `json:"acceptance_blockers"`
		NotMeasured        []Blocker         `json:"not_measured"`
		Waived             []Blocker         `json:"waived"`
		Meta               acceptanceMeta    `json:"acceptance_criteria_metadata"`
		Regressions        *Regressions      `json:"regressions"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("read %s: %w", ReportJSON, err)
	}
	r := &Report{Metadata: raw.Metadata, Regressions: raw.Regressions, Interrupted: raw.Interrupted}
	r.Acceptance = Acceptance{Verdict: raw.Verdict, Summary: raw.VerdictSummary, Passed: raw.AcceptanceCriteria,
		ModelStatus: raw.Meta.ModelStatus, EnforcementResult: raw.Meta.EnforcementResult, Categories: raw.Meta.Categories,
		Missing: raw.NotMeasured, Waived: raw.Waived}
	missing := map[string]bool{}
	for _, b := range raw.NotMeasured {
		missing[b.Key] = true
	}
	for _, c := range raw.Meta.Categories {
		for _, k := range c.Blockers {
			if !missing[k] {
				r.Acceptance.Blockers = append(r.Acceptance.Blockers, Blocker{Key: k, Message: raw.AcceptanceBlockers[k]})
			}
		}
	}
	for i, s := range raw.Sections {
		switch s.Kind {
		case WorkflowBenchmarks:
			b := &BenchSection{Error: s.Error}
			if tf, ok := s.Targets["tier_factors"].(map[string]any); ok {
				b.TierFactors = map[string]float64{}
				for k, v := range tf {
					if x, ok := v.(float64); ok {
						b.TierFactors[k] = x
					}
				}
			}
			if err := json.Unmarshal(s.Data, &b.Rows); err != nil {
				return nil, fmt.Errorf("read %s: section %d (benchmarks): %w", ReportJSON, i, err)
			}
			r.Benchmarks = b
		case WorkflowEvals:
			e := &EvalSection{Error: s.Error}
			if err := json.Unmarshal(s.Data, &e.Rows); err != nil {
				return nil, fmt.Errorf("read %s: section %d (evals): %w", ReportJSON, i, err)
			}
			r.Evals = e
		case SpecTestsKind:
			ts := &TestSection{Class: s.TaskType, Error: s.Error}
			if err := json.Unmarshal(s.Data, &ts.Rows); err != nil {
				return nil, fmt.Errorf("read %s: section %d (spec_tests): %w", ReportJSON, i, err)
			}
			r.Tests = ts
		}
	}
	return r, nil
}
