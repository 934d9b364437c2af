package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/bench"
	benchclient "github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/daemon/runs"
	evalclient "github.com/ttis-dev/ttis/evalsuite/client"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Target is the server a workflow runs against.
type Target struct {
	// Unit names the run's folder in the store.
	Unit    string
	BaseURL string
	// Model is the name sent in requests; CatalogModel selects the
	// catalog entry (targets, eval references, status), default Model.
	Model        string
	CatalogModel string
	Device       string
	Runtime      string
	Simulated    bool
	// APIKey is sent as a bearer token (empty: none).
	APIKey string
	// MaxModelLen is the server's context length, used when the catalog
	// has no entry (0: 4096).
	MaxModelLen int
}

// Config is one workflow run.
type Config struct {
	Target Target
	// Workflow is benchmarks, evals or release (evals, then benchmarks).
	Workflow string
	// Limit is smoke, ci-commit, ci-nightly or full.
	Limit string
	// EvalTasks overrides the eval task list; EvalDatasets maps a task to
	// its local dataset file.
	EvalTasks    []string
	EvalDatasets map[string]string
	// EvalAPI is completions (default) or chat.
	EvalAPI string
	// EvalConcurrency bounds documents in flight (default 8).
	EvalConcurrency int
	// RequestTimeout bounds one request (default 10 minutes).
	RequestTimeout time.Duration
	Store          *runs.Store
	// Trigger is recorded in the manifest ("ttisctl", "schedule").
	Trigger    string
	Thresholds *Thresholds
	Version    string
	Logger     *slog.Logger
	// Progress receives one line per step (nil: none).
	Progress io.Writer
	// Now is the clock for report timestamps (nil: time.Now).
	Now func() time.Time

	// evalNote records how the evals were adapted to the server.
	evalNote string
}

// smallContext is the context length below which evals run zero-shot with
// a reduced generation budget.
const smallContext = 2048

// Outcome is a finished run.
type Outcome struct {
	Manifest runs.Manifest
	Dir      string
	Report   *Report
}

// BuiltinEvalTasks are run when the catalog has no eval reference that
// can run without a dataset download: deterministic generated tasks.
var BuiltinEvalTasks = []string{"ttis_arith", "ttis_arith_mc_generative"}

// ChooseEvalTasks picks the tasks of a run: the catalog's reference tasks
// for the model that ttis implements and that are built-in or have a
// dataset given, else the built-in deterministic tasks.
func ChooseEvalTasks(catalogModel string, datasets map[string]string) []string {
	known := map[string]bool{}
	for _, t := range tasks.List() {
		known[t.Name] = t.Builtin
	}
	var out []string
	for _, ref := range catalog.ModelEvalRefs(catalogModel) {
		builtin, ok := known[ref.Task]
		if !ok || slices.Contains(out, ref.Task) {
			continue
		}
		if _, has := datasets[ref.Task]; builtin || has {
			out = append(out, ref.Task)
		}
	}
	if len(out) == 0 {
		return slices.Clone(BuiltinEvalTasks)
	}
	return out
}

func (c *Config) logf(format string, a ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", a...)
	}
	if c.Logger != nil {
		c.Logger.Info(fmt.Sprintf(format, a...), "unit", c.Target.Unit, "workflow", c.Workflow)
	}
}

