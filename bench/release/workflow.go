package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
	"github.com/ttis-dev/ttis/units/verdict"
)

// Progress follows a run for a display: Logf is a line about the run, Step
// starts a step with the units of work it will do (requests, documents),
// Done counts finished ones.
type Progress interface {
	Logf(format string, a ...any)
	Step(name string, total int)
	Done(n int)
}

// Config is one workflow run.
type Config struct {
	// Target is the server under test (bench/target).
	Target *target.Target
	// Workflow is benchmarks, evals, tests or release (benchmarks, then
	// evals, then tests, as seed 001 orders a release).
	Workflow string
	// Limit is the run size (default smoke).
	Limit limit.Mode

	// Bench is the template of every benchmark point: client options,
	// dataset, traffic shape; nil takes DefaultBench. Its target fields
	// (URL, model, headers) are filled from Target.
	Bench *bench.PointConfig
	// Point runs the one point Bench describes (its ISL, OSL, concurrency
	// and prompts) instead of a sweep.
	Point bool
	// TargetsOnly sweeps only the reference target points.
	TargetsOnly bool
	// Targets replaces the catalog's performance targets (a targets file
	// named TargetsSource).
	Targets       []catalog.PerfTarget
	TargetsSource string
	// NumPrompts overrides every sweep point's prompt count (0: the rule).
	NumPrompts int
	// MaxConcurrency caps a sweep of a model the catalog does not know for
	// the device (default 1).
	MaxConcurrency int
	// NoTraceCapture skips the sweep's trace-capture warm-up for this run
	// even when the target asks for it (Target.TraceCapture).
	NoTraceCapture bool

	// Evals is the template of the eval step: tasks, datasets, generation
	// and request settings; nil takes the catalog's reference tasks with
	// lm-eval's defaults. Its target and output fields are filled here.
	Evals *workflow.Config
	// Hub, when set, pulls the data of the eval tasks that have no local
	// file (evalsuite/taskdata); offline, it finds it in the cache or the
	// task is listed as not measured with the pull command.
	Hub *hub.Client

	// Tests overrides the target's [tests] for the spec-test step: each
	// field it sets replaces the unit's (nil: the unit's).
	Tests *units.Tests
	// Observe reads the unit's restart count and pid around the
	// stability test (nil: not observable, as for a --url server).
	Observe spectest.Observer

	Store *runs.Store
	// Trigger is recorded in the manifest ("ttisctl", "schedule").
	Trigger    string
	Thresholds *Thresholds
	Version    string
	Logger     *slog.Logger
	// Progress receives the run's steps (nil: none).
	Progress Progress
	// Now is the clock for report timestamps (nil: time.Now).
	Now func() time.Time

	// evalNote records how the evals were adapted to the server.
	evalNote string
}

// smallContext is the context length below which evals run zero-shot with
// a reduced generation budget.
const smallContext = 2048

// Outcome is a finished (or interrupted) run.
type Outcome struct {
	Manifest runs.Manifest
	Dir      string
	Report   *Report
	// Point is the result of a one-point benchmark run; Evals the eval
	// step's results (nil when not run).
	Point *bench.PointResult
	Evals *workflow.Outcome
}

// ErrInterrupted is returned (wrapped, with the Outcome of what was kept)
// when the context ends a run: its manifest says interrupted and a
// partial report is written.
var ErrInterrupted = errors.New("interrupted")

// DefaultBench is the benchmark template of releases and schedules:
// streamed completions of random prompts that run to max_tokens, one
// warm-up, P50/P90/P99.
func DefaultBench() bench.PointConfig {
	return bench.PointConfig{
		Client:  benchClient(),
		Dataset: bench.DatasetConfig{Name: "random"},
		Load:    loadgen.Options{RequestRate: math.Inf(1), Burstiness: 1, NumWarmups: 1},
		// The summary table shows P50 and P99 TTFT.
		Percentiles: []float64{50, 90, 99}, ServerTokenizer: true,
	}
}

// benchClient is how releases send benchmark requests: streamed
// completions that run to max_tokens, with per-chunk usage when the server
// gives it, each bounded by ten minutes.
func benchClient() client.Config {
	return client.Config{API: openai.Completions, IgnoreEOS: true, ContinuousUsage: true, RequestTimeout: 10 * time.Minute}
}

// BuiltinEvalTasks check the plumbing (generated, need no dataset) when no
// reference task can run; they never stand in for a reference.
var BuiltinEvalTasks = []string{"ttis_arith", "ttis_arith_mc_generative"}

// EvalChoice is one task of a run's eval step: whether it runs, and its
// role; a task that does not run says why (its own part in NotRun, the
// cause it shares with other tasks in Cause, the fix in Fix).
type EvalChoice struct {
	Task   string
	Role   string
	NotRun string
	Cause  string
	Fix    string
}

