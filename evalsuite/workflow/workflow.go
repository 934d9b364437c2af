// Package workflow runs a whole evaluation: it resolves the tasks and
// their datasets, the limit mode and the catalog references, evaluates each
// task against one server, grades the scores and writes the result files.
// `ttisctl eval` and the daemon's scheduled evals both call Run.
package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/evalsuite/backend"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/hardened"
	"github.com/ttis-dev/ttis/units/limit"
)

// Config is one evaluation.
type Config struct {
	// BaseURL is the server root; Model the name sent; API completions
	// or chat; APIKey an optional bearer token.
	BaseURL string
	Model   string
	API     openai.API
	// ApplyChatTemplate sends completions-API generation through the
	// server's chat template, as lm-eval's --apply_chat_template does
	// (see evalsuite/backend.Config).
	ApplyChatTemplate bool
	// APIKey (a bearer token) and Header are sent with every request;
	// neither is ever written to a file.
	APIKey string      `json:"-"`
	Header http.Header `json:"-"`
	// CatalogModel selects the reference scores (default Model).
	CatalogModel string
	Tasks        []string
	// Datasets maps a task to its local file; the empty key applies to
	// the only task. FewShot does the same for few-shot pools.
	Datasets map[string]string
	FewShot  map[string]string
	// Hub, when set, supplies the data of every task given no local file,
	// and the Hub inputs a generator reads beside its local folder (RULER's
	// essays): the splits the task declares are pulled (or, offline, found
	// in the cache) before the task is built. HubModel is the catalog model's
	// Hub repository, for Meta's per-model evaluation sets. Pulled holds
	// data a caller pulled already (bench/release plans with it).
	Hub      *hub.Client               `json:"-"`
	HubModel string                    `json:"-"`
	Pulled   map[string]*taskdata.Data `json:"-"`
	// NumFewShot overrides every task's shot count (negative: default).
	NumFewShot int
	Format     string
	Mapping    dataset.Mapping
	Columns    []string
	// BuiltinSize is the number of documents of built-in tasks (0 = default).
	BuiltinSize int
	// SeqLengths are the prompt lengths, in the server's tokens, of tasks
	// generated to a length (RULER's max_seq_lengths metadata; empty =
	// the task's default).
	SeqLengths []int
	// LimitMode is the run size (default full); Limit a count or fraction
	// that overrides it; TaskLimits one task's count or fraction, over
	// both.
	LimitMode  limit.Mode
	Limit      string
	TaskLimits map[string]string
	// MaxGenToks overrides the tasks' generation budget (0 = task default).
	MaxGenToks  int
	Concurrency int
	MaxRetries  int
	Timeout     time.Duration
	Seed        int
	ErrorPolicy runner.ErrorPolicy
	// ThinkEndToken strips reasoning before scoring (see runner.Options).
	ThinkEndToken string
	// ASRURL is a speech-recognition server (a whisper unit) that
	// re-transcribes the speech of text-to-speech tasks, asked for
	// ASRModel; tasks that need one do not run without it.
	ASRURL   string
	ASRModel string
	// CLIPRevision is the commit of the CLIP checkpoint image and video
	// tasks score with (empty: the pinned one; tests give their fake
	// Hub's). AssetReplacements replace the published files those tasks read, by
	// file name, with files named by their own digests (tests).
	CLIPRevision      string                 `json:"-"`
	AssetReplacements map[string]tasks.Asset `json:"-"`
	// OutputDir receives the result files; CacheDir the resume cache
	// (default OutputDir/cache; "-" disables it). ResultsDir, when set,
	// receives results_*.json, samples_*.jsonl and summary_*.md instead
	// (a release files them where run.py's report looks:
	// eval_<model>_<device>/<org>__<repo>/); datasets.json stays in
	// OutputDir.
	OutputDir  string
	ResultsDir string
	CacheDir   string
	Progress   runner.Progress `json:"-"`
	Version    string
	// Now is the clock (time.Now when nil).
	Now func() time.Time `json:"-"`
}

// ASRMissing is why a task that re-transcribes speech does not run.
const ASRMissing = "it re-transcribes the unit's speech with a speech-recognition server: pass --asr-url (a whisper unit's URL)"

// Outcome is what a finished evaluation produced. Tasks that could not
// run (unknown, no dataset, a request shape the server cannot answer) are
// in NotRun with the reason; the others are in Run. Files is empty when
// no task ran.
type Outcome struct {
	Run    results.Run
	Files  results.Files
	NotRun map[string]string
	// Data is the Hub data each task read (repository, revision, commit,
	// files and digests); DataFile the datasets.json that records it
	// (empty when no task read Hub data).
	Data     map[string]*taskdata.Data
	DataFile string
}

// DataFileName records the Hub data of an evaluation in its output folder.
const DataFileName = "datasets.json"

