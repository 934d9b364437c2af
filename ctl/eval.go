package ctl

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/evalsuite/workflow"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/limit"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:      "eval",
		Usage:     "run accuracy evals (lm-eval style) against a unit or any OpenAI-compatible server",
		ArgsUsage: "[UNIT]",
		Description: `Evaluates --task(s) against UNIT through ttisd (address, model and auth from
the daemon) or against --url (no daemon needed), the way
lm-evaluation-harness's local-completions / local-chat-completions models
do. The run goes to the results store (<state>/runs/<unit>/<run-id>/):
lm-eval's results_<ts>.json and samples_<task>_<ts>.jsonl, summary_<ts>.md,
and report.md/.json/.html with the verdict. Without --task the catalog's
reference tasks for the model run (those ttis cannot run are reported as
not measured). --list-tasks shows the tasks. A task given no --dataset
reads its Hugging Face dataset, pulled into the Hub cache first (see
"ttisctl dataset --help"; --offline reads only the cache).

--limit takes a count, a fraction in (0,1), or a mode: ` + limit.Names() + `
(per-task limits from the catalog's reference when it has one). Scores are
graded against the catalog's reference for --catalog-model (default
--model): PASS when score/reference >= 1-tolerance. An interrupted run
resumes with --resume RUN: answers already cached in it are not requested
again.

` + workflowExitHelp,
		Flags: append(append(workflowFlags(), hubFlags()...),
			choice(&cli.StringFlag{Name: "api", Value: "completions", Usage: "completions or chat"}, "completions", "chat"),
			&cli.BoolFlag{Name: "apply-chat-template", Usage: "completions API: send the prompt through the server's chat template as one user turn (lm-eval's --apply_chat_template; releases do this)"},
			&cli.StringSliceFlag{Name: "task", Aliases: []string{"t"}, Usage: "task to run (repeatable or comma-separated; default: the catalog's references)"},
			&cli.StringSliceFlag{Name: "dataset", Usage: "local dataset file: PATH (one task) or TASK=PATH"},
			&cli.StringSliceFlag{Name: "fewshot-dataset", Usage: "local file of few-shot examples: PATH or TASK=PATH"},
			&cli.IntFlag{Name: "num-fewshot", Value: -1, Usage: "few-shot examples per prompt (default: the task's)"},
			&cli.StringFlag{Name: "format", Usage: "dataset format: jsonl, csv or parquet (default: from the extension)"},
			&cli.StringSliceFlag{Name: "field", Usage: "field mapping TASK_FIELD=COLUMN (repeatable)"},
			&cli.StringFlag{Name: "columns", Usage: "column names of a header-less CSV, comma-separated"},
			&cli.IntFlag{Name: "size", Usage: "documents generated for built-in tasks (default 200; RULER tasks: samples per length, default 500)"},
			&cli.IntSliceFlag{Name: "max-seq-lengths", Usage: "prompt lengths in the server's tokens of tasks generated to a length (RULER's max_seq_lengths; default 4096)"},
			choice(&cli.StringFlag{Name: "limit", Usage: "count, fraction, or mode (" + limit.Names() + ")"}, limitModes()...),
			&cli.IntFlag{Name: "max-gen-toks", Usage: "override the tasks' generation budget"},
			&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: 8, Usage: "documents in flight"},
			&cli.IntFlag{Name: "max-retries", Value: 3, Usage: "attempts per request (exponential back-off)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "bound on one request attempt"},
			&cli.StringFlag{Name: "asr-url", Usage: "speech-recognition server (a whisper unit) that re-transcribes a text-to-speech unit's speech (tts_generation)"},
			&cli.StringFlag{Name: "asr-model", Usage: "model name sent to --asr-url"},
			&cli.IntFlag{Name: "seed", Value: 1234, Usage: "seed sent with every request"},
			&cli.StringFlag{Name: "think-end-token", Usage: "score only the text after this token (e.g. </think>) of reasoning models"},
			&cli.StringFlag{Name: "errors-as", Value: "wrong", Usage: "errored samples count as wrong, or exclude them"},
			&cli.BoolFlag{Name: "list-tasks", Usage: "list the tasks and exit"},
		),
		Action:       runEval,
		BashComplete: completeUnits,
	}
}