// PlanEvals picks the eval tasks of a run. Every task the catalog
// references for the model is listed: it runs when ttis implements it and
// has its data (built-in, or a dataset given), otherwise it says why not.
// Explicit tasks replace the choice (references not among them are listed
// as not selected). When no reference runs, the built-in smoke tasks do, so
// the plumbing is still checked.
func PlanEvals(catalogModel string, datasets map[string]string, explicit []string) []EvalChoice {
	return PlanEvalsPulled(catalogModel, datasets, nil, explicit)
}

// PlanEvalsPulled is PlanEvals knowing which tasks' Hub data was pulled:
// pulled[task] is nil when the task's data is in the cache (the task can
// run), or the error that says why it could not be pulled.
func PlanEvalsPulled(catalogModel string, datasets map[string]string, pulled map[string]error, explicit []string) []EvalChoice {
	known := map[string]tasks.Info{}
	for _, t := range tasks.List() {
		known[t.Name] = t
	}
	refs := map[string]bool{}
	var out []EvalChoice
	for _, ref := range catalog.ModelEvalRefs(catalogModel) {
		if refs[ref.Task] {
			continue
		}
		refs[ref.Task] = true
		c := EvalChoice{Task: ref.Task, Role: RoleReference}
		info, known := known[ref.Task]
		_, hasData := datasets[ref.Task]
		switch {
		case len(explicit) > 0 && !slices.Contains(explicit, ref.Task):
			c.NotRun = "not selected (--task, or the unit's [evals] tasks)"
		case !known:
			c.NotRun = "ttis does not implement this task yet"
		case info.NotRunnable != "":
			c.NotRun = "ttis cannot run it: " + info.NotRunnable
		case !hasData && variantNotRun(ref.Task, catalogModel) != "":
			c.NotRun = variantNotRun(ref.Task, catalogModel)
		case !info.Builtin && !hasData:
			// A task whose Hub data was pulled runs.
			var p *taskdata.Problem
			if err, tried := pulled[ref.Task]; !tried {
				c.NotRun = "needs its dataset: pass --dataset " + ref.Task + "=PATH, or configure the Hub (ttisctl dataset pull " + ref.Task + ")"
			} else if errors.As(err, &p) {
				c.NotRun, c.Cause, c.Fix = "no data: "+p.Data, p.Cause, p.Fix
			} else if err != nil {
				c.NotRun = "its dataset could not be pulled: " + err.Error()
			}
		}
		out = append(out, c)
	}
	role := func(task string) string {
		switch {
		case refs[task]:
			return RoleReference
		case slices.Contains(BuiltinEvalTasks, task) || strings.HasPrefix(task, "ttis_"):
			return RoleSmoke
		}
		return RoleExtra
	}
	for _, t := range explicit {
		if !refs[t] {
			out = append(out, EvalChoice{Task: t, Role: role(t)})
		}
	}
	if len(explicit) == 0 && !slices.ContainsFunc(out, func(c EvalChoice) bool { return c.NotRun == "" }) {
		for _, t := range BuiltinEvalTasks {
			out = append(out, EvalChoice{Task: t, Role: RoleSmoke})
		}
	}
	return out
}

// variantNotRun says why a task that runs differently per model cannot
// run for catalogModel without a local dataset: no variant for it, or one
// that reads files from outside the Hub, which the operator must place
// ("" when the variant reads Hub data, or the task has no variants).
func variantNotRun(task, catalogModel string) string {
	v, has, err := tasks.VariantOf(task, catalogModel)
	switch {
	case !has:
		return ""
	case err != nil:
		return err.Error()
	case len(v.Data) == 0:
		return tasks.AssetsHint(task, v)
	}
	return ""
}

// runnable lists the tasks of a plan that run.
func runnable(plan []EvalChoice) []string {
	var out []string
	for _, c := range plan {
		if c.NotRun == "" {
			out = append(out, c.Task)
		}
	}
	return out
}

// sizeLabel names the size of what the run measures, for its manifest,
// report and log: "point" for one benchmark point (no sweep was planned,
// whatever Limit defaults to), the count or fraction of documents an eval
// was given instead of a mode ("5", "0.1"), else the mode.
func (c *Config) sizeLabel() string {
	switch {
	case c.Point && c.Workflow == WorkflowBenchmarks:
		return "point"
	case c.Workflow == WorkflowEvals && c.Evals != nil:
		return evalSize(c.Limit, c.Evals.Limit)
	}
	return string(c.Limit)
}

// evalSize is an eval's size: its explicit limit, else its mode.
func evalSize(mode limit.Mode, explicit string) string {
	if explicit != "" {
		return explicit
	}
	return string(mode)
}

func (c *Config) logf(format string, a ...any) {
	if c.Progress != nil {
		c.Progress.Logf(format, a...)
	}
	if c.Logger != nil {
		c.Logger.Info(fmt.Sprintf(format, a...), "unit", c.Target.Unit, "workflow", c.Workflow)
	}
}