// resolveLimit picks a task's limit from the explicit flag, the catalog
// reference's limit_samples for the mode, or the mode's default.
func resolveLimit(cfg Config, task string, ref *catalog.EvalRef) (limit.Docs, string, error) {
	if v, ok := cfg.TaskLimits[task]; ok {
		l, err := limit.ParseDocs(v)
		return l, l.String(), err
	}
	if cfg.Limit != "" {
		l, err := limit.ParseDocs(cfg.Limit)
		return l, l.String(), err
	}
	if l, ok := tasks.DefaultLimit(task, cfg.catalogModel()); ok {
		// The media evals keep the reference's own counts whatever the
		// run size: a grade needs 100 or 5000 prompts, 5 videos.
		lim, err := limit.ParseDocs(l)
		return lim, lim.String(), err
	}
	mode := cfg.LimitMode
	if mode == "" {
		mode = limit.DefaultPlan
	}
	mode, err := limit.Parse(string(mode))
	if err != nil {
		return limit.Docs{}, "", err
	}
	key := mode.EvalKey()
	if ref != nil && key != "" {
		if v, ok := ref.LimitSamples[key]; ok {
			if v == nil {
				return limit.Docs{}, "full", nil
			}
			l, err := limit.DocsOf(*v)
			if err != nil {
				err = fmt.Errorf("catalog limit_samples %s of %s: %w", key, task, err)
			}
			return l, l.String(), err
		}
	}
	l, err := limit.ParseDocs(mode.DefaultEvalLimit())
	return l, l.String(), err
}

// catalogModel is the catalog model evaluated: the one asked for, else
// the served model's name.
func (cfg Config) catalogModel() string {
	if cfg.CatalogModel != "" {
		return cfg.CatalogModel
	}
	return cfg.Model
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
	switch cfg.ErrorPolicy {
	case "", runner.ErrorsAsWrong, runner.ErrorsExcluded:
	default:
		return nil, fmt.Errorf("error policy %q: want %s or %s", cfg.ErrorPolicy, runner.ErrorsAsWrong, runner.ErrorsExcluded)
	}
	srv, err := openai.New(openai.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Header: cfg.Header, MaxConns: max(cfg.Concurrency, 1),
		Timeout: cfg.Timeout, MaxAttempts: cfg.MaxRetries})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	bc := backend.Config{Model: cfg.Model, API: cfg.API, Seed: cfg.Seed, ApplyChatTemplate: cfg.ApplyChatTemplate, ASRModel: cfg.ASRModel}
	if cfg.ASRURL != "" {
		asr, err := openai.New(openai.Config{BaseURL: cfg.ASRURL, MaxConns: max(cfg.Concurrency, 1), Timeout: cfg.Timeout, MaxAttempts: cfg.MaxRetries})
		if err != nil {
			return nil, fmt.Errorf("--asr-url: %w", err)
		}
		defer asr.Close()
		bc.ASR = asr
	}
	cl, err := backend.New(srv, bc)
	if err != nil {
		return nil, err
	}
	// Tasks that cut generated documents to token lengths count them with
	// the server's own tokenizer, special tokens included.
	tok := srv.Tokenizer(cfg.Model)
	countTokens := func(text string) (int, error) {
		ids, err := tok.Tokenize(ctx, text, true)
		return len(ids), err
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
	refModel := cfg.catalogModel()
	nets := newVisionNets(ctx, cfg.Hub, cfg.CLIPRevision)
	defer nets.Close()
	run := results.Run{Model: cfg.Model, BaseURL: cl.BaseURL(), API: string(cl.API()), Concurrency: max(cfg.Concurrency, 1),
		LimitMode: string(cfg.LimitMode), Seed: cfg.Seed, MaxRetries: cfg.MaxRetries, Start: now(), Version: cfg.Version}
	var limits []string
	only := len(cfg.Tasks) == 1
	oc := &Outcome{NotRun: map[string]string{}}
	oc.Data = map[string]*taskdata.Data{}
	for _, name := range cfg.Tasks {
		src := tasks.Source{
			Dataset: pick(cfg.Datasets, name, only), FewShotDataset: pick(cfg.FewShot, name, only), NumFewShot: cfg.NumFewShot,
			Format: cfg.Format, Mapping: cfg.Mapping, Columns: cfg.Columns, Size: cfg.BuiltinSize,
			CountTokens: countTokens, SeqLengths: cfg.SeqLengths,
			Model: path.Base(refModel), Vision: nets, AssetReplacements: cfg.AssetReplacements,
		}
		// A folder given for a task that reads user assets beside its Hub
		// data (IFEval's punkt_tab/ and langdetect_profiles/) holds those.
		if tasks.IsAssetsFolder(name, src.Dataset) {
			src.Assets, src.Dataset = src.Dataset, ""
		}
		if info, ok := tasks.InfoOf(name); ok && info.NeedsASR && cfg.ASRURL == "" {
			oc.NotRun[name] = ASRMissing
			continue
		}
		// A local dataset replaces the task's Hub data, unless that data
		// only supplements it (RULER's essays beside the user's word lists).
		var pullErr error
		if src.Dataset == "" || taskdata.Supplementary(name) {
			data, err := pullData(ctx, cfg, name)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if src.Dataset == "" {
					oc.NotRun[name] = err.Error()
					continue
				}
				// The user's folder may hold the supplement itself (an
				// offline copy of the essays): the build decides.
				pullErr = err
			}
			if data != nil {
				// Hub copies are in the dataset's own layout: no format,
				// mapping or column override applies to them.
				if src.Dataset == "" {
					src.Format, src.Mapping, src.Columns = "", nil, nil
				}
				data.Apply(&src)
				oc.Data[name] = data
			}
		}
		task, err := tasks.Build(name, src)
		if err != nil {
			if pullErr != nil {
				err = fmt.Errorf("%w; pulling its Hub data failed: %v", err, pullErr)
			}
			oc.NotRun[name] = err.Error()
			continue
		}
		if cfg.MaxGenToks > 0 {
			task.Gen.MaxGenToks = cfg.MaxGenToks
		}
		var refp *catalog.EvalRef
		if ref, ok := catalog.EvalRefFor(refModel, name); ok {
			refp = &ref
		}
		limit, limitStr, err := resolveLimit(cfg, name, refp)
		if err != nil {
			return nil, err
		}
		limits = append(limits, name+"="+limitStr)
		res, err := runner.Run(ctx, task, cl, runner.Options{Concurrency: cfg.Concurrency, Limit: limit, Cache: cache,
			ErrorPolicy: cfg.ErrorPolicy, Progress: cfg.Progress, ThinkEndToken: cfg.ThinkEndToken})
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			oc.NotRun[name] = err.Error()
			continue
		}
		run.Tasks = append(run.Tasks, res)
		if rule, ok := task.Config["grading"].(string); ok {
			run.Grades = append(run.Grades, results.GradeMedia(name, rule, res, refp))
		} else {
			run.Grades = append(run.Grades, results.GradeTask(name, res.Aggregates, refp, cfg.LimitMode.EvalKey()))
		}
	}
	run.Limit = strings.Join(limits, ",")
	run.End = now()
	oc.Run = run
	if len(run.Tasks) == 0 {
		return oc, nil
	}
	resultsDir := cfg.ResultsDir
	if resultsDir == "" {
		resultsDir = cfg.OutputDir
	}
	if oc.Files, err = results.Write(resultsDir, run); err != nil {
		return nil, err
	}
	if len(oc.Data) > 0 {
		if oc.DataFile, err = WriteDataFile(cfg.OutputDir, oc.Data); err != nil {
			return nil, err
		}
	}
	return oc, nil
}

