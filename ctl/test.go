package ctl

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

func testCommand() *cli.Command {
	return &cli.Command{
		Name:      "test",
		Usage:     "run the spec tests: check that the served API keeps what the model's spec promises",
		ArgsUsage: "UNIT | --url URL",
		Description: `Runs the catalog's spec-test suite for the model's class (text, image, audio,
speech, cnn, embedding, video) against UNIT through ttisd or against --url,
into one run of the results store, and writes report.md, report.json and
report.html there with every test's verdict and evidence (the request, what
was expected, what came back). Text models are checked for streamed and
non-streamed answers agreeing, max_tokens, stop, n, seed, logprobs,
temperature 0, context-length refusals at the spec's max_context, its
max_concurrency at once, and structured outputs and tool calls where the
spec names a tool-call parser; media models for their parameters across
their documented ranges and refusals outside them; every unit for liveness
and a steady load with no failed request and no restart (for UNIT, ttisd's
restart count and the server's pid before and after; a --url server's
restarts are not observable). --limit sizes the run (the stability load
lasts seconds in smoke, minutes in ci-nightly). A release runs the same
tests after its benchmarks and evals. The unit's [tests] table (suite,
skip, stability_duration, stability_concurrency) applies; each flag below
replaces its field. A skipped required test is not measured: the verdict
cannot be PASS.

` + workflowExitHelp,
		Flags: append(workflowFlags(),
			&cli.StringFlag{Name: "limit", Value: "smoke", Usage: limit.Names()},
			&cli.StringFlag{Name: "suite", Usage: "catalog suite to run (" + strings.Join(catalog.SpecTestSuiteNames(), ", ") + "; default: the spec's, text for a model the catalog does not know)"},
			&cli.StringSliceFlag{Name: "skip", Usage: "test not to run (repeatable; reported as not run)"},
			&cli.DurationFlag{Name: "stability-duration", Usage: "length of the stability test's steady load (default: the run size's)"},
			&cli.IntFlag{Name: "stability-concurrency", Usage: "requests the stability test keeps in flight (default: the spec's max_concurrency)"},
			&cli.IntFlag{Name: "max-concurrency", Usage: "concurrency to hold a server to when the catalog has no spec for its model (default: the unit's, else 1)"},
			&cli.BoolFlag{Name: "plan", Usage: "print the planned tests and exit"},
		),
		Action:       runTest,
		BashComplete: completeUnits,
	}
}

func runTest(c *cli.Context) error {
	mode, err := limit.Parse(c.String("limit"))
	if err != nil {
		return usageError(c, "--limit: %v", err)
	}
	cfg := release.Config{Workflow: release.WorkflowTests, Limit: mode, MaxConcurrency: c.Int("max-concurrency")}
	if c.IsSet("suite") || c.IsSet("skip") || c.IsSet("stability-duration") || c.IsSet("stability-concurrency") {
		if c.Duration("stability-duration") < 0 || c.Int("stability-concurrency") < 0 {
			return usageError(c, "--stability-duration and --stability-concurrency must not be negative")
		}
		cfg.Tests = &units.Tests{Suite: c.String("suite"), Skip: splitList(c.StringSlice("skip")),
			StabilityDuration: units.Duration{Duration: c.Duration("stability-duration")}, StabilityConcurrency: c.Int("stability-concurrency")}
	}
	if c.Bool("plan") {
		return planTests(c, cfg)
	}
	return runWorkflow(c, "test", 24*time.Hour, cfg, nil, func(out *release.Outcome) {
		if s := out.Report.Tests; s != nil {
			printTests(c, s)
		}
	})
}

// planTests prints the tests the flags plan, without running them.
func planTests(c *cli.Context, cfg release.Config) error {
	t, store, err := resolveTarget(c, "test", time.Minute)
	if err != nil {
		return err
	}
	cfg.Target, cfg.Store = t, store
	plan, err := release.PlanTests(cfg)
	if err != nil {
		return failure(exitError, "%v", err)
	}
	if asJSON, err := jsonOutput(c); err != nil {
		return err
	} else if asJSON {
		return writeJSON(c.App.Writer, plan)
	}
	w := tabwriter.NewWriter(safeWriter{c.App.Writer}, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Spec tests %s for %s on %s (%s), %d tests:\n", cfg.Limit, t.CatalogModel, t.Device, t.BaseURL, len(plan))
	fmt.Fprintln(w, "TEST\tREQUIRED\tRUNS\tCHECKS")
	for _, p := range plan {
		runs := "yes"
		if p.Skip != "" {
			runs = "no: " + p.Skip
		}
		fmt.Fprintf(w, "%s\t%v\t%s\t%s\n", p.Name, p.Required, runs, p.Description)
	}
	return w.Flush()
}

// printTests is the test command's text summary: one line per test.
func printTests(c *cli.Context, s *release.TestSection) {
	w := tabwriter.NewWriter(safeWriter{c.App.Writer}, 0, 4, 2, ' ', 0)
	if s.Error != "" {
		fmt.Fprintf(w, "The spec tests did not run: %s\n", s.Error)
	}
	fmt.Fprintln(w, "TEST\tVERDICT\tREQUESTS\tSUMMARY")
	for i := range s.Rows {
		r := &s.Rows[i]
		v := string(r.Verdict)
		switch {
		case v != "":
		case !r.Required:
			v = "NA"
		default:
			v = "NOT RUN"
		}
		what := r.Summary
		if r.NotRun != "" {
			what = r.NotRun
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Name, v, r.Requests, what)
	}
	_ = w.Flush()
}

// unitObserver reads a unit's restarts and server pid from ttisd, for the
// stability test.
func unitObserver(c *cli.Context, name string) spectest.Observer {
	dc := newClient(c)
	return func(ctx context.Context) (spectest.ServerState, error) {
		d, err := dc.Unit(ctx, name, 0)
		if err != nil {
			return spectest.ServerState{}, fmt.Errorf("ask ttisd for unit %s: %w", name, err)
		}
		return spectest.ServerState{Restarts: d.RestartsTotal, PID: d.PID}, nil
	}
}