// check validates cfg and fills its defaults.
func (c *Config) check() error {
	switch c.Workflow {
	case WorkflowBenchmarks, WorkflowEvals, WorkflowTests, WorkflowRelease:
	default:
		return fmt.Errorf("workflow %q: want benchmarks, evals, tests or release", c.Workflow)
	}
	if c.Limit == "" {
		c.Limit = limit.DefaultRun
	}
	l, err := limit.Parse(string(c.Limit))
	if err != nil {
		return err
	}
	c.Limit = l
	if c.Store == nil {
		return errors.New("no results store")
	}
	t := c.Target
	if t == nil || t.BaseURL == "" || t.Model == "" {
		return errors.New("target needs a base URL and a model")
	}
	if c.Point && c.Workflow != WorkflowBenchmarks {
		return errors.New("a one-point run is a benchmarks workflow")
	}
	return nil
}

// PlanSweep plans the benchmark points of cfg (no I/O): the catalog's
// capacity and targets for the target's (model, device), or the server's
// context length and MaxConcurrency when the catalog has no entry.
// Warnings say what was assumed.
func PlanSweep(cfg Config) (pts []sweep.Point, warnings []string, err error) {
	if err := cfg.check(); err != nil {
		return nil, nil, err
	}
	t := cfg.Target
	limits := sweep.Limits{MaxConcurrency: max(cfg.MaxConcurrency, 1), MaxContext: t.MaxModelLen, MaxTokensAllUsers: t.MaxModelLen}
	targets := cfg.Targets
	if t.Spec != nil {
		limits = sweep.LimitsOf(t.Spec)
		if cfg.TargetsSource == "" {
			targets = t.Spec.Targets
		}
	}
	if limits.MaxContext < 1 {
		limits.MaxContext, limits.MaxTokensAllUsers = 4096, 4096
		warnings = append(warnings, "the server reports no context length; assuming 4096")
	}
	pts, err = sweep.Plan(limits, targets, sweep.Options{Limit: cfg.Limit, TargetsOnly: cfg.TargetsOnly})
	if err != nil {
		return nil, warnings, err
	}
	if cfg.NumPrompts > 0 {
		for i := range pts {
			pts[i].NumPrompts = cfg.NumPrompts
		}
	}
	return pts, warnings, nil
}

// Run runs the workflow into a new run folder of the store, writes the
// reports and returns the outcome. A step that fails (the server going
// away, a task that cannot run) is recorded in the report, never hidden;
// Run returns an error alone when nothing could be recorded (bad
// configuration, unwritable store). When ctx ends the run, what finished is
// kept, a partial report is written, the manifest says interrupted, and
// the error wraps ErrInterrupted next to the Outcome; Resume finishes it.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	t := cfg.Target
	// One workflow per unit at a time, across processes: two would load
	// the same server and spoil each other's measurements.
	unlock, err := cfg.Store.Lock(t.Unit)
	if err != nil {
		return nil, err
	}
	defer unlock()
	md := metadataOf(&cfg)
	run, err := cfg.Store.Create(runs.Manifest{Unit: t.Unit, Model: md.Model, Device: t.Device, Runtime: t.Runtime,
		Simulated: t.Simulated, Workflow: cfg.Workflow, Limit: cfg.sizeLabel(), BaseURL: t.BaseURL, Trigger: cfg.Trigger,
		Conditions: t.Conditions})
	if err != nil {
		return nil, err
	}
	if err := saveConfig(&cfg, run.WriteFile); err != nil {
		_ = run.Finish(runs.StatusFailed, "", err.Error())
		return nil, err
	}
	return execute(ctx, &cfg, run, prior{})
}