// Run runs the workflow into a new run folder, writes the reports and
// returns the outcome. Failures of a step (the server going away, a task
// that cannot run) become blockers in the report; Run returns an error
// only when nothing could be recorded (bad configuration, unwritable
// store) or the context was cancelled (the run is then marked failed).
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	t := cfg.Target
	switch cfg.Workflow {
	case WorkflowBenchmarks, WorkflowEvals, WorkflowRelease:
	default:
		return nil, fmt.Errorf("workflow %q: want benchmarks, evals or release", cfg.Workflow)
	}
	if cfg.Limit == "" {
		cfg.Limit = string(sweep.Smoke)
	}
	limit, err := sweep.ParseLimit(cfg.Limit)
	if err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		return nil, errors.New("no results store")
	}
	if t.BaseURL == "" || t.Model == "" {
		return nil, errors.New("target needs a base URL and a model")
	}
	if t.CatalogModel == "" {
		t.CatalogModel = t.Model
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	th := DefaultThresholds()
	if cfg.Thresholds != nil {
		th = *cfg.Thresholds
	}
	var spec *catalog.Spec
	if t.Device != "" {
		if s, err := catalog.Lookup(t.CatalogModel, t.Device); err == nil {
			spec = s
		}
	}
	md := Metadata{Unit: t.Unit, Model: t.CatalogModel, ServedModel: t.Model, Device: t.Device, Runtime: t.Runtime,
		Simulated: t.Simulated, Workflow: cfg.Workflow, Limit: string(limit), BaseURL: t.BaseURL, TTISVersion: cfg.Version,
		TargetsSource: "none"}
	if md.Device == "" {
		md.Device = "unknown device"
	}
	status := ""
	if spec != nil {
		status = spec.Status
		md.Model, md.ModelRepo, md.ModelID = spec.ModelName, spec.HFRepo, spec.ModelID
		md.ModelStatus = catalog.StatusDisplay(spec.Status)
		md.InferenceEngine, md.ModelImpl, md.CatalogVersion = spec.Engine, spec.Impl, spec.Version
		md.TTMetalCommit, md.VllmCommit, md.DockerImage = spec.TTMetalCommit, spec.VllmCommit, spec.DockerImage
		if len(spec.Targets) > 0 {
			md.TargetsSource = "catalog"
		}
	}
	// One workflow per unit at a time, across processes: two would load
	// the same server and spoil each other's measurements.
	unlock, err := cfg.Store.Lock(t.Unit)
	if err != nil {
		return nil, err
	}
	defer unlock()
	run, err := cfg.Store.Create(runs.Manifest{Unit: t.Unit, Model: md.Model, Device: t.Device, Runtime: t.Runtime,
		Simulated: t.Simulated, Workflow: cfg.Workflow, Limit: string(limit), BaseURL: t.BaseURL, Trigger: cfg.Trigger})
	if err != nil {
		return nil, err
	}
	md.RunID = run.ID()
	md.ReportID = strings.ReplaceAll(md.Model, "/", "__") + "_" + run.Manifest().Started.Format("2006-01-02_15-04-05")
	cfg.logf("run %s: %s %s of %s on %s (%s) into %s", run.ID(), limit, cfg.Workflow, md.Model, md.Device, t.BaseURL, run.Dir)

	rep := &Report{Metadata: md}
	if cfg.Workflow != WorkflowBenchmarks {
		rep.Evals = runEvals(ctx, &cfg, t, limit, run)
		rep.Metadata.EvalTasks = strings.Join(evalTaskNames(rep.Evals), ",")
		rep.Metadata.EvalSettings = cfg.evalNote
	}
	if ctx.Err() == nil && cfg.Workflow != WorkflowEvals {
		rep.Benchmarks = runBenchmarks(ctx, &cfg, t, spec, limit, run, &rep.Metadata)
	}
	if err := ctx.Err(); err != nil {
		_ = run.Finish(runs.StatusFailed, "", "cancelled: "+err.Error())
		return nil, fmt.Errorf("run %s: %w", run.ID(), err)
	}
	rep.Metadata.GeneratedAt = now().UTC().Format(time.RFC3339)
	rep.Acceptance = Accept(status, rep.Benchmarks, rep.Evals)
	if prev, ok := cfg.Store.Previous(t.Unit, cfg.Workflow, run.ID()); ok {
		if b, err := os.ReadFile(filepath.Join(cfg.Store.Dir(prev), ReportJSON)); err == nil {
			if old, err := ParseJSON(b); err == nil {
				rep.Regressions = Compare(prev.ID, old, rep, th)
			} else {
				cfg.logf("regressions: skipping run %s: %v", prev.ID, err)
			}
		}
	}
	if err := WriteReports(run, rep); err != nil {
		_ = run.Finish(runs.StatusFailed, "", err.Error())
		return nil, err
	}
	st := runs.StatusComplete
	if incomplete(rep) {
		st = runs.StatusIncomplete
	}
	verdict := runs.VerdictFail
	if rep.Acceptance.Passed {
		verdict = runs.VerdictPass
	}
	if err := run.Finish(st, verdict, ""); err != nil {
		return nil, err
	}
	cfg.logf("run %s: %s, acceptance %s", run.ID(), st, verdict)
	return &Outcome{Manifest: run.Manifest(), Dir: run.Dir, Report: rep}, nil
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

func runEvals(ctx context.Context, cfg *Config, t Target, limit sweep.Limit, run *runs.Run) *EvalSection {
	names := cfg.EvalTasks
	if len(names) == 0 {
		names = ChooseEvalTasks(t.CatalogModel, cfg.EvalDatasets)
	}
	api := evalclient.API(cfg.EvalAPI)
	if api == "" {
		api = evalclient.Completions
	}
	cfg.logf("evals: %s (limit %s)", strings.Join(names, ", "), limit)
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	conc := cfg.EvalConcurrency
	if conc < 1 {
		conc = 8
	}
	shots, genToks := -1, 0
	if t.MaxModelLen > 0 && t.MaxModelLen < smallContext {
		// Few-shot prompts and a 256-token budget overflow a small
		// context (a tiny test model): ask zero-shot with a quarter of
		// the context to generate, and say so in the report.
		shots, genToks = 0, min(256, t.MaxModelLen/4)
		cfg.evalNote = fmt.Sprintf("0-shot, max_gen_toks %d (server context %d tokens)", genToks, t.MaxModelLen)
		cfg.logf("evals: %s", cfg.evalNote)
	}
	oc, err := workflow.Run(ctx, workflow.Config{
		BaseURL: t.BaseURL, Model: t.Model, API: api, APIKey: t.APIKey, CatalogModel: t.CatalogModel,
		Tasks: names, Datasets: cfg.EvalDatasets, NumFewShot: shots, MaxGenToks: genToks, LimitMode: string(limit),
		Concurrency: conc, MaxRetries: 3, Timeout: timeout, Seed: 1234,
		ErrorPolicy: runner.ErrorsAsWrong, OutputDir: filepath.Join(run.Dir, "evals"), CacheDir: "-", Version: cfg.Version,
	})
	if err != nil {
		return &EvalSection{Rows: []EvalRow{}, Error: err.Error()}
	}
	files := append([]string{oc.Files.Results, oc.Files.Summary}, oc.Files.Samples...)
	if err := run.AddFiles(files...); err != nil {
		return &EvalSection{Rows: EvalRowsOf(&oc.Run), Error: err.Error()}
	}
	return &EvalSection{Rows: EvalRowsOf(&oc.Run)}
}

func runBenchmarks(ctx context.Context, cfg *Config, t Target, spec *catalog.Spec, limit sweep.Limit, run *runs.Run, md *Metadata) *BenchSection {
	sec := &BenchSection{}
	limits := sweep.Limits{MaxConcurrency: 1, MaxContext: t.MaxModelLen, MaxTokensAllUsers: t.MaxModelLen}
	var targets []catalog.PerfTarget
	factors := grade.Factors(nil)
	var required []string
	if spec != nil {
		limits = sweep.LimitsOf(spec)
		targets = spec.Targets
		factors = grade.Factors(spec.PerfTargetsMap)
		required = catalog.RequiredTiers(spec.Status)
	}
	if limits.MaxContext < 1 {
		limits.MaxContext, limits.MaxTokensAllUsers = 4096, 4096
	}
	sec.TierFactors = map[string]float64{}
	for _, f := range factors {
		sec.TierFactors[f.Name] = f.Factor
	}
	pts, err := sweep.Plan(limits, targets, sweep.Options{Limit: limit})
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	cfg.logf("benchmarks: %d points", len(pts))
	header := http.Header{}
	if t.APIKey != "" {
		header.Set("Authorization", "Bearer "+t.APIKey)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	base := bench.PointConfig{
		Client: benchclient.Config{BaseURL: t.BaseURL, API: benchclient.Completions, Model: t.Model, Header: header,
			IgnoreEOS: true, ContinuousUsage: true, RequestTimeout: timeout},
		Dataset:     bench.DatasetConfig{Name: "random"},
		Load:        loadgen.Options{RequestRate: math.Inf(1), Burstiness: 1, NumWarmups: 1, RequestIDPrefix: "release-"},
		Percentiles: []float64{50, 90, 99}, ServerTokenizer: true, Simulated: t.Simulated,
	}
	bmd := report.Metadata{ReportID: run.ID(), Model: md.Model, Device: md.Device, Unit: t.Unit, BaseURL: t.BaseURL,
		Endpoint: base.Client.API.Path(), ModelStatus: md.ModelStatus, Limit: string(limit), Simulated: t.Simulated,
		TargetsSource: md.TargetsSource}
	res, err := bench.RunSweep(ctx, bench.SweepConfig{Base: base, Points: pts, Factors: factors, Required: required,
		Metadata: bmd, OutDir: filepath.Join(run.Dir, "benchmarks"),
		OnPoint: func(i int, p sweep.Point) {
			cfg.logf("benchmarks: point %d/%d isl %d osl %d concurrency %d (%d prompts)", i+1, len(pts), p.ISL, p.OSL, p.Concurrency, p.NumPrompts)
		}})
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	sec.Rows = BenchRowsOf(res.Points)
	if err := run.AddFiles(res.Files...); err != nil {
		sec.Error = err.Error()
	}
	return sec
}
