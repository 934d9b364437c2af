package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"

	"github.com/ttis-dev/ttis/evalsuite/client"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
)

// Exit codes of ttisctl eval beyond 0 (every sample scored, no check
// failed) and 1 (could not run).
const (
	// evalExitErrored: some samples errored (counted as the policy says).
	evalExitErrored = 2
	// evalExitFailed: an accuracy check against the catalog failed.
	evalExitFailed = 3
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:      "eval",
		Usage:     "run accuracy evals (lm-eval style) against any OpenAI-compatible server",
		ArgsUsage: "[UNIT]",
		Description: `Evaluates --task(s) against --url (no daemon needed), or against UNIT (flags go
before it) through
ttisd (address, model and auth from the daemon; results under
<state>/runs/<unit>/<run-id>/), the way lm-evaluation-harness's
local-completions / local-chat-completions models do, and writes lm-eval's
results_<ts>.json and samples_<task>_<ts>.jsonl plus summary_<ts>.md.

Tasks: gsm8k, mmlu, mmlu_generative and ifeval read a local dataset file
(--dataset; nothing is downloaded); ttis_arith, ttis_arith_mc and
ttis_arith_mc_generative are generated and need none. --list-tasks shows them.

--limit takes a count, a fraction in (0,1), or a mode: smoke, ci-commit,
ci-nightly, ci-long, full (per-task limits from the catalog's reference when it
has one). Scores are graded against the catalog's reference for
--catalog-model (default --model): PASS when score/reference >= 1-tolerance.
An interrupted run resumes with --resume <its results directory>: answers
already cached there are not requested again.
Exit status: 0 ok, 1 could not run, 2 some samples errored, 3 a check failed.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "server root, e.g. http://127.0.0.1:8000"},
			&cli.StringFlag{Name: "model", Usage: "model name to send (default: the first of GET /v1/models)"},
			&cli.StringFlag{Name: "catalog-model", Usage: "catalog model whose reference scores grade the run (default: --model)"},
			&cli.StringFlag{Name: "api", Value: "completions", Usage: "completions or chat"},
			&cli.StringFlag{Name: "api-key", EnvVars: []string{"OPENAI_API_KEY"}, Usage: "bearer token"},
			&cli.StringFlag{Name: "api-key-file", Usage: "file holding the bearer token"},
			&cli.StringSliceFlag{Name: "task", Aliases: []string{"t"}, Usage: "task to run (repeatable or comma-separated)"},
			&cli.StringSliceFlag{Name: "dataset", Usage: "local dataset file: PATH (one task) or TASK=PATH"},
			&cli.StringSliceFlag{Name: "fewshot-dataset", Usage: "local file of few-shot examples: PATH or TASK=PATH"},
			&cli.IntFlag{Name: "num-fewshot", Value: -1, Usage: "few-shot examples per prompt (default: the task's)"},
			&cli.StringFlag{Name: "format", Usage: "dataset format: jsonl, csv or parquet (default: from the extension)"},
			&cli.StringSliceFlag{Name: "field", Usage: "field mapping TASK_FIELD=COLUMN (repeatable)"},
			&cli.StringFlag{Name: "columns", Usage: "column names of a header-less CSV, comma-separated"},
			&cli.IntFlag{Name: "size", Usage: "documents generated for built-in tasks (default 200)"},
			&cli.StringFlag{Name: "limit", Usage: "count, fraction, or mode (smoke, ci-commit, ci-nightly, ci-long, full)"},
			&cli.IntFlag{Name: "max-gen-toks", Usage: "override the tasks' generation budget"},
			&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: 8, Usage: "documents in flight"},
			&cli.IntFlag{Name: "max-retries", Value: 3, Usage: "attempts per request (exponential back-off)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "bound on one request attempt"},
			&cli.IntFlag{Name: "seed", Value: 1234, Usage: "seed sent with every request"},
			&cli.StringFlag{Name: "think-end-token", Usage: "score only the text after this token (e.g. </think>) of reasoning models"},
			&cli.StringFlag{Name: "errors-as", Value: "wrong", Usage: "errored samples count as wrong, or exclude them"},
			&cli.StringFlag{Name: "results-dir", Usage: "where results go (url mode default ./ttis-eval/<run-id>; unit mode: the daemon's runs dir)"},
			&cli.StringFlag{Name: "cache-dir", Usage: "request cache (default <results-dir>/cache; - for none)"},
			&cli.StringFlag{Name: "resume", Usage: "finish an interrupted run: its results directory (answers already cached are not requested again)"},
			&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar"},
			&cli.BoolFlag{Name: "list-tasks", Usage: "list the tasks and exit"},
		},
		Action: runEval,
	}
}

// evalTarget is the server an eval runs against.
type evalTarget struct {
	baseURL, model, catalogModel, apiKey, resultsDir string
}

// resolveEvalUnit asks ttisd for a unit's address, model and auth, and
// puts the results under the daemon's store (<runs>/<unit>/<run-id>).
func resolveEvalUnit(c *cli.Context, t *evalTarget, runID string) error {
	name := c.Args().First()
	dc := daemonclient.New(c.String("socket"))
	unit, err := dc.Unit(c.Context, name, 0)
	if err != nil {
		return fmt.Errorf("unit %s: %w", name, err)
	}
	info, err := dc.Info(c.Context)
	if err != nil {
		return fmt.Errorf("daemon info: %w", err)
	}
	if unit.State != api.StateActive {
		return fmt.Errorf("unit %s is %s (%s), not active", name, unit.State, unit.SubState)
	}
	host, port, err := net.SplitHostPort(unit.Listen)
	if err != nil {
		return fmt.Errorf("unit %s: listen address %q: %w", name, unit.Listen, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	t.baseURL = "http://" + net.JoinHostPort(host, port)
	// A cpu unit names a model file: the server reports its own name, and
	// the catalog has no reference for it.
	if !strings.HasSuffix(strings.ToLower(unit.Model), ".gguf") {
		if t.model == "" {
			t.model = unit.Model
		}
		if t.catalogModel == "" {
			t.catalogModel = unit.Model
		}
	}
	runs := info.RunsDir
	if runs == "" {
		runs = filepath.Join(info.StateDir, "runs")
	}
	t.resultsDir = filepath.Join(runs, name, runID)
	tok, err := unitBearer(name, unit.AuthMode, unit.AuthSecretFile, "eval", 24*time.Hour, t.apiKey != "")
	if err != nil {
		return err
	}
	if tok != "" {
		t.apiKey = tok
	}
	return nil
}

// splitTaskPaths reads PATH or TASK=PATH values.
func splitTaskPaths(vals []string) map[string]string {
	out := map[string]string{}
	for _, v := range vals {
		if k, p, ok := strings.Cut(v, "="); ok && !strings.ContainsAny(k, `/\.`) {
			out[k] = p
		} else {
			out[""] = v
		}
	}
	return out
}

func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func runEval(c *cli.Context) error {
	fail := func(format string, a ...any) error {
		return cli.Exit("ttisctl eval: "+fmt.Sprintf(format, a...), 1)
	}
	out := c.App.Writer
	if c.Bool("list-tasks") {
		tw := tabwriter.NewWriter(out, 4, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tTYPE\tDATA\tDESCRIPTION")
		for _, t := range tasks.List() {
			data := "local file"
			if t.Builtin {
				data = "built-in"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Output, data, t.Description)
		}
		return tw.Flush()
	}
	taskNames := splitList(c.StringSlice("task"))
	if len(taskNames) == 0 {
		return fail("give at least one --task (see --list-tasks)")
	}
	key := c.String("api-key")
	if f := c.String("api-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fail("--api-key-file: %v", err)
		}
		key = strings.TrimSpace(string(b))
	}
	runID := time.Now().UTC().Format("20060102T150405Z") + "-eval"
	t := evalTarget{baseURL: c.String("url"), model: c.String("model"), catalogModel: c.String("catalog-model"), apiKey: key}
	switch {
	case t.baseURL != "" && c.NArg() > 0:
		return fail("give either UNIT or --url, not both")
	case t.baseURL != "":
		t.resultsDir = filepath.Join("ttis-eval", runID)
	case c.NArg() == 1:
		if err := resolveEvalUnit(c, &t, runID); err != nil {
			return fail("%v", err)
		}
	default:
		return fail("give a UNIT or --url URL (the server root)")
	}
	if d := c.String("results-dir"); d != "" {
		t.resultsDir = d
	}
	if d := c.String("resume"); d != "" {
		if c.String("results-dir") != "" {
			return fail("--resume already names the results directory; drop --results-dir")
		}
		if _, err := os.Stat(filepath.Join(d, "cache")); err != nil {
			return fail("--resume %s: no cache of an earlier run there (%v)", d, err)
		}
		t.resultsDir = d
	}
	key = t.apiKey
	model := t.model
	if model == "" {
		m, err := client.FirstModel(c.Context, nil, t.baseURL, key)
		if err != nil {
			return fail("no --model given and %v", err)
		}
		model = m
	}
	mapping, err := dataset.ParseMapping(c.StringSlice("field"))
	if err != nil {
		return fail("--field: %v", err)
	}
	var columns []string
	if s := c.String("columns"); s != "" {
		columns = splitList([]string{s})
	}
	cfg := workflow.Config{
		BaseURL: t.baseURL, Model: model, API: client.API(c.String("api")), APIKey: key,
		CatalogModel: t.catalogModel, Tasks: taskNames,
		Datasets: splitTaskPaths(c.StringSlice("dataset")), FewShot: splitTaskPaths(c.StringSlice("fewshot-dataset")),
		NumFewShot: c.Int("num-fewshot"), Format: c.String("format"), Mapping: mapping, Columns: columns,
		BuiltinSize: c.Int("size"), MaxGenToks: c.Int("max-gen-toks"), Concurrency: c.Int("concurrency"),
		MaxRetries: c.Int("max-retries"), Timeout: c.Duration("timeout"), Seed: c.Int("seed"),
		ErrorPolicy: runner.ErrorPolicy(c.String("errors-as")), CacheDir: c.String("cache-dir"), Version: c.App.Version,
		ThinkEndToken: c.String("think-end-token"),
	}
	switch l := c.String("limit"); l {
	case "smoke", "ci-commit", "ci-nightly", "ci-long", "full":
		cfg.LimitMode = l
	default:
		cfg.Limit = l
	}
	cfg.OutputDir = t.resultsDir
	if !c.Bool("no-progress") && term.IsTerminal(int(os.Stderr.Fd())) {
		cfg.Progress = os.Stderr
	}
	oc, err := workflow.Run(c.Context, cfg)
	if err != nil {
		if c.Context.Err() != nil && errors.Is(err, c.Context.Err()) {
			return cli.Exit(fmt.Sprintf("ttisctl eval: %v\nresume with: ttisctl eval --resume %s (same flags)", err, cfg.OutputDir), 130)
		}
		return fail("%v", err)
	}
	if c.String("output") == "json" {
		b, err := json.MarshalIndent(map[string]any{"files": oc.Files, "results": results.Build(oc.Run)}, "", "  ")
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintln(out, string(b))
	} else {
		fmt.Fprint(out, results.Markdown(oc.Run))
		fmt.Fprintf(out, "\nResults: %s\nSamples: %s\nSummary: %s\n", oc.Files.Results, strings.Join(oc.Files.Samples, ", "), oc.Files.Summary)
	}
	for _, g := range oc.Run.Grades {
		if g.Check == results.Fail {
			return cli.Exit("", evalExitFailed)
		}
	}
	for _, t := range oc.Run.Tasks {
		if t.Errors.Errored > 0 {
			return cli.Exit("", evalExitErrored)
		}
	}
	return nil
}