// Resume finishes the unfinished run ref (an id, a unique prefix, or its
// folder) of cfg.Store with cfg, which LoadConfig read from it and the
// caller pointed at the server again: finished benchmark points are kept,
// eval answers already in its cache are not requested again, and the
// reports are written anew over the whole run.
func Resume(ctx context.Context, cfg Config, ref string) (*Outcome, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m, dir, err := cfg.Store.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	if m.Unit != cfg.Target.Unit {
		return nil, fmt.Errorf("run %s belongs to unit %s, not %s", m.ID, m.Unit, cfg.Target.Unit)
	}
	unlock, err := cfg.Store.Lock(m.Unit)
	if err != nil {
		return nil, err
	}
	defer unlock()
	run, err := cfg.Store.Reopen(ctx, dir)
	if err != nil {
		return nil, err
	}
	var p prior
	// What cannot be read back (absent, or refused by the store: a pipe,
	// a file over its bound) is run again.
	if b, err := runs.ReadFile(ctx, filepath.Join(dir, "benchmarks", bench.SummaryJSON), MaxReportBytes); err == nil {
		if d, err := report.ParseJSON(b); err == nil {
			p.points = d.Points
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		cfg.logf("run %s: benchmark points run again: %v", run.ID(), err)
	}
	if b, err := runs.ReadFile(ctx, filepath.Join(dir, ReportJSON), MaxReportBytes); err == nil {
		if old, err := ParseJSON(b); err == nil {
			if evalsFinished(old.Evals) {
				p.evals, p.evalSettings = old.Evals, old.Metadata.EvalSettings
			}
			if old.Tests.finished() {
				p.tests = old.Tests
			}
		}
	}
	step := map[bool]string{true: "kept", false: "to run"}
	cfg.logf("run %s: resuming (%d benchmark point(s) kept, eval step %s, spec tests %s)", run.ID(), len(p.points), step[p.evals != nil], step[p.tests != nil])
	return execute(ctx, &cfg, run, p)
}

// prior is what an interrupted run had finished: its benchmark points and,
// when the eval step had ended, its eval section.
type prior struct {
	points       []report.Point
	evals        *EvalSection
	evalSettings string
	tests        *TestSection
}

// evalsFinished reports whether an eval section is a step that ended (not
// one a signal cut short).
func evalsFinished(e *EvalSection) bool {
	if e == nil || e.Error != "" {
		return false
	}
	for _, r := range e.Rows {
		if strings.Contains(r.NotRun, "interrupted") {
			return false
		}
	}
	return true
}

// execute runs cfg's steps into run and finishes it, keeping what an
// interrupted attempt had finished (p).
func execute(ctx context.Context, cfg *Config, run *runs.Run, p prior) (*Outcome, error) {
	t := cfg.Target
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	th := DefaultThresholds()
	if cfg.Thresholds != nil {
		th = *cfg.Thresholds
	}
	md := metadataOf(cfg)
	md.RunID = run.ID()
	md.ReportID = strings.ReplaceAll(md.Model, "/", "__") + "_" + run.Manifest().Started.Format("2006-01-02_15-04-05")
	cfg.logf("run %s: %s %s of %s on %s (%s) into %s", run.ID(), cfg.sizeLabel(), cfg.Workflow, md.Model, md.Device, t.BaseURL, run.Dir)

	out := &Outcome{Dir: run.Dir}
	rep := &Report{Metadata: md}
	// A release runs its steps in seed 001's order: benchmarks, evals,
	// tests; the reports come last.
	if cfg.Workflow == WorkflowBenchmarks || cfg.Workflow == WorkflowRelease {
		if t.Spec != nil && t.Spec.IsMedia() {
			rep.Benchmarks = runMedia(ctx, cfg, run)
		} else if cfg.Point {
			rep.Benchmarks, out.Point = runPoint(ctx, cfg, run, p.points)
		} else {
			rep.Benchmarks = runSweep(ctx, cfg, run, &rep.Metadata, p.points)
		}
	}
	switch {
	case cfg.Workflow != WorkflowEvals && cfg.Workflow != WorkflowRelease:
	case p.evals != nil:
		rep.Evals = p.evals
		rep.Metadata.EvalTasks = strings.Join(evalTaskNames(rep.Evals), ",")
		rep.Metadata.EvalSettings = p.evalSettings
	default:
		rep.Evals, out.Evals = runEvals(ctx, cfg, run)
		rep.Metadata.EvalTasks = strings.Join(evalTaskNames(rep.Evals), ",")
		rep.Metadata.EvalSettings = cfg.evalNote
	}
	switch {
	case cfg.Workflow != WorkflowTests && cfg.Workflow != WorkflowRelease:
	case p.tests != nil:
		rep.Tests = p.tests
	case ctx.Err() != nil:
		// Interrupted before the tests: a resume runs them.
		rep.Tests = &TestSection{Rows: []spectest.Result{}, Error: "the run was interrupted (--resume runs them)"}
	default:
		rep.Tests = runTests(ctx, cfg, run)
	}
	interrupted := ctx.Err()
	rep.Interrupted = interrupted != nil
	rep.Metadata.GeneratedAt = now().UTC().Format(time.RFC3339)
	rep.Acceptance = AcceptRun(t.Spec, rep.Benchmarks, rep.Evals, rep.Tests)
	if interrupted != nil {
		rep.Acceptance.Summary = "the run was interrupted: " + rep.Acceptance.Summary
	}
	// An interrupted run still gets its report, regressions included: the
	// store is then read under a deadline of its own (every read of it is
	// bounded and never blocks, see bench/runs).
	sctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), runs.FileTimeout)
		defer cancel()
	}
	prev, skipped, ok := Baseline(sctx, cfg.Store, t.Unit, cfg.Workflow, run.ID(), t.Conditions)
	for _, s := range skipped {
		cfg.logf("regressions: not comparable: %s", s)
	}
	if ok {
		b, err := runs.ReadFile(sctx, filepath.Join(cfg.Store.Dir(prev), ReportJSON), MaxReportBytes)
		if err == nil {
			var old *Report
			if old, err = ParseJSON(b); err == nil {
				rep.Regressions = Compare(prev.ID, old, rep, th)
				rep.Regressions.Skipped = skipped
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			cfg.logf("regressions: skipping run %s: %v", prev.ID, err)
		}
	} else if len(skipped) > 0 {
		rep.Regressions = &Regressions{Thresholds: th, Items: []Regression{}, Skipped: skipped}
	}
	if err := WriteReports(run, rep); err != nil {
		_ = run.Finish(runs.StatusFailed, "", err.Error())
		return nil, err
	}
	st := runs.StatusComplete
	switch {
	case interrupted != nil:
		st = runs.StatusInterrupted
	case incomplete(rep):
		st = runs.StatusIncomplete
	}
	msg := ""
	if interrupted != nil {
		msg = "interrupted: " + interrupted.Error()
	}
	if err := run.Finish(st, rep.Acceptance.Verdict, msg); err != nil {
		return nil, err
	}
	cfg.logf("run %s: %s, verdict %s", run.ID(), st, rep.Acceptance.Verdict)
	out.Manifest, out.Report = run.Manifest(), rep
	if interrupted != nil {
		return out, fmt.Errorf("run %s: %w (%v)", run.ID(), ErrInterrupted, interrupted)
	}
	return out, nil
}