// listTasks prints every task ttis knows, including those it lists as
// not runnable (with why), and where each one's data comes from.
func listTasks(c *cli.Context) error {
	list := tasks.List()
	if asJSON, err := jsonOutput(c); err != nil {
		return err
	} else if asJSON {
		return writeJSON(c.App.Writer, list)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 4, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tTYPE\tDATA\tREPRODUCES\tCHECKED\tDESCRIPTION")
	for _, t := range list {
		data := "local file"
		switch {
		case t.NotRunnable != "":
			data, t.Description = "not runnable", t.NotRunnable
		case t.Builtin:
			data = "built-in"
		case len(t.Variants) > 0:
			data = "by model (--dataset FOLDER of published files, or hf)"
		case len(t.Data) > 0:
			data = "hf:" + t.Data[0].Repo
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Output, data, reproduces(t.Coverage), t.Coverage.Checked, t.Description)
	}
	return tw.Flush()
}

// reproduces is a task's Coverage.Reproduces with the asset folders a
// full reproduction needs.
func reproduces(c tasks.Coverage) string {
	if len(c.Assets) == 0 {
		return c.Reproduces
	}
	var names []string
	for _, a := range c.Assets {
		names = append(names, a.Folder+"/")
	}
	return c.Reproduces + " (with " + strings.Join(names, ", ") + ")"
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

func runEval(c *cli.Context) error {
	if c.Bool("list-tasks") {
		return listTasks(c)
	}
	if err := applyWorkflowArgs(c); err != nil {
		return err
	}
	ec, mode, err := evalTemplate(c)
	if err != nil {
		return err
	}
	cfg := release.Config{Workflow: release.WorkflowEvals, Limit: mode, Evals: &ec}
	return runWorkflow(c, "eval", 24*time.Hour, cfg, nil, func(out *release.Outcome) {
		if out.Evals == nil || len(out.Evals.Run.Tasks) == 0 {
			return
		}
		w := safeWriter{c.App.Writer}
		fmt.Fprint(w, results.Markdown(out.Evals.Run))
		f := out.Evals.Files
		fmt.Fprintf(w, "\nResults: %s\nSamples: %s\nSummary: %s\n", f.Results, strings.Join(f.Samples, ", "), f.Summary)
	})
}

// evalTemplate turns the flags into the eval step's configuration and the
// run size.
func evalTemplate(c *cli.Context) (workflow.Config, limit.Mode, error) {
	api, err := openai.ParseAPI(c.String("api"))
	if err != nil {
		return workflow.Config{}, "", usageError(c, "--api: %v", err)
	}
	mapping, err := dataset.ParseMapping(c.StringSlice("field"))
	if err != nil {
		return workflow.Config{}, "", usageError(c, "--field: %v", err)
	}
	var columns []string
	if s := c.String("columns"); s != "" {
		columns = splitList([]string{s})
	}
	ec := workflow.Config{API: api, ApplyChatTemplate: c.Bool("apply-chat-template"), Tasks: splitList(c.StringSlice("task")),
		Datasets: splitTaskPaths(c.StringSlice("dataset")), FewShot: splitTaskPaths(c.StringSlice("fewshot-dataset")),
		NumFewShot: c.Int("num-fewshot"), Format: c.String("format"), Mapping: mapping, Columns: columns,
		BuiltinSize: c.Int("size"), SeqLengths: c.IntSlice("max-seq-lengths"), MaxGenToks: c.Int("max-gen-toks"), Concurrency: c.Int("concurrency"),
		MaxRetries: c.Int("max-retries"), Timeout: c.Duration("timeout"), Seed: c.Int("seed"),
		ErrorPolicy: runner.ErrorPolicy(c.String("errors-as")), ThinkEndToken: c.String("think-end-token"),
		ASRURL: c.String("asr-url"), ASRModel: c.String("asr-model")}
	mode := limit.DefaultPlan
	if l := c.String("limit"); l != "" {
		if m, err := limit.Parse(l); err == nil {
			mode = m
		} else if _, err := limit.ParseDocs(l); err == nil {
			ec.Limit = l
		} else {
			return workflow.Config{}, "", usageError(c, "--limit %q: want a count, a fraction in (0,1), or %s", l, limit.Names())
		}
	}
	return ec, mode, nil
}
