package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/result"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// RebuildOptions shape Rebuild.
type RebuildOptions struct {
	// Now is the clock of the report's generated_at (nil: time.Now).
	Now func() time.Time
	// Thresholds are the regression thresholds (nil: the defaults).
	Thresholds *Thresholds
}

// maxRawFile bounds a raw result file read back into memory.
const maxRawFile = 512 << 20

// Rebuild rewrites the reports of run ref (an id, a unique prefix, or its
// folder) from its raw files, as run.py's report workflow rebuilds its
// reports from workflow_logs: every benchmarks/benchmark_*.json (the
// point's parameters from its name, its figures from its vLLM keys) and
// every lm-eval results_*.json under evals/, graded against the catalog as
// it is now (or the targets file the run's plan keeps), with the run's
// plan for what should have been measured and its earlier report for why a
// task did not run and for the spec tests' verdicts (which leave no raw
// file), graded anew with the rest. report.{md,json,html} and the run.py copies are written
// anew and the manifest takes the new verdict; the run's status, the raw
// files and the sweep summaries in benchmarks/ stay. Nothing is sent to
// the server.
func Rebuild(ctx context.Context, store *runs.Store, ref string, o RebuildOptions) (*Report, string, error) {
	m, dir, err := store.Open(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	unlock, err := store.Lock(m.Unit)
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	run, err := store.Rewrite(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	cfg, tref, err := LoadConfig(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	t := &target.Target{Unit: m.Unit, BaseURL: tref.BaseURL, Model: tref.Model, CatalogModel: tref.CatalogModel, Device: tref.Device,
		Runtime: m.Runtime, Simulated: m.Simulated, Catalog: tref.CatalogMode(), Conditions: m.Conditions}
	if t.CatalogModel == "" {
		t.CatalogModel = t.Model
	}
	if spec, err := catalog.LookupIn(t.Catalog, t.CatalogModel, t.Device); err == nil {
		t.Spec = spec
		if spec.IsMedia() {
			return nil, "", fmt.Errorf("run %s measured a media model: --rebuild reads text benchmark results and lm-eval results only", m.ID)
		}
	}
	cfg.Target, cfg.Store = t, store
	var old *Report
	if b, err := runs.ReadFile(ctx, filepath.Join(dir, ReportJSON), MaxReportBytes); err == nil {
		if old, err = ParseJSON(b); err != nil {
			return nil, "", fmt.Errorf("run %s: %w", m.ID, err)
		}
	}
	md := metadataOf(&cfg)
	if old != nil && old.Metadata.ReportID != "" {
		// What the run recorded (its eval settings, versions).
		md = old.Metadata
	} else {
		md.RunID = m.ID
		md.ReportID = strings.ReplaceAll(md.Model, "/", "__") + "_" + m.Started.Format("2006-01-02_15-04-05")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	md.GeneratedAt = now().UTC().Format(time.RFC3339)
	rep := &Report{Metadata: md, Interrupted: old != nil && old.Interrupted}
	if m.Workflow != WorkflowBenchmarks {
		if rep.Evals, err = rebuildEvals(ctx, &cfg, dir, old); err != nil {
			return nil, "", fmt.Errorf("run %s: %w", m.ID, err)
		}
	}
	if m.Workflow != WorkflowEvals {
		if rep.Benchmarks, err = rebuildBenchmarks(ctx, &cfg, dir); err != nil {
			return nil, "", fmt.Errorf("run %s: %w", m.ID, err)
		}
	}
	if old != nil && (m.Workflow == WorkflowRelease || m.Workflow == WorkflowTests) {
		// Spec tests leave no raw file: their verdicts and evidence are
		// in the report the run wrote, and a rebuild keeps them.
		rep.Tests = old.Tests
	}
	rep.Acceptance = AcceptRun(t.Spec, rep.Benchmarks, rep.Evals, rep.Tests)
	if rep.Interrupted {
		rep.Acceptance.Summary = "the run was interrupted: " + rep.Acceptance.Summary
	}
	th := DefaultThresholds()
	if o.Thresholds != nil {
		th = *o.Thresholds
	}
	if prev, skipped, ok := Baseline(ctx, store, m.Unit, m.Workflow, m.ID, m.Conditions); ok {
		if b, err := runs.ReadFile(ctx, filepath.Join(store.Dir(prev), ReportJSON), MaxReportBytes); err == nil {
			if before, err := ParseJSON(b); err == nil {
				rep.Regressions = Compare(prev.ID, before, rep, th)
				rep.Regressions.Skipped = skipped
			}
		}
	} else if len(skipped) > 0 {
		rep.Regressions = &Regressions{Thresholds: th, Items: []Regression{}, Skipped: skipped}
	}
	if err := WriteReports(run, rep); err != nil {
		return nil, "", err
	}
	if err := run.SetVerdict(rep.Acceptance.Verdict); err != nil {
		return nil, "", err
	}
	return rep, dir, nil
}

// rebuildBenchmarks reads the run's result files into graded rows: for a
// sweep, every planned point (those without a file are listed as not run);
// for a one-point run, its point.
func rebuildBenchmarks(ctx context.Context, cfg *Config, dir string) (*BenchSection, error) {
	factors, required := tierSetup(cfg.Target.Spec)
	sec := &BenchSection{Point: cfg.Point, TierFactors: tierFactorMap(factors)}
	names, err := filepath.Glob(filepath.Join(dir, "benchmarks", "benchmark_*.json"))
	if err != nil {
		return nil, err
	}
	// The latest file of each (isl, osl, concurrency, prompts), as run.py's
	// report keeps the latest of each configuration.
	latest := map[[4]int]result.FileInfo{}
	files := map[[4]int]string{}
	for _, p := range names {
		fi, err := result.ParseFileName(filepath.Base(p))
		if err != nil {
			continue // a summary or a file of another tool
		}
		k := [4]int{fi.ISL, fi.OSL, fi.MaxConcurrency, fi.NumPrompts}
		if prev, ok := latest[k]; !ok || fi.Time.After(prev.Time) || (fi.Time.Equal(prev.Time) && p > files[k]) {
			latest[k], files[k] = fi, p
		}
	}
	targets := cfg.Targets
	if cfg.Target.Spec != nil && cfg.TargetsSource == "" {
		targets = cfg.Target.Spec.Targets
	}
	var plan []sweep.Point
	if !cfg.Point {
		if cfg.Target.Spec != nil {
			plan, _, err = PlanSweep(*cfg)
			if err != nil {
				return nil, err
			}
		}
	}
	type planned struct {
		pt   sweep.Point
		path string
	}
	var todo []planned
	used := map[[4]int]bool{}
	for _, pt := range plan {
		k := pt.Key()
		path, ok := files[k]
		if !ok && pt.Concurrency == 1 {
			// A point run without a concurrency cap is named maxcon-0.
			k[2] = 0
			path = files[k]
		}
		if path != "" {
			used[k] = true
		}
		todo = append(todo, planned{pt, path})
	}
	keys := make([][4]int, 0, len(files))
	for k := range files {
		if !used[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return slices.Compare(keys[i][:], keys[j][:]) < 0 })
	for _, k := range keys {
		// Measured but not (or no longer) planned: graded all the same,
		// after the planned points.
		source := "sweep"
		if cfg.Point {
			source = "point"
		}
		c := max(k[2], 1)
		todo = append(todo, planned{sweep.Point{ISL: k[0], OSL: k[1], Concurrency: c, NumPrompts: k[3], Source: source,
			Target: sweep.FindTarget(targets, k[0], k[1], c)}, files[k]})
	}
	for _, p := range todo {
		if p.path == "" {
			sec.Rows = append(sec.Rows, BenchRowsOf([]report.Point{bench.NotRunPoint(p.pt, "not run: no result file in the run", factors, required)})...)
			continue
		}
		b, err := runs.ReadFile(ctx, p.path, maxRawFile)
		if err != nil {
			return nil, err
		}
		rp, err := bench.PointFromResult(p.pt, filepath.Base(p.path), b, factors, required)
		if err != nil {
			return nil, err
		}
		sec.Rows = append(sec.Rows, BenchRowsOf([]report.Point{rp})...)
	}
	return sec, nil
}

// lmResults is what an lm-eval results file holds for grading.
type lmResults struct {
	Results       map[string]map[string]any `json:"results"`
	GroupSubtasks map[string][]string       `json:"group_subtasks"`
	NSamples      map[string]struct {
		Effective int `json:"effective"`
	} `json:"n-samples"`
	TTIS struct {
		Errors map[string]runner.ErrorSummary `json:"errors"`
	} `json:"ttis"`
}

// aggregatesOf reads lm-eval's "metric,filter" and "metric_stderr,filter"
// keys of one task.
func aggregatesOf(entry map[string]any) []evalsuite.Aggregate {
	var out []evalsuite.Aggregate
	for k, v := range entry {
		metric, filter, ok := strings.Cut(k, ",")
		if !ok || strings.HasSuffix(metric, "_stderr") {
			continue
		}
		a := evalsuite.Aggregate{Metric: metric, Filter: filter, Value: math.NaN(), Stderr: math.NaN()}
		if f, ok := v.(float64); ok {
			a.Value = f
		}
		if se, ok := entry[metric+"_stderr,"+filter].(float64); ok {
			a.Stderr = se
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// taskResult is one task's figures in an lm-eval results file.
type taskResult struct {
	aggs []evalsuite.Aggregate
	n    int
	errs runner.ErrorSummary
}

// parseLMResults reads an lm-eval results file (name for errors): each
// top-level task's aggregates, sample count and, from ttis's own files,
// errored samples; tasks in order.
func parseLMResults(name string, b []byte) (map[string]taskResult, []string, error) {
	var lm lmResults
	if err := json.Unmarshal(b, &lm); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	tasks := make([]string, 0, len(lm.GroupSubtasks))
	for task := range lm.GroupSubtasks {
		tasks = append(tasks, task)
	}
	if len(tasks) == 0 {
		// A results file without groups: every entry is a task.
		for task := range lm.Results {
			tasks = append(tasks, task)
		}
	}
	sort.Strings(tasks)
	out := map[string]taskResult{}
	for _, task := range tasks {
		entry, ok := lm.Results[task]
		if !ok {
			return nil, nil, fmt.Errorf("%s: group_subtasks names %s, which has no results", name, task)
		}
		n := lm.NSamples[task].Effective
		if n < 0 {
			return nil, nil, fmt.Errorf("%s: n-samples.%s.effective is negative", name, task)
		}
		out[task] = taskResult{aggs: aggregatesOf(entry), n: n, errs: lm.TTIS.Errors[task]}
	}
	return out, tasks, nil
}

// rebuildEvals reads the run's lm-eval results and grades each task
// against the catalog's reference; the tasks the run's plan lists without
// results keep the earlier report's reason.
func rebuildEvals(ctx context.Context, cfg *Config, dir string, old *Report) (*EvalSection, error) {
	var paths []string
	for _, pattern := range []string{filepath.Join(dir, "evals", "eval_*", "*", "results_*.json"), filepath.Join(dir, "evals", "results_*.json")} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	// The newest file of a task wins: a resumed run writes its own.
	sort.Slice(paths, func(i, j int) bool { return filepath.Base(paths[i]) < filepath.Base(paths[j]) })
	found := map[string]taskResult{}
	var order []string
	for _, p := range paths {
		b, err := runs.ReadFile(ctx, p, maxRawFile)
		if err != nil {
			return nil, err
		}
		got, tasks, err := parseLMResults(p, b)
		if err != nil {
			return nil, err
		}
		for _, task := range tasks {
			if _, seen := found[task]; !seen {
				order = append(order, task)
			}
			found[task] = got[task]
		}
	}
	mode := cfg.Limit.EvalKey()
	var datasets map[string]string
	var explicit []string
	if cfg.Evals != nil {
		datasets, explicit = cfg.Evals.Datasets, cfg.Evals.Tasks
	}
	plan := PlanEvals(cfg.Target.CatalogModel, datasets, explicit)
	oldRows := map[string]EvalRow{}
	if old != nil && old.Evals != nil {
		for _, r := range old.Evals.Rows {
			oldRows[r.Task] = r
		}
	}
	planned := map[string]bool{}
	for _, c := range plan {
		planned[c.Task] = true
	}
	for _, task := range order {
		if !planned[task] {
			role := RoleExtra
			if r, ok := oldRows[task]; ok && r.Role != "" {
				role = r.Role
			}
			plan = append(plan, EvalChoice{Task: task, Role: role})
		}
	}
	sec := &EvalSection{Rows: []EvalRow{}}
	if old != nil && old.Evals != nil {
		sec.Error = old.Evals.Error
	}
	for _, c := range plan {
		tr, ok := found[c.Task]
		if !ok {
			if _, listed := oldRows[c.Task]; !listed && c.Role == RoleSmoke {
				continue // the plumbing tasks that stand in when no reference ran
			}
			row := EvalRow{Task: c.Task, Role: c.Role, NotRun: "no results for it in the run's raw files", Check: verdict.NA}
			if r, ok := oldRows[c.Task]; ok && r.NotRun != "" {
				row.NotRun = r.NotRun
			}
			sec.Rows = append(sec.Rows, row)
			continue
		}
		var refp *catalog.EvalRef
		if ref, ok := catalog.EvalRefFor(cfg.Target.CatalogModel, c.Task); ok {
			refp = &ref
		}
		run := results.Run{Tasks: []*runner.Result{{NEffective: tr.n, Errors: tr.errs, Aggregates: tr.aggs}},
			Grades: []results.Grade{results.GradeTask(c.Task, tr.aggs, refp, mode)}}
		rows := EvalRowsOf(&run)
		rows[0].Role = c.Role
		sec.Rows = append(sec.Rows, rows[0])
	}
	if len(paths) == 0 && len(sec.Rows) == 0 && sec.Error == "" {
		return nil, errors.New("no lm-eval results_*.json under evals/ and no planned task")
	}
	return sec, nil
}