// metadataOf is the report metadata of cfg's target and its catalog entry.
func metadataOf(cfg *Config) Metadata {
	t := cfg.Target
	md := Metadata{Unit: t.Unit, Model: t.CatalogModel, ServedModel: t.Model, Device: t.Device, Runtime: t.Runtime,
		Simulated: t.Simulated, Workflow: cfg.Workflow, Limit: cfg.sizeLabel(), BaseURL: t.BaseURL, TTISVersion: cfg.Version,
		TargetsSource: "none", Conditions: t.Conditions}
	if md.Device == "" {
		md.Device = "unknown device"
	}
	if s := t.Spec; s != nil {
		md.Model, md.ModelRepo, md.ModelID = s.ModelName, s.HFRepo, s.ModelID
		md.ModelStatus = catalog.StatusName(s.Status)
		md.InferenceEngine, md.ModelImpl, md.CatalogVersion = s.Engine, s.Impl, s.Version
		md.TTMetalCommit, md.VllmCommit, md.DockerImage = s.TTMetalCommit, s.VllmCommit, s.DockerImage
		if len(s.Targets) > 0 {
			md.TargetsSource = "catalog"
			if s.CatalogMode() == catalog.ModeDev {
				md.TargetsSource = "dev catalog"
			}
		}
	}
	if cfg.TargetsSource != "" {
		md.TargetsSource = cfg.TargetsSource
	}
	return md
}

// WriteReports renders and writes report.json, report.md and report.html;
// report.json goes last so a folder with it is a finished report.
func WriteReports(run *runs.Run, rep *Report) error {
	js, err := JSON(rep)
	if err != nil {
		return err
	}
	page, err := HTML(rep)
	if err != nil {
		return err
	}
	// run.py's file names and keys, for the CI that parses them.
	if err := writeRunPyReports(run, rep); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{ReportMarkdown, Markdown(rep)}, {ReportHTML, page}, {ReportJSON, js}} {
		if err := run.WriteFile(f.name, f.data); err != nil {
			return err
		}
	}
	return nil
}

// incomplete reports whether a step failed or a request errored.
func incomplete(r *Report) bool {
	if r.Evals != nil {
		if r.Evals.Error != "" {
			return true
		}
		for _, e := range r.Evals.Rows {
			if e.Errored > 0 {
				return true
			}
		}
	}
	if r.Tests != nil && r.Tests.Error != "" {
		return true
	}
	if r.Benchmarks != nil {
		if r.Benchmarks.Error != "" {
			return true
		}
		for _, b := range r.Benchmarks.Rows {
			if b.Grade.Status == grade.StatusError {
				return true
			}
		}
	}
	return false
}

func evalTaskNames(e *EvalSection) []string {
	var out []string
	for _, r := range e.Rows {
		out = append(out, r.Task)
	}
	return out
}

// DefaultEvals is the eval template of releases and schedules: lm-eval's
// defaults over the completions API with the chat template applied, as
// tt-inference-server's EvalTask runs them (the catalog's reference tasks
// are chosen per run).
func DefaultEvals() workflow.Config {
	return workflow.Config{API: openai.Completions, ApplyChatTemplate: true, NumFewShot: -1, Concurrency: 8, MaxRetries: 3,
		Timeout: 10 * time.Minute, Seed: 1234, ErrorPolicy: runner.ErrorsAsWrong}
}

