// Package workflow runs a whole evaluation: it resolves the tasks and
// their datasets, the limit mode and the catalog references, evaluates each
// task against one server, grades the scores and writes the result files.
// `ttisctl eval` and the daemon's scheduled evals both call Run.
package workflow

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/evalsuite/client"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Config is one evaluation.
type Config struct {
	// BaseURL is the server root; Model the name sent; API completions
	// or chat; APIKey an optional bearer token.
	BaseURL string
	Model   string
	API     client.API
	APIKey  string
	// CatalogModel selects the reference scores (default Model).
	CatalogModel string
	Tasks        []string
	// Datasets maps a task to its local file; the empty key applies to
	// the only task. FewShot does the same for few-shot pools.
	Datasets map[string]string
	FewShot  map[string]string
	// NumFewShot overrides every task's shot count (negative: default).
	NumFewShot int
	Format     string
	Mapping    dataset.Mapping
	Columns    []string
	// BuiltinSize is the number of documents of built-in tasks (0 = default).
	BuiltinSize int
	// LimitMode is smoke, ci-commit, ci-nightly, ci-long or full; Limit a
	// count or fraction that overrides it.
	LimitMode string
	Limit     string
	// MaxGenToks overrides the tasks' generation budget (0 = task default).
	MaxGenToks  int
	Concurrency int
	MaxRetries  int
	Timeout     time.Duration
	Seed        int
	ErrorPolicy runner.ErrorPolicy
	// ThinkEndToken strips reasoning before scoring (see runner.Options).
	ThinkEndToken string
	// OutputDir receives the result files; CacheDir the resume cache
	// (default OutputDir/cache; "-" disables it).
	OutputDir string
	CacheDir  string
	Progress  io.Writer
	Version   string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Outcome is what a finished evaluation produced.
type Outcome struct {
	Run   results.Run
	Files results.Files
}

// modeKey maps a limit mode to the reference's limit_samples key.
var modeKey = map[string]string{"smoke": "smoke_test", "ci-commit": "ci_commit", "ci-nightly": "ci_nightly", "ci-long": "ci_long", "full": ""}

// defaultModeLimit applies when the catalog gives no per-task limit for
// the mode: smoke runs 3 documents (as tt-inference-server's smoke-test
// --limit 3), ci-commit 10, the others everything.
var defaultModeLimit = map[string]string{"smoke": "3", "ci-commit": "10", "ci-nightly": "", "ci-long": "", "full": ""}

// resolveLimit picks a task's limit from the explicit flag, the catalog
// reference's limit_samples for the mode, or the mode's default.
func resolveLimit(cfg Config, ref *catalog.EvalRef) (runner.Limit, string, error) {
	if cfg.Limit != "" {
		l, err := runner.ParseLimit(cfg.Limit)
		return l, l.String(), err
	}
	mode := cfg.LimitMode
	if mode == "" {
		mode = "full"
	}
	key, ok := modeKey[mode]
	if !ok {
		return runner.Limit{}, "", fmt.Errorf("limit mode %q: want smoke, ci-commit, ci-nightly, ci-long or full", mode)
	}
	if ref != nil && key != "" {
		if v, ok := ref.LimitSamples[key]; ok {
			if v == nil {
				return runner.Limit{}, "full", nil
			}
			l, err := runner.ParseLimit(fmt.Sprint(*v))
			return l, l.String(), err
		}
	}
	l, err := runner.ParseLimit(defaultModeLimit[mode])
	return l, l.String(), err
}

func pick(m map[string]string, task string, only bool) string {
	if v, ok := m[task]; ok {
		return v
	}
	if only {
		return m[""]
	}
	return ""
}

// Run evaluates every task and writes the results.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if len(cfg.Tasks) == 0 {
		return nil, fmt.Errorf("no tasks to run")
	}
	if cfg.OutputDir == "" {
		return nil, fmt.Errorf("no output directory")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	for k := range cfg.Datasets {
		if k != "" && !contains(cfg.Tasks, k) {
			return nil, fmt.Errorf("dataset given for task %q, which is not being run", k)
		}
	}
	if _, ok := cfg.Datasets[""]; ok && len(cfg.Tasks) > 1 {
		return nil, fmt.Errorf("with several tasks, name each dataset's task (TASK=PATH)")
	}
	cl, err := client.New(client.Config{BaseURL: cfg.BaseURL, Model: cfg.Model, API: cfg.API, APIKey: cfg.APIKey,
		MaxRetries: cfg.MaxRetries, Timeout: cfg.Timeout, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	var cache *runner.Cache
	if cfg.CacheDir != "-" {
		dir := cfg.CacheDir
		if dir == "" {
			dir = filepath.Join(cfg.OutputDir, "cache")
		}
		if cache, err = runner.OpenCache(dir); err != nil {
			return nil, err
		}
	}
	refModel := cfg.CatalogModel
	if refModel == "" {
		refModel = cfg.Model
	}
	run := results.Run{Model: cfg.Model, BaseURL: cl.BaseURL(), API: string(cl.API()), Concurrency: max(cfg.Concurrency, 1),
		LimitMode: cfg.LimitMode, Seed: cfg.Seed, MaxRetries: cfg.MaxRetries, Start: now(), Version: cfg.Version}
	var limits []string
	only := len(cfg.Tasks) == 1
	for _, name := range cfg.Tasks {
		task, err := tasks.Build(name, tasks.Source{
			Dataset: pick(cfg.Datasets, name, only), FewShotDataset: pick(cfg.FewShot, name, only), NumFewShot: cfg.NumFewShot,
			Format: cfg.Format, Mapping: cfg.Mapping, Columns: cfg.Columns, Size: cfg.BuiltinSize,
		})
		if err != nil {
			return nil, err
		}
		if cfg.MaxGenToks > 0 {
			task.Gen.MaxGenToks = cfg.MaxGenToks
		}
		var refp *catalog.EvalRef
		if ref, ok := catalog.EvalRefFor(refModel, name); ok {
			refp = &ref
		}
		limit, limitStr, err := resolveLimit(cfg, refp)
		if err != nil {
			return nil, err
		}
		limits = append(limits, name+"="+limitStr)
		res, err := runner.Run(ctx, task, cl, runner.Options{Concurrency: cfg.Concurrency, Limit: limit, Cache: cache,
			ErrorPolicy: cfg.ErrorPolicy, Progress: cfg.Progress, ThinkEndToken: cfg.ThinkEndToken})
		if err != nil {
			return nil, err
		}
		run.Tasks = append(run.Tasks, res)
		run.Grades = append(run.Grades, results.GradeTask(name, res.Aggregates, refp, modeKey[cfg.LimitMode]))
	}
	run.Limit = strings.Join(limits, ",")
	run.End = now()
	files, err := results.Write(cfg.OutputDir, run)
	if err != nil {
		return nil, err
	}
	return &Outcome{Run: run, Files: files}, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