// pullData returns the Hub data of a task given no local file: what the
// caller pulled, else a pull through cfg.Hub; nil when the task needs none
// or no Hub is configured. The error of a failed pull says how to fix it.
func pullData(ctx context.Context, cfg Config, name string) (*taskdata.Data, error) {
	if d, ok := cfg.Pulled[name]; ok {
		return d, nil
	}
	if cfg.Hub == nil || !taskdata.PullableFor(name, cfg.HubModel) {
		return nil, nil
	}
	data, err := taskdata.Pull(ctx, cfg.Hub, name, cfg.HubModel)
	if err != nil {
		return nil, PullError(name, cfg.HubModel, err)
	}
	return data, nil
}

// PullError explains a failed pull of a task's data (a
// *taskdata.Problem): what the task reads, why it could not be had, and
// the command that fetches it.
func PullError(task, hubModel string, err error) error {
	return taskdata.Explain(task, hubModel, err)
}

// maxDataFileBytes bounds datasets.json: one entry per task's split.
const maxDataFileBytes = 16 << 20

// ReadDataFile reads the datasets.json of an output folder (none: nil),
// the hardened way (units/hardened): the folder is in the results store.
func ReadDataFile(dir string) ([]*taskdata.Data, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := hardened.ReadFile(ctx, filepath.Join(dir, DataFileName), maxDataFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []*taskdata.Data
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, DataFileName), err)
	}
	return list, nil
}

// WriteDataFile records the Hub data of a run (datasets.json in dir,
// atomically).
func WriteDataFile(dir string, data map[string]*taskdata.Data) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	list := make([]*taskdata.Data, 0, len(names))
	for _, n := range names {
		list = append(list, data[n])
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, DataFileName)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", err
	}
	return p, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