// evalConfig is the eval step's configuration: the caller's template (or
// DefaultEvals) pointed at the target and the run folder.
func evalConfig(cfg *Config, run *runs.Run) workflow.Config {
	t := cfg.Target
	ec := DefaultEvals()
	if cfg.Evals != nil {
		ec = *cfg.Evals
	} else {
		applyUnitEvals(&ec, t.View.Evals)
	}
	if t.MaxModelLen > 0 && t.MaxModelLen < smallContext && ec.NumFewShot < 0 && ec.MaxGenToks == 0 {
		// Few-shot prompts and a 256-token budget overflow a small
		// context (a tiny test model): ask zero-shot with a quarter of
		// the context to generate, and say so in the report.
		ec.NumFewShot, ec.MaxGenToks = 0, min(256, t.MaxModelLen/4)
		cfg.evalNote = fmt.Sprintf("0-shot, max_gen_toks %d (server context %d tokens)", ec.MaxGenToks, t.MaxModelLen)
		cfg.logf("evals: %s", cfg.evalNote)
	}
	ec.BaseURL, ec.Model, ec.APIKey, ec.Header, ec.CatalogModel = t.BaseURL, t.Model, t.APIKey, t.Header, t.CatalogModel
	if ec.Hub == nil {
		ec.Hub = cfg.Hub
	}
	if ec.HubModel == "" {
		ec.HubModel = hubModel(t.CatalogModel)
	}
	ec.LimitMode, ec.Version = cfg.Limit, cfg.Version
	ec.OutputDir = filepath.Join(run.Dir, "evals")
	// lm-eval's files go where run.py's report globs them:
	// eval_<model>_<device>/<org>__<repo>/results_*.json.
	ec.ResultsDir = filepath.Join(ec.OutputDir, EvalResultsDir(t))
	// Answers are kept with the run, so an interrupted run resumes.
	ec.CacheDir = filepath.Join(ec.OutputDir, "cache")
	if cfg.Progress != nil {
		ec.Progress = cfg.Progress
	}
	return ec
}

