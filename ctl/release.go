package ctl

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/limit"
)

func releaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "run the release workflow (the benchmark sweep, evals, then spec tests) and write one report with a verdict",
		ArgsUsage: "UNIT | --url URL --device D",
		Description: `Runs the benchmark sweep for --limit, then the catalog's eval references
for the model (those ttis cannot run are listed as not measured; built-in
smoke tasks check the plumbing when no reference can run), then the spec
tests of the model's class (see "ttisctl test --help"), in seed 001's
order, into one run of the results store (<state>/runs/<unit>/<run-id>/),
and writes report.md, report.json and report.html there. The verdict claims only what was
measured: PASS (everything the model's catalog status enforces was
measured and met), FAIL (an enforced check failed), INCOMPLETE (something
required was not measured), UNGRADED (nothing to grade against). Metrics
are compared with the unit's previous complete run taken under the same
conditions; regressions are flagged in the report.

Eval tasks given no --dataset read their Hugging Face datasets, pulled into
the Hub cache first (see "ttisctl dataset --help"); with --offline a task
whose data is not cached is not measured, and the report names the pull
command.

With UNIT, ttisd supplies the address, model, device and auth, and the run
goes to its state folder. With --url, no daemon is needed: --state-dir
(default: the daemon's, if one answers, else ./ttis-state) receives it.

` + workflowExitHelp,
		Flags: append(append(workflowFlags(), hubFlags()...),
			choice(&cli.StringFlag{Name: "workflow", Value: release.WorkflowRelease, Usage: "release, benchmarks, evals or tests"},
				release.WorkflowRelease, release.WorkflowBenchmarks, release.WorkflowEvals, release.WorkflowTests),
			choice(&cli.StringFlag{Name: "limit", Value: string(limit.DefaultRun), Usage: limit.Names()}, limitModes()...),
			&cli.StringSliceFlag{Name: "task", Usage: "eval task (repeatable; default: the catalog's references)"},
			&cli.StringSliceFlag{Name: "dataset", Usage: "local eval dataset TASK=PATH (repeatable)"},
			&cli.StringFlag{Name: "eval-api", Value: "completions", Usage: "completions or chat"},
			&cli.DurationFlag{Name: "request-timeout", Value: 10 * time.Minute, Usage: "bound on one request"},
			&cli.StringFlag{Name: "asr-url", Usage: "speech-recognition server (a whisper unit) that re-transcribes a text-to-speech unit's speech (tts_generation)"},
			&cli.StringFlag{Name: "asr-model", Usage: "model name sent to --asr-url"},
			&cli.BoolFlag{Name: "no-trace-capture", Usage: "skip the warm-up that captures traces per (ISL, batch) before a sweep or a single point measures (on for vllm units with [vllm] trace_capture, and --url with a Tenstorrent --device)"},
			targetsOnlyFlag(), targetsFileFlag(),
		),
		Action:       runRelease,
		BashComplete: completeUnits,
	}
}

func runRelease(c *cli.Context) error {
	if err := applyWorkflowArgs(c); err != nil {
		return err
	}
	mode, err := limit.Parse(c.String("limit"))
	if err != nil {
		return usageError(c, "--limit: %v", err)
	}
	cfg := release.Config{Workflow: c.String("workflow"), Limit: mode, NoTraceCapture: c.Bool("no-trace-capture"),
		TargetsOnly: c.Bool("targets-only"), TargetsSource: c.String("targets"), NumPrompts: workflowArgsNumPrompts(c)}
	if tasks, datasets := splitList(c.StringSlice("task")), splitTaskPaths(c.StringSlice("dataset")); len(tasks) > 0 || len(datasets) > 0 || c.IsSet("eval-api") || c.IsSet("request-timeout") || c.IsSet("asr-url") {
		ec := release.DefaultEvals()
		ec.Tasks, ec.Datasets = tasks, datasets
		ec.ASRURL, ec.ASRModel = c.String("asr-url"), c.String("asr-model")
		if ec.API, err = openai.ParseAPI(c.String("eval-api")); err != nil {
			return usageError(c, "--eval-api: %v", err)
		}
		ec.Timeout = c.Duration("request-timeout")
		cfg.Evals = &ec
	}
	if c.IsSet("request-timeout") {
		pc := release.DefaultBench()
		pc.Client.RequestTimeout = c.Duration("request-timeout")
		cfg.Bench = &pc
	}
	prepare := func(cfg *release.Config) error {
		if cfg.Workflow == release.WorkflowEvals {
			cfg.TargetsSource = "" // no benchmark to grade
			return nil
		}
		return loadTargets(c, cfg)
	}
	return runWorkflow(c, "release", 24*time.Hour, cfg, prepare, func(*release.Outcome) {})
}
