package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/loadgen"
	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/result"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Exit codes of ttisctl bench beyond 0 (complete, nothing failed) and 1
// (could not run).
const (
	// exitIncomplete: some requests or points failed; results are partial.
	exitIncomplete = 2
	// exitAcceptance: every request ran, but a graded point failed an
	// enforced tier.
	exitAcceptance = 3
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "benchmark a unit or any OpenAI-compatible server (one point, or a catalog sweep with --limit)",
		ArgsUsage: "[UNIT]",
		Description: `With --url, benchmarks that server directly, no daemon needed. With UNIT,
asks ttisd for the unit's address, model, device and auth, and writes the results
under the daemon's results store (<state>/runs/<unit>/<run-id>/). Flags go
before UNIT; booleans that default to true are turned off with --flag=false.

Without --limit one point runs (--isl, --osl, --max-concurrency, --num-prompts).
With --limit smoke|ci-commit|ci-nightly|full a sweep is planned from the catalog
entry of (model, device) (reference target points first), printed, run and
graded; each point's vLLM-style result JSON plus bench_summary.md/.csv and
bench_report.json are written. Exit status: 0 complete, 1 could not run,
2 incomplete (failed requests or points), 3 a graded point failed an enforced tier.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "server root, e.g. http://127.0.0.1:8000 (no daemon)"},
			&cli.StringFlag{Name: "model", Usage: "model name to send (default: the first of GET /v1/models)"},
			&cli.StringFlag{Name: "catalog-model", Usage: "catalog model for sweeps and targets (default: --model)"},
			&cli.StringFlag{Name: "device", Usage: "catalog device for sweeps and targets (url mode)"},
			&cli.StringFlag{Name: "api-key", EnvVars: []string{"OPENAI_API_KEY"}, Usage: "bearer token sent as Authorization"},
			&cli.StringFlag{Name: "api-key-file", Usage: "file holding the bearer token"},
			&cli.StringSliceFlag{Name: "header", Usage: "extra request header KEY=VALUE (repeatable)"},
			&cli.StringFlag{Name: "endpoint", Value: "completions", Usage: "completions or chat"},
			&cli.StringFlag{Name: "dataset", Value: "random", Usage: "random, sharegpt or custom"},
			&cli.StringFlag{Name: "dataset-path", Usage: "ShareGPT JSON or custom JSONL file"},
			&cli.IntFlag{Name: "isl", Value: 128, Usage: "input length in tokens (random dataset)"},
			&cli.IntFlag{Name: "osl", Value: 128, Usage: "output length in tokens"},
			&cli.Float64Flag{Name: "range-ratio", Usage: "spread lengths over [n(1-r), n(1+r)]"},
			&cli.IntFlag{Name: "num-prompts", Usage: "requests in the run (default: the sweep rule for ISL/OSL/concurrency)"},
			&cli.IntFlag{Name: "max-concurrency", Value: 1, Usage: "requests in flight (0: no cap); in sweeps, the cap when the catalog has none"},
			&cli.StringFlag{Name: "request-rate", Value: "inf", Usage: "arrivals per second, or inf"},
			&cli.Float64Flag{Name: "burstiness", Value: 1, Usage: "gamma shape of arrival gaps (1 = Poisson)"},
			&cli.BoolFlag{Name: "ignore-eos", Value: true, Usage: "generate exactly --osl tokens"},
			&cli.BoolFlag{Name: "continuous-usage", Value: true, Usage: "ask for per-chunk usage to count multi-token chunks (dropped if the server refuses)"},
			&cli.IntFlag{Name: "num-warmups", Value: 1, Usage: "warm-up requests before each measured run"},
			&cli.Int64Flag{Name: "seed", Usage: "dataset and arrival seed"},
			&cli.StringFlag{Name: "percentiles", Value: "50,90,99", Usage: "percentiles to report"},
			&cli.StringFlag{Name: "goodput", Usage: "SLOs in ms, e.g. \"ttft:200,tpot:50\""},
			&cli.DurationFlag{Name: "request-timeout", Value: 30 * time.Minute, Usage: "bound on one request"},
			&cli.BoolFlag{Name: "no-server-tokenizer", Usage: "do not use the server's /tokenize (approximate lengths)"},
			&cli.StringFlag{Name: "limit", Usage: "run a sweep: smoke, ci-commit, ci-nightly or full"},
			&cli.BoolFlag{Name: "targets-only", Usage: "sweep only the reference target points"},
			&cli.StringFlag{Name: "targets", Usage: "targets override file (model_performance_reference.json shape)"},
			&cli.BoolFlag{Name: "plan", Usage: "print the planned points and exit"},
			&cli.StringFlag{Name: "results-dir", Usage: "where results go (url mode default ./ttis-bench; unit mode: the daemon's runs dir)"},
			&cli.StringFlag{Name: "label", Usage: "label stored in the result"},
			&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar"},
		},
		Action: runBench,
	}
}

// benchTarget is what bench needs to know about the server.
type benchTarget struct {
	unit, baseURL, model, catalogModel, device, runtime string
	header                                              http.Header
	simulated                                           bool
	maxModelLen                                         int
	resultsDir                                          string
}

func runBench(c *cli.Context) error {
	ctx := c.Context
	fail := func(format string, a ...any) error {
		return cli.Exit("ttisctl bench: "+fmt.Sprintf(format, a...), 1)
	}
	t, err := resolveBenchTarget(c)
	if err != nil {
		return fail("%v", err)
	}
	api, err := client.ParseAPI(c.String("endpoint"))
	if err != nil {
		return fail("--endpoint: %v", err)
	}
	pcts, err := result.ParsePercentiles(c.String("percentiles"))
	if err != nil {
		return fail("--percentiles: %v", err)
	}
	var slo metrics.SLO
	if g := c.String("goodput"); g != "" {
		if slo, err = metrics.ParseSLO(g); err != nil {
			return fail("--goodput: %v", err)
		}
	}
	rate, err := parseRate(c.String("request-rate"))
	if err != nil {
		return fail("--request-rate: %v", err)
	}
	ds := bench.DatasetConfig{Name: c.String("dataset"), Path: c.String("dataset-path"), InputLen: c.Int("isl"), OutputLen: c.Int("osl"), RangeRatio: c.Float64("range-ratio")}
	if (ds.Name == "sharegpt" || ds.Name == "custom") && ds.Path == "" {
		return fail("--dataset %s needs --dataset-path", ds.Name)
	}
	base := bench.PointConfig{
		Client: client.Config{BaseURL: t.baseURL, API: api, Model: t.model, Header: t.header, IgnoreEOS: c.Bool("ignore-eos"),
			ContinuousUsage: c.Bool("continuous-usage"), RequestTimeout: c.Duration("request-timeout")},
		Dataset: ds,
		Load: loadgen.Options{RequestRate: rate, Burstiness: c.Float64("burstiness"), NumWarmups: c.Int("num-warmups"),
			Seed: c.Int64("seed"), RequestIDPrefix: "bench-"},
		Percentiles: pcts, SLO: slo, Label: c.String("label"), ServerTokenizer: !c.Bool("no-server-tokenizer"),
		Simulated: t.simulated,
	}
	runID := time.Now().UTC().Format("20060102T150405Z") + "-bench"
	outDir := filepath.Join(t.resultsDir, runID)
	if c.String("limit") == "" && !c.Bool("plan") {
		return benchPoint(ctx, c, base, outDir)
	}
	return benchSweep(ctx, c, t, base, outDir, runID)
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

// resolveBenchTarget finds the server: --url directly, or a unit through
// the daemon.
func resolveBenchTarget(c *cli.Context) (*benchTarget, error) {
	header := http.Header{}
	for _, kv := range c.StringSlice("header") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--header %q: want KEY=VALUE", kv)
		}
		header.Add(strings.TrimSpace(k), v)
	}
	key := c.String("api-key")
	if f := c.String("api-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--api-key-file: %w", err)
		}
		key = strings.TrimSpace(string(b))
	}
	t := &benchTarget{header: header}
	switch {
	case c.String("url") != "" && c.NArg() > 0:
		return nil, errors.New("give either UNIT or --url, not both")
	case c.String("url") != "":
		t.baseURL = c.String("url")
		t.resultsDir = c.String("results-dir")
		if t.resultsDir == "" {
			t.resultsDir = "ttis-bench"
		}
	case c.NArg() > 1:
		return nil, fmt.Errorf("flags after UNIT are not read (%q...): put them before it", c.Args().Get(1))
	case c.NArg() == 1:
		if err := resolveUnit(c, t); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("give a UNIT or --url URL")
	}
	if key != "" {
		t.header.Set("Authorization", "Bearer "+key)
	}
	// Ask the server what it serves: the model name when not given, and
	// whether it is simulated (a ttis extension of /v1/models).
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	cards, err := client.ListModels(ctx, t.baseURL, t.header)
	model := c.String("model")
	if model == "" {
		model = t.model
	}
	switch {
	case err != nil && model == "":
		return nil, fmt.Errorf("no --model given and the server's model list failed: %w", err)
	case err == nil && len(cards) > 0:
		card := cards[0]
		for _, cd := range cards {
			if cd.ID == model {
				card = cd
			}
		}
		if model == "" {
			model = card.ID
		}
		t.simulated = t.simulated || card.Simulated
		t.maxModelLen = card.MaxModelLen
		if t.runtime == "" {
			t.runtime = card.Runtime
		}
	}
	if model == "" {
		return nil, errors.New("no --model given and the server lists no model")
	}
	t.model = model
	t.catalogModel = c.String("catalog-model")
	if t.catalogModel == "" {
		t.catalogModel = model
	}
	if d := c.String("device"); d != "" {
		t.device = d
	}
	return t, nil
}

func benchPoint(ctx context.Context, c *cli.Context, pc bench.PointConfig, outDir string) error {
	pc.Load.MaxConcurrency = c.Int("max-concurrency")
	pc.NumPrompts = c.Int("num-prompts")
	if pc.NumPrompts == 0 {
		pc.NumPrompts = sweep.NumPrompts(pc.Dataset.InputLen, pc.Dataset.OutputLen, max(pc.Load.MaxConcurrency, 1), sweep.Limits{})
	}
	bar := newBar(c, pc.NumPrompts, "benchmark")
	pc.Load.OnDone = func(metrics.Request) { bar.add() }
	pr, err := bench.RunPoint(ctx, pc)
	bar.finish()
	if err != nil {
		return cli.Exit("ttisctl bench: "+err.Error(), 1)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return cli.Exit("ttisctl bench: "+err.Error(), 1)
	}
	path := filepath.Join(outDir, pr.FileName)
	if err := result.WriteFileAtomic(path, pr.JSON); err != nil {
		return cli.Exit("ttisctl bench: "+err.Error(), 1)
	}
	if c.String("output") == "json" {
		_, _ = c.App.Writer.Write(pr.JSON)
	} else {
		printPointSummary(c.App.Writer, pr)
		fmt.Fprintf(c.App.Writer, "Result: %s\n", path)
	}
	if pr.Summary.Failed > 0 {
		return cli.Exit(fmt.Sprintf("ttisctl bench: incomplete: %d of %d requests failed (reasons in the result's failure_reasons)", pr.Summary.Failed, pc.NumPrompts), exitIncomplete)
	}
	return nil
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

func benchSweep(ctx context.Context, c *cli.Context, t *benchTarget, base bench.PointConfig, outDir, runID string) error {
	limit, err := sweep.ParseLimit(c.String("limit"))
	if c.String("limit") == "" {
		limit, err = sweep.Smoke, nil
	}
	if err != nil {
		return cli.Exit("ttisctl bench: --limit: "+err.Error(), 1)
	}
	md := report.Metadata{ReportID: runID, Model: t.catalogModel, Device: t.device, Unit: t.unit, BaseURL: t.baseURL,
		Endpoint: base.Client.API.Path(), Limit: string(limit), Simulated: t.simulated, TargetsSource: "none"}
	if md.Device == "" {
		md.Device = "unknown device"
	}
	limits := sweep.Limits{MaxConcurrency: max(c.Int("max-concurrency"), 1), MaxContext: t.maxModelLen, MaxTokensAllUsers: t.maxModelLen}
	var targets []catalog.PerfTarget
	factors := grade.Factors(nil)
	var required []string
	if t.device != "" {
		spec, err := catalog.Lookup(t.catalogModel, t.device)
		switch {
		case err == nil:
			limits = sweep.LimitsOf(spec)
			targets = spec.Targets
			factors = grade.Factors(spec.PerfTargetsMap)
			required = catalog.RequiredTiers(spec.Status)
			md.ModelStatus = catalog.StatusDisplay(spec.Status)
			md.Model = spec.ModelName
			if len(targets) > 0 {
				md.TargetsSource = "catalog"
			}
		case c.String("targets") == "":
			fmt.Fprintf(c.App.ErrWriter, "ttisctl bench: no catalog entry (%v); sweeping without targets\n", err)
		}
	}
	if f := c.String("targets"); f != "" {
		fh, err := os.Open(f)
		if err != nil {
			return cli.Exit("ttisctl bench: --targets: "+err.Error(), 1)
		}
		ts, found, err := sweep.ParseTargets(fh, f, t.catalogModel, t.device)
		fh.Close()
		if err != nil {
			return cli.Exit("ttisctl bench: --targets: "+err.Error(), 1)
		}
		if found {
			targets, md.TargetsSource = ts, f
		} else {
			fmt.Fprintf(c.App.ErrWriter, "ttisctl bench: %s has no targets for %s on %s\n", f, t.catalogModel, t.device)
		}
	}
	if limits.MaxContext < 1 {
		limits.MaxContext, limits.MaxTokensAllUsers = 4096, 4096
		fmt.Fprintln(c.App.ErrWriter, "ttisctl bench: the server reports no context length; assuming 4096")
	}
	pts, err := sweep.Plan(limits, targets, sweep.Options{Limit: limit, TargetsOnly: c.Bool("targets-only")})
	if err != nil {
		return cli.Exit("ttisctl bench: "+err.Error(), 1)
	}
	if n := c.Int("num-prompts"); n > 0 {
		for i := range pts {
			pts[i].NumPrompts = n
		}
	}
	planOut := c.App.Writer
	if c.String("output") == "json" && !c.Bool("plan") {
		planOut = c.App.ErrWriter // stdout carries the JSON report
	}
	fmt.Fprintf(planOut, "Sweep %s for %s on %s (%s), %d points:\n", limit, md.Model, md.Device, t.baseURL, len(pts))
	if err := sweep.WriteTable(planOut, pts); err != nil {
		return err
	}
	if c.Bool("plan") {
		return nil
	}
	// The summary table shows P50 and P99 TTFT whatever else was asked.
	for _, p := range []float64{50, 99} {
		if !slices.Contains(base.Percentiles, p) {
			base.Percentiles = append(base.Percentiles, p)
		}
	}
	if dsName := base.Dataset.Name; dsName != "" && dsName != "random" {
		fmt.Fprintf(c.App.ErrWriter, "ttisctl bench: sweep points use the %s dataset; ISL is only approximate\n", dsName)
	}
	// The bar is replaced between points, when no request is in flight;
	// OnDone reads the current one.
	var bar *benchBar
	base.Load.OnDone = func(metrics.Request) { bar.add() }
	res, err := bench.RunSweep(ctx, bench.SweepConfig{
		Base: base, Points: pts, Factors: factors, Required: required, Metadata: md, OutDir: outDir,
		OnPoint: func(i int, p sweep.Point) {
			bar.finish()
			bar = newBar(c, p.NumPrompts, fmt.Sprintf("point %d/%d isl %d osl %d c %d", i+1, len(pts), p.ISL, p.OSL, p.Concurrency))
		},
	})
	if bar != nil {
		bar.finish()
	}
	if err != nil && res == nil {
		return cli.Exit("ttisctl bench: "+err.Error(), 1)
	}
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "ttisctl bench: stopped (%v) after %d of %d points; partial results in %s\n", err, len(res.Points), len(pts), outDir)
		return cli.Exit("", exitIncomplete)
	}
	if c.String("output") == "json" {
		if b, err := os.ReadFile(filepath.Join(outDir, bench.SummaryJSON)); err == nil {
			_, _ = c.App.Writer.Write(b)
		}
	}
	fmt.Fprintln(c.App.ErrWriter)
	fmt.Fprintf(c.App.ErrWriter, "Results in %s\n", outDir)
	for _, f := range res.Files {
		fmt.Fprintf(c.App.ErrWriter, "  %s\n", filepath.Base(f))
	}
	a := res.Acceptance
	fmt.Fprintf(c.App.ErrWriter, "Acceptance: %d points, %d passed, %d failed, %d errors, %d waived, %d NA\n", a.Total, a.Pass, a.Failed, a.Errors, a.Waived, a.NA)
	if res.Incomplete {
		return cli.Exit("ttisctl bench: incomplete: some points or requests failed (see "+bench.SummaryMarkdown+")", exitIncomplete)
	}
	if a.Failed > 0 {
		return cli.Exit("ttisctl bench: a graded point failed an enforced tier", exitAcceptance)
	}
	return nil
}

// benchBar is a progress bar on stderr, shown only on a terminal.
type benchBar struct {
	bar *progressbar.ProgressBar
}

func newBar(c *cli.Context, n int, desc string) *benchBar {
	f, ok := c.App.ErrWriter.(*os.File)
	if c.Bool("no-progress") || !ok || !term.IsTerminal(int(f.Fd())) {
		return &benchBar{}
	}
	return &benchBar{bar: progressbar.NewOptions(n,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

func (b *benchBar) add() {
	if b != nil && b.bar != nil {
		_ = b.bar.Add(1)
	}
}

func (b *benchBar) finish() {
	if b != nil && b.bar != nil {
		_ = b.bar.Finish()
	}
}

// resolveUnit asks the daemon over its control socket for the unit's
// address, model, device, runtime and auth, and for the results store.
func resolveUnit(c *cli.Context, t *benchTarget) error {
	name := c.Args().First()
	ep, err := daemonclient.New(c.String("socket")).Endpoint(c.Context, name)
	if err != nil {
		return fmt.Errorf("unit %s: %w", name, err)
	}
	if ep.State != api.StateActive {
		return fmt.Errorf("unit %s is %s, not active", name, ep.State)
	}
	t.unit, t.baseURL = name, ep.BaseURL
	t.model, t.device, t.runtime = ep.Model, ep.Device, ep.Runtime
	t.simulated = ep.Runtime == "sim"
	if strings.HasSuffix(strings.ToLower(t.model), ".gguf") {
		// A cpu unit names a model file; ask the server for its name.
		t.model = ""
	}
	t.resultsDir = c.String("results-dir")
	if t.resultsDir == "" {
		if ep.RunsDir == "" {
			return fmt.Errorf("the daemon reports no results folder; pass --results-dir")
		}
		t.resultsDir = filepath.Join(ep.RunsDir, name)
	}
	tok, err := unitBearer(name, ep.AuthMode, ep.SecretFile, "bench", time.Hour, c.String("api-key") != "" || c.String("api-key-file") != "")
	if err != nil {
		return err
	}
	if tok != "" {
		t.header.Set("Authorization", "Bearer "+tok)
	}
	return nil
}
