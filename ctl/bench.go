package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/result"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/runtime/openai"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "benchmark a unit or any OpenAI-compatible server (one point, or a catalog sweep with --limit)",
		ArgsUsage: "[UNIT]",
		Description: `With UNIT, ttisd supplies the unit's address, model, device and auth; with
--url, any OpenAI-compatible server is measured without a daemon. Either way
the run goes to the results store (<state>/runs/<unit>/<run-id>/): the
points' vLLM-style result JSON, bench_summary.md/.csv/bench_report.json, and
report.md/.json/.html with the verdict. Flags may come before or after UNIT.

Without --limit one point runs (--isl, --osl, --max-concurrency,
--num-prompts), graded against the catalog's target for that point if it
has one. With --limit smoke|ci-commit|ci-nightly|ci-long|full a sweep is
planned from the catalog entry of (model, device) (reference target points
first), printed, run and graded. -o json prints a point's result JSON, or a
sweep's report.json.

vllm bench serve's flag names are accepted: --dataset-name,
--random-input-len, --random-output-len, --random-range-ratio,
--random-prefix-len, --metric-percentiles, --save-result and --result-dir
(the point's result JSON, vllm's keys, copied there; the run keeps its
own). As there, --ignore-eos is off for one point; a sweep sends it.

` + workflowExitHelp,
		Flags: append(workflowFlags(),
			choice(&cli.StringFlag{Name: "endpoint", Value: "completions", Usage: "completions or chat"}, "completions", "chat"),
			&cli.StringFlag{Name: "dataset", Aliases: []string{"dataset-name"}, Value: "random", Usage: "random, shared-prefix (random after one shared prefix of --prefix-len tokens), sharegpt or custom"},
			&cli.IntFlag{Name: "prefix-len", Aliases: []string{"random-prefix-len"}, Usage: "tokens of one random prefix shared by every random prompt (shared-prefix default: 1000)"},
			&cli.StringFlag{Name: "dataset-path", Usage: "ShareGPT JSON or custom JSONL file"},
			&cli.IntFlag{Name: "isl", Aliases: []string{"random-input-len", "input-len"}, Value: 128, Usage: "input length in tokens (random dataset)"},
			&cli.IntFlag{Name: "osl", Aliases: []string{"random-output-len", "output-len"}, Value: 128, Usage: "output length in tokens"},
			&cli.Float64Flag{Name: "range-ratio", Aliases: []string{"random-range-ratio"}, Usage: "spread lengths over [n(1-r), n(1+r)]"},
			&cli.IntFlag{Name: "num-prompts", Usage: "requests in the run (default: the sweep rule for ISL/OSL/concurrency)"},
			&cli.IntFlag{Name: "max-concurrency", Value: 1, Usage: "requests in flight (0: no cap); in sweeps, the cap when the catalog has none"},
			&cli.StringFlag{Name: "request-rate", Value: "inf", Usage: "arrivals per second, or inf"},
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "gamma shape of arrival gaps (1 = Poisson)"},
			&cli.BoolFlag{Name: "ignore-eos", Usage: "send ignore_eos, so that every request generates exactly --osl tokens (default: off for one point, as vllm bench serve; on for a --limit sweep, whose targets assume fixed output lengths); the result records it"},
			&cli.Float64Flag{Name: "temperature", Usage: "sampling temperature of every request (default 0: greedy, as vLLM's benchmark, so every server runs the same sampler)"},
			&cli.Float64Flag{Name: "top-p", Usage: "top_p of every request (default: the server's)"},
			&cli.IntFlag{Name: "top-k", Usage: "top_k of every request (default: the server's)"},
			&cli.Float64Flag{Name: "min-p", Usage: "min_p of every request (default: the server's)"},
			&cli.StringFlag{Name: "extra-body", Usage: "JSON object merged into every request body, e.g. '{\"cache_prompt\": false}' (the sampling flags win over it)"},
			&cli.BoolFlag{Name: "continuous-usage", Value: true, Usage: "ask for per-chunk usage to count multi-token chunks (dropped if the server refuses)"},
			&cli.IntFlag{Name: "num-warmups", Value: 1, Usage: "warm-up requests before each measured run"},
			&cli.Int64Flag{Name: "seed", Usage: "dataset and arrival seed"},
			&cli.StringFlag{Name: "percentiles", Aliases: []string{"metric-percentiles"}, Value: "50,90,99", Usage: "percentiles to report"},
			&cli.StringFlag{Name: "goodput", Usage: "SLOs in ms, e.g. \"ttft:200,tpot:50\""},
			&cli.DurationFlag{Name: "request-timeout", Value: 30 * time.Minute, Usage: "bound on one request"},
			&cli.BoolFlag{Name: "no-server-tokenizer", Usage: "do not use the server's /tokenize (approximate lengths)"},
			choice(&cli.StringFlag{Name: "limit", Usage: "run a sweep: " + limit.Names()}, limitModes()...),
			targetsOnlyFlag(), targetsFileFlag(),
			&cli.BoolFlag{Name: "plan", Usage: "print the planned points and exit"},
			&cli.StringFlag{Name: "label", Usage: "label stored in the result"},
			&cli.BoolFlag{Name: "save-result", Usage: "also copy each point's result JSON (vllm bench serve's keys) into --result-dir; the run in the results store keeps it either way"},
			&cli.StringFlag{Name: "result-dir", Usage: "folder --save-result copies result JSON into (default: the current folder; giving it implies --save-result)"},
			&cli.BoolFlag{Name: "no-trace-capture", Usage: "skip the warm-up that captures traces per (ISL, batch) before a sweep or a single point measures (on for vllm units with [vllm] trace_capture, and --url with a Tenstorrent --device)"},
		),
		Action:       runBench,
		BashComplete: completeUnits,
	}
}