// applyUnitEvals puts a unit's [evals] overrides into the eval template
// of its releases and scheduled runs (an explicit template from the
// command line wins over them).
func applyUnitEvals(ec *workflow.Config, e units.Evals) {
	if len(e.Tasks) > 0 {
		ec.Tasks = slices.Clone(e.Tasks)
	}
	if e.API == string(openai.Chat) {
		ec.API, ec.ApplyChatTemplate = openai.Chat, false
	}
	for task, v := range e.Limits {
		if ec.TaskLimits == nil {
			ec.TaskLimits = map[string]string{}
		}
		ec.TaskLimits[task] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	for task, p := range e.Datasets {
		if ec.Datasets == nil {
			ec.Datasets = map[string]string{}
		}
		ec.Datasets[task] = p
	}
}

func runEvals(ctx context.Context, cfg *Config, run *runs.Run) (*EvalSection, *workflow.Outcome) {
	ec := evalConfig(cfg, run)
	pulled := pullEvalData(ctx, cfg, &ec)
	plan := PlanEvalsPulled(cfg.Target.CatalogModel, ec.Datasets, pulled, ec.Tasks)
	if t := cfg.Target; t.Spec != nil && t.Spec.IsMedia() && len(ec.Tasks) == 0 {
		// The built-in smoke tasks ask for text completions, which a
		// media unit does not serve: its plan is its references alone.
		plan = slices.DeleteFunc(plan, func(c EvalChoice) bool { return c.Role == RoleSmoke })
	}
	for i, c := range plan {
		if c.NotRun == "" || strings.HasPrefix(c.NotRun, "needs its dataset") {
			if needsASR(c.Task, &ec) {
				plan[i].NotRun = workflow.ASRMissing
			}
		}
	}
	ec.Tasks = runnable(plan)
	for _, c := range plan {
		// A task without data was named, with its cause, when the pull
		// failed (pullEvalData).
		if c.NotRun != "" && c.Cause == "" {
			cfg.logf("evals: %s (%s) not run: %s", c.Task, c.Role, c.NotRun)
		}
	}
	sec := &EvalSection{Rows: []EvalRow{}}
	var oc *workflow.Outcome
	if len(ec.Tasks) > 0 {
		cfg.logf("evals: %s (limit %s)", strings.Join(ec.Tasks, ", "), evalSize(cfg.Limit, ec.Limit))
		var err error
		if oc, err = workflow.Run(ctx, ec); err != nil {
			if ctx.Err() == nil {
				sec.Error = err.Error()
			}
		} else {
			sec.Rows = EvalRowsOf(&oc.Run)
			files := append([]string{oc.Files.Results, oc.Files.Summary}, oc.Files.Samples...)
			if oc.DataFile != "" {
				files = append(files, oc.DataFile)
			}
			if err := run.AddFiles(files...); err != nil {
				sec.Error = err.Error()
			}
		}
	}
	// Every task of the plan has a row: run ones with their scores, the
	// others with why they were not measured.
	byTask := map[string]*EvalRow{}
	for i := range sec.Rows {
		byTask[sec.Rows[i].Task] = &sec.Rows[i]
	}
	var rows []EvalRow
	for _, c := range plan {
		if r, ok := byTask[c.Task]; ok {
			r.Role = c.Role
			rows = append(rows, *r)
			continue
		}
		row := EvalRow{Task: c.Task, Role: c.Role, NotRun: c.NotRun, NotRunCause: c.Cause, Fix: c.Fix, Check: verdict.NA}
		if row.NotRun == "" {
			row.NotRun = "did not run"
			if oc != nil && oc.NotRun[c.Task] != "" {
				row.NotRun = oc.NotRun[c.Task]
			} else if sec.Error != "" {
				row.NotRun = "the eval step failed: " + sec.Error
			} else if ctx.Err() != nil {
				row.NotRun = "the run was interrupted (answers so far are cached in the run; --resume finishes it)"
			}
		}
		rows = append(rows, row)
	}
	sec.Rows = rows
	return sec, oc
}

// benchBase is cfg's point template pointed at the target, counting
// requests for the progress display.
func benchBase(cfg *Config) bench.PointConfig {
	base := DefaultBench()
	if cfg.Bench != nil {
		base = *cfg.Bench
	}
	t := cfg.Target
	base.Client.BaseURL, base.Client.Model, base.Client.Header = t.BaseURL, t.Model, t.AuthHeader()
	base.Simulated = t.Simulated
	// Result files are named as run.py names them, after the catalog
	// model and the device, so its report globs find them.
	base.FileModel, base.Device = t.CatalogModel, t.Device
	if base.Load.RequestIDPrefix == "" {
		base.Load.RequestIDPrefix = cfg.Workflow + "-"
	}
	if p := cfg.Progress; p != nil {
		prev := base.Load.OnDone
		base.Load.OnDone = func(r metrics.Request) {
			if prev != nil {
				prev(r)
			}
			p.Done(1)
		}
	}
	return base
}

// tierSetup is how a spec grades: tier factors and the tiers its status
// enforces.
func tierSetup(spec *catalog.Spec) ([]grade.TierFactor, []string) {
	if spec == nil {
		return grade.Factors(nil), nil
	}
	return grade.Factors(spec.PerfTargetsMap), catalog.RequiredTiers(spec.Status)
}

func tierFactorMap(factors []grade.TierFactor) map[string]float64 {
	m := map[string]float64{}
	for _, f := range factors {
		m[f.Name] = f.Factor
	}
	return m
}

// runPoint runs one benchmark point, graded against the catalog's target
// of the same (ISL, OSL, concurrency) when there is one.
func runPoint(ctx context.Context, cfg *Config, run *runs.Run, done []report.Point) (*BenchSection, *bench.PointResult) {
	pc := benchBase(cfg)
	factors, required := tierSetup(cfg.Target.Spec)
	sec := &BenchSection{Point: true, TierFactors: tierFactorMap(factors)}
	if pc.NumPrompts < 1 {
		pc.NumPrompts = sweep.NumPrompts(pc.Dataset.InputLen, pc.Dataset.OutputLen, max(pc.Load.MaxConcurrency, 1), sweep.Limits{})
	}
	cfg.logf("benchmark: isl %d osl %d concurrency %d (%d prompts)", pc.Dataset.InputLen, pc.Dataset.OutputLen, pc.Load.MaxConcurrency, pc.NumPrompts)
	targets := cfg.Targets
	if cfg.Target.Spec != nil && cfg.TargetsSource == "" {
		targets = cfg.Target.Spec.Targets
	}
	pt := sweep.Point{ISL: pc.Dataset.InputLen, OSL: pc.Dataset.OutputLen, Concurrency: max(pc.Load.MaxConcurrency, 1),
		NumPrompts: pc.NumPrompts, Source: "point", Target: sweep.FindTarget(targets, pc.Dataset.InputLen, pc.Dataset.OutputLen, max(pc.Load.MaxConcurrency, 1))}
	for _, p := range done {
		if p.Error == "" && p.Grade.Status != grade.StatusError {
			sec.Rows = BenchRowsOf([]report.Point{p})
			return sec, nil
		}
	}
	traceCapture := warmPoint(ctx, cfg, pc, pt)
	if cfg.Progress != nil {
		cfg.Progress.Step("benchmark", pc.NumPrompts)
	}
	pr, err := bench.RunPoint(ctx, pc)
	if err != nil {
		if ctx.Err() != nil {
			sec.Rows = BenchRowsOf([]report.Point{bench.NotRunPoint(pt, "the run was interrupted", factors, required)})
			return sec, nil
		}
		sec.Error = err.Error()
		return sec, nil
	}
	rp := bench.GradePoint(pt, pr, factors, required)
	if err := run.WriteFile(filepath.Join("benchmarks", pr.FileName), pr.JSON); err != nil {
		sec.Error = err.Error()
	} else {
		rp.ResultFile = pr.FileName
	}
	sec.Rows = BenchRowsOf([]report.Point{rp})
	// The summary keeps the point for a resume, as a sweep's does.
	if js, err := report.JSON(report.Metadata{ReportID: run.ID(), Model: cfg.Target.CatalogModel, Device: cfg.Target.Device,
		Unit: cfg.Target.Unit, BaseURL: cfg.Target.BaseURL, Endpoint: pc.Client.API.Path(), Simulated: cfg.Target.Simulated,
		Tokenizer: pr.Run.Tokenizer, TraceCapture: traceCapture}, []report.Point{rp}); err == nil {
		if err := run.WriteFile(filepath.Join("benchmarks", bench.SummaryJSON), js); err != nil && sec.Error == "" {
			sec.Error = err.Error()
		}
	}
	return sec, pr
}

// warmPoint captures the traces of a single point's (ISL, batch) before it
// is measured, as a sweep does for each of its shapes, when the target asks
// for it; it returns the condition to record ("" when the runtime has no
// traces, "off" when this run skipped them).
func warmPoint(ctx context.Context, cfg *Config, pc bench.PointConfig, pt sweep.Point) string {
	t := cfg.Target
	if !t.TraceCapture || cfg.NoTraceCapture {
		if t.TraceCapture || t.Runtime == "vllm" {
			return "off"
		}
		return ""
	}
	shapes := bench.TraceShapes([]sweep.Point{pt})
	if cfg.Progress != nil {
		n := 0
		for _, s := range shapes {
			n += s.Batch
		}
		cfg.Progress.Step("trace capture", n)
	}
	tc := bench.CaptureTraces(ctx, pc, shapes, func(_ int, s bench.TraceShape) {
		cfg.logf("benchmark: trace capture isl %d batch %d", s.ISL, s.Batch)
	})
	return bench.DescribeCaptures(tc)
}

func runSweep(ctx context.Context, cfg *Config, run *runs.Run, md *Metadata, done []report.Point) *BenchSection {
	factors, required := tierSetup(cfg.Target.Spec)
	sec := &BenchSection{TierFactors: tierFactorMap(factors)}
	pts, warnings, err := PlanSweep(*cfg)
	for _, w := range warnings {
		cfg.logf("benchmarks: %s", w)
	}
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	cfg.logf("benchmarks: %d point(s)", len(pts))
	base := benchBase(cfg)
	if base.Dataset.Name != "" && base.Dataset.Name != "random" {
		cfg.logf("benchmarks: sweep points use the %s dataset; ISL is only approximate", base.Dataset.Name)
	}
	t := cfg.Target
	bmd := report.Metadata{ReportID: run.ID(), Model: md.Model, Device: md.Device, Unit: t.Unit, BaseURL: t.BaseURL,
		Endpoint: base.Client.API.Path(), ModelStatus: md.ModelStatus, Limit: string(cfg.Limit), Simulated: t.Simulated,
		TargetsSource: md.TargetsSource}
	capture := t.TraceCapture && !cfg.NoTraceCapture
	if !capture && (t.TraceCapture || t.Runtime == "vllm") {
		// Say so where it matters: numbers of a server measured cold.
		bmd.TraceCapture = "off"
	}
	res, err := bench.RunSweep(ctx, bench.SweepConfig{Base: base, Points: pts, Factors: factors, Required: required,
		Metadata: bmd, OutDir: filepath.Join(run.Dir, "benchmarks"), Done: done, TraceCapture: capture,
		OnTraceCapture: func(i, n int, s bench.TraceShape) {
			cfg.logf("benchmarks: trace capture %d/%d isl %d batch %d", i+1, n, s.ISL, s.Batch)
		},
		OnPoint: func(i int, p sweep.Point) {
			cfg.logf("benchmarks: point %d/%d isl %d osl %d concurrency %d (%d prompts)", i+1, len(pts), p.ISL, p.OSL, p.Concurrency, p.NumPrompts)
			if cfg.Progress != nil {
				cfg.Progress.Step(fmt.Sprintf("point %d/%d isl %d osl %d c %d", i+1, len(pts), p.ISL, p.OSL, p.Concurrency), p.NumPrompts)
			}
		}})
	var measured []report.Point
	switch {
	case res != nil:
		measured = res.Points
		if err != nil && ctx.Err() == nil {
			sec.Error = err.Error()
		}
	case ctx.Err() == nil:
		sec.Error = err.Error()
		return sec
	}
	// A planned point that did not run is listed as such: it is not a pass.
	ran := map[[4]int]bool{}
	for _, p := range measured {
		ran[[4]int{p.ISL, p.OSL, p.Concurrency, p.NumPrompts}] = true
	}
	for _, p := range pts {
		if !ran[p.Key()] {
			measured = append(measured, bench.NotRunPoint(p, "the run was interrupted", factors, required))
		}
	}
	sec.Rows = BenchRowsOf(measured)
	if res == nil {
		return sec
	}
	if ferr := run.AddFiles(res.Files...); ferr != nil {
		sec.Error = ferr.Error()
	}
	return sec
}