func runBench(c *cli.Context) error {
	if err := applyWorkflowArgs(c); err != nil {
		return err
	}
	pc, err := benchTemplate(c)
	if err != nil {
		return err
	}
	cfg := release.Config{Workflow: release.WorkflowBenchmarks, Bench: &pc, Point: c.String("limit") == "" && !c.Bool("plan"),
		TargetsOnly: c.Bool("targets-only"), NumPrompts: c.Int("num-prompts"), MaxConcurrency: c.Int("max-concurrency"),
		NoTraceCapture: c.Bool("no-trace-capture")}
	if l := c.String("limit"); l != "" {
		if cfg.Limit, err = limit.Parse(l); err != nil {
			return usageError(c, "--limit: %v", err)
		}
	}
	// A --targets file is read once the target's model and device are
	// known (loadTargets).
	cfg.TargetsSource = c.String("targets")
	if c.Bool("plan") {
		return planBench(c, cfg)
	}
	prepare := func(cfg *release.Config) error { return loadTargets(c, cfg) }
	return runWorkflow(c, "bench", time.Hour, cfg, prepare, func(out *release.Outcome) {
		w := safeWriter{c.App.Writer}
		if c.Bool("save-result") || c.String("result-dir") != "" {
			saveResults(c, out)
		}
		if out.Point != nil {
			printPointSummary(w, out.Point)
			return
		}
		if b := out.Report.Benchmarks; b != nil {
			fmt.Fprintf(w, "Sweep of %d points: see %s\n", len(b.Rows), out.Dir)
		}
	})
}

// saveResults copies the result JSON of every measured point into
// --result-dir (default: the current folder), as vllm bench serve's
// --save-result writes its result file; the run keeps its own copy.
func saveResults(c *cli.Context, out *release.Outcome) {
	b := out.Report.Benchmarks
	if b == nil {
		return
	}
	dir := c.String("result-dir")
	if dir == "" {
		dir = "."
	}
	w := safeWriter{c.App.ErrWriter}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(w, "--result-dir: %v\n", err)
		return
	}
	for _, r := range b.Rows {
		if r.ResultFile == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out.Dir, "benchmarks", r.ResultFile))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(r.ResultFile)), data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(w, "--save-result: %v\n", err)
			continue
		}
		fmt.Fprintf(w, "saved %s\n", filepath.Join(dir, filepath.Base(r.ResultFile)))
	}
}

// planBench prints the sweep the flags plan, without running it.
func planBench(c *cli.Context, cfg release.Config) error {
	t, store, err := resolveTarget(c, "bench", time.Minute)
	if err != nil {
		return err
	}
	cfg.Target, cfg.Store = t, store
	if err := loadTargets(c, &cfg); err != nil {
		return err
	}
	if cfg.Limit == "" {
		cfg.Limit = limit.DefaultRun
	}
	pts, warnings, err := release.PlanSweep(cfg)
	for _, w := range warnings {
		fmt.Fprintf(c.App.ErrWriter, "%s\n", w)
	}
	if err != nil {
		return failure(exitError, "%v", err)
	}
	if asJSON, err := jsonOutput(c); err != nil {
		return err
	} else if asJSON {
		return writeJSON(c.App.Writer, pts)
	}
	fmt.Fprintf(c.App.Writer, "Sweep %s for %s on %s (%s, %s catalog), %d points:\n", cfg.Limit, t.CatalogModel, t.Device, t.BaseURL, t.Catalog, len(pts))
	return sweep.WriteTable(c.App.Writer, pts)
}

// targetsOnlyFlag and targetsFileFlag are run.py's ONLY_BENCHMARK_TARGETS
// and OVERRIDE_BENCHMARK_TARGETS, each also a flag that beats it.
func targetsOnlyFlag() cli.Flag {
	return &cli.BoolFlag{Name: "targets-only", EnvVars: []string{"ONLY_BENCHMARK_TARGETS"},
		Usage: "sweep only the reference target points (run.py's ONLY_BENCHMARK_TARGETS; the variable takes 1/true or 0/false)"}
}

func targetsFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "targets", EnvVars: []string{"OVERRIDE_BENCHMARK_TARGETS"},
		Usage: "targets override file (model_performance_reference.json shape; run.py's OVERRIDE_BENCHMARK_TARGETS): its points, prompt counts as given, replace the catalog's"}
}

// loadTargets reads --targets for the target's (model, device); its entry
// replaces the catalog's targets.
func loadTargets(c *cli.Context, cfg *release.Config) error {
	f := cfg.TargetsSource
	if f == "" {
		return nil
	}
	fh, err := os.Open(f)
	if err != nil {
		return failure(exitError, "--targets: %v", err)
	}
	defer fh.Close()
	keys := catalog.TargetKeys(cfg.Target.CatalogModel, cfg.Target.Spec)
	ts, key, found, err := sweep.ParseTargets(fh, f, keys, cfg.Target.Device)
	if err != nil {
		return failure(exitError, "--targets: %v", err)
	}
	if !found {
		return failure(exitError, "--targets: %s has no targets on %s under any of %s", f, cfg.Target.Device, strings.Join(keys, ", "))
	}
	cfg.Targets = ts
	cfg.TargetsSource = fmt.Sprintf("%s (%s/%s)", f, key, cfg.Target.Device)
	return nil
}

// benchTemplate turns the flags into the benchmark template (the target's
// URL, model and headers are filled in by the workflow).
func benchTemplate(c *cli.Context) (bench.PointConfig, error) {
	api, err := openai.ParseAPI(c.String("endpoint"))
	if err != nil {
		return bench.PointConfig{}, usageError(c, "--endpoint: %v", err)
	}
	pcts, err := result.ParsePercentiles(c.String("percentiles"))
	if err != nil {
		return bench.PointConfig{}, usageError(c, "--percentiles: %v", err)
	}
	var slo metrics.SLO
	if g := c.String("goodput"); g != "" {
		if slo, err = metrics.ParseSLO(g); err != nil {
			return bench.PointConfig{}, usageError(c, "--goodput: %v", err)
		}
	}
	rate, err := parseRate(c.String("request-rate"))
	if err != nil {
		return bench.PointConfig{}, usageError(c, "--request-rate: %v", err)
	}
	ds := bench.DatasetConfig{Name: c.String("dataset"), Path: c.String("dataset-path"), InputLen: c.Int("isl"), OutputLen: c.Int("osl"), RangeRatio: c.Float64("range-ratio"), PrefixLen: c.Int("prefix-len")}
	if (ds.Name == "sharegpt" || ds.Name == "custom") && ds.Path == "" {
		return bench.PointConfig{}, usageError(c, "--dataset %s needs --dataset-path", ds.Name)
	}
	extra, err := requestExtras(c)
	if err != nil {
		return bench.PointConfig{}, err
	}
	return bench.PointConfig{
		// A sweep is graded against targets taken at fixed output lengths:
		// it sends ignore_eos unless told not to.
		Client: client.Config{API: api, IgnoreEOS: c.Bool("ignore-eos") || (c.String("limit") != "" && !c.IsSet("ignore-eos")), ContinuousUsage: c.Bool("continuous-usage"),
			ExtraBody: extra, RequestTimeout: c.Duration("request-timeout")},
		Dataset: ds, NumPrompts: c.Int("num-prompts"),
		Load: loadgen.Options{MaxConcurrency: c.Int("max-concurrency"), RequestRate: rate, Burstiness: c.Float64("burstiness"),
			NumWarmups: c.Int("num-warmups"), Seed: c.Int64("seed"), RequestIDPrefix: "bench-"},
		Percentiles: pcts, SLO: slo, Label: c.String("label"), ServerTokenizer: !c.Bool("no-server-tokenizer"),
	}, nil
}

// requestExtras builds the fields added to every request body: the
// --extra-body object, then the sampling flags given.
func requestExtras(c *cli.Context) (map[string]any, error) {
	var extra map[string]any
	if raw := c.String("extra-body"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &extra); err != nil || extra == nil {
			return nil, usageError(c, "--extra-body: want a JSON object such as '{\"cache_prompt\": false}': %v", errOrNull(err))
		}
	}
	set := func(key string, v any) {
		if extra == nil {
			extra = map[string]any{}
		}
		extra[key] = v
	}
	if c.IsSet("temperature") {
		t := c.Float64("temperature")
		if !(t >= 0) || math.IsInf(t, 1) {
			return nil, usageError(c, "--temperature %v: want 0 (greedy) or more", t)
		}
		set("temperature", t)
	}
	if c.IsSet("top-p") {
		p := c.Float64("top-p")
		if !(p > 0 && p <= 1) {
			return nil, usageError(c, "--top-p %v: want a value in (0, 1]", p)
		}
		set("top_p", p)
	}
	if c.IsSet("top-k") {
		k := c.Int("top-k")
		if k < -1 {
			return nil, usageError(c, "--top-k %d: want -1 or 0 (off) or a positive count", k)
		}
		set("top_k", k)
	}
	if c.IsSet("min-p") {
		p := c.Float64("min-p")
		if !(p >= 0 && p <= 1) {
			return nil, usageError(c, "--min-p %v: want a value in [0, 1]", p)
		}
		set("min_p", p)
	}
	return extra, nil
}

// errOrNull names why a JSON value is not an object: its parse error, or
// that it was null.
func errOrNull(err error) error {
	if err != nil {
		return err
	}
	return errors.New("null is not an object")
}

func parseRate(s string) (float64, error) {
	if s == "" || strings.EqualFold(s, "inf") {
		return math.Inf(1), nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || math.IsNaN(r) {
		return 0, fmt.Errorf("%q is not a positive number or inf", s)
	}
	return r, nil
}

func printPointSummary(w io.Writer, pr *bench.PointResult) {
	s := &pr.Summary
	line := func(k string, v any) { fmt.Fprintf(w, "%-36s %v\n", k+":", v) }
	fmt.Fprintln(w, "============ Serving Benchmark Result ============")
	if pr.Run.Simulated {
		fmt.Fprintln(w, "(simulated server)")
	}
	line("Successful requests", s.Completed)
	line("Failed requests", s.Failed)
	line("Benchmark duration (s)", fmt.Sprintf("%.2f", s.DurationS))
	line("Total input tokens", s.TotalInputTokens)
	line("Total generated tokens", s.TotalOutputTokens)
	line("Request throughput (req/s)", fmt.Sprintf("%.3f", s.RequestThroughput))
	line("Output token throughput (tok/s)", fmt.Sprintf("%.1f", s.OutputThroughput))
	line("Total token throughput (tok/s)", fmt.Sprintf("%.1f", s.TotalTokThroughput))
	if s.RequestGoodput != nil {
		line("Request goodput (req/s)", fmt.Sprintf("%.3f", *s.RequestGoodput))
	}
	for _, m := range []struct {
		name string
		st   metrics.Stats
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"ITL", s.ITL}, {"E2EL", s.E2EL}} {
		line("Mean "+m.name+" (ms)", fmt.Sprintf("%.2f", m.st.Mean))
		line("Median "+m.name+" (ms)", fmt.Sprintf("%.2f", m.st.Median))
		for _, p := range m.st.Percentiles {
			line("P"+result.FormatPercentile(p.P)+" "+m.name+" (ms)", fmt.Sprintf("%.2f", p.Value))
		}
	}
	if s.TPOT.Mean > 0 {
		line("Tput user (tok/s, 1000/mean TPOT)", fmt.Sprintf("%.2f", 1000/s.TPOT.Mean))
	}
	fmt.Fprintln(w, "==================================================")
}
