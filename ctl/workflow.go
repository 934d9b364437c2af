package ctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/runtime/hub"
)

// The workflow commands (bench, eval, release) share the run's life: a
// target, a run in the store, a progress display, interruption and
// resumption, and the verdict as exit status. Each command only turns its
// flags into a release.Config and prints its own summary.

// workflowFlags are the flags of every workflow command besides its own.
func workflowFlags() []cli.Flag {
	return append(targetFlags(),
		&cli.StringFlag{Name: "resume", Usage: "finish an interrupted run: its id (as printed), a unique prefix, or its folder; other flags are taken from the run"},
		&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar (on a terminal) or progress lines (in a log)"},
		workflowArgsFlag(),
	)
}

// runWorkflow resolves the target, runs cfg (filled with the target, the
// store and the display; then prepare, when set, adjusts it) and reports
// the outcome; print writes the command's own text summary. With --resume
// it finishes that run instead.
func runWorkflow(c *cli.Context, purpose string, ttl time.Duration, cfg release.Config, prepare func(*release.Config) error, print func(*release.Outcome)) error {
	p := newProgress(c)
	defer p.Finish()
	var out *release.Outcome
	var err error
	if ref := c.String("resume"); ref != "" {
		out, err = resume(c, ref, purpose, ttl, p)
	} else {
		t, store, rerr := resolveTarget(c, purpose, ttl)
		if rerr != nil {
			return rerr
		}
		cfg.Target, cfg.Store, cfg.Trigger, cfg.Version, cfg.Progress = t, store, "ttisctl", c.App.Version, p
		if args, _ := positional(c, 0, 1); len(args) == 1 {
			// A unit's restarts are ttisd's to tell (spec tests).
			cfg.Observe = unitObserver(c, t.Unit)
		}
		if cfg.Hub, err = workflowHub(c, cfg.Workflow, store.Root); err != nil {
			return err
		}
		if prepare != nil {
			if err := prepare(&cfg); err != nil {
				return err
			}
		}
		out, err = release.Run(c.Context, cfg)
	}
	p.Finish()
	if out == nil {
		return storeError(err)
	}
	asJSON, jerr := jsonOutput(c)
	if jerr != nil {
		return jerr
	}
	if asJSON {
		if out.Point != nil {
			_, _ = c.App.Writer.Write(out.Point.JSON)
		} else if b, rerr := os.ReadFile(filepath.Join(out.Dir, release.ReportJSON)); rerr == nil {
			_, _ = c.App.Writer.Write(b)
		}
	} else {
		print(out)
		printVerdict(c, out)
	}
	if interrupted(err) {
		return failure(exitInterrupted, "interrupted; what finished is kept in %s\nfinish it with: ttisctl %s --resume %s", out.Dir, c.Command.Name, out.Manifest.ID)
	}
	return verdictExit(out.Report.Acceptance.Verdict)
}

// printVerdict ends a workflow's text output: the verdict in words, and
// where the run and its reports are.
func printVerdict(c *cli.Context, out *release.Outcome) {
	w := safeWriter{c.App.Writer}
	a := out.Report.Acceptance
	fmt.Fprintf(w, "\nVerdict: %s: %s\n", a.Verdict, a.Summary)
	for _, list := range []struct {
		label string
		items []release.Blocker
	}{{"failed", a.Blockers}, {"not measured", a.Missing}} {
		// A cause several checks share is said once, with its fix.
		for _, g := range release.GroupBlockers(list.items) {
			if g.Cause == "" {
				for _, b := range g.Items {
					fmt.Fprintf(w, "  %s: %s: %s\n", list.label, b.Key, b.Message)
				}
				continue
			}
			fmt.Fprintf(w, "  %s (%d): %s\n", list.label, len(g.Items), g.Cause)
			for _, b := range g.Items {
				fmt.Fprintf(w, "    %s: %s\n", b.Key, b.Message)
			}
			if g.Fix != "" {
				fmt.Fprintf(w, "    fix: %s\n", g.Fix)
			}
		}
	}
	fmt.Fprintf(w, "Run %s (%s)\nReports: %s\n", out.Manifest.ID, out.Manifest.Status,
		strings.Join([]string{filepath.Join(out.Dir, release.ReportMarkdown), filepath.Join(out.Dir, release.ReportJSON), filepath.Join(out.Dir, release.ReportHTML)}, "\n         "))
}

// resume finishes the run ref: its plan from the run folder, its server
// found again (the unit through ttisd when the daemon still serves it,
// else the URL it measured).
func resume(c *cli.Context, ref, purpose string, ttl time.Duration, p *progress) (*release.Outcome, error) {
	root, err := storeDir(c)
	if err != nil {
		return nil, err
	}
	store := &runs.Store{Root: root}
	m, dir, err := store.Open(c.Context, ref)
	if err != nil {
		return nil, err
	}
	if c.Command.Name != "release" && workflowOf(c.Command.Name) != m.Workflow {
		return nil, fmt.Errorf("run %s is a %s run: resume it with `ttisctl release --resume %s`", m.ID, m.Workflow, m.ID)
	}
	cfg, tref, err := release.LoadConfig(c.Context, dir)
	if err != nil {
		return nil, err
	}
	if c.IsSet("no-trace-capture") && c.Bool("no-trace-capture") != cfg.NoTraceCapture {
		// The points still to run are measured as the finished ones were.
		fmt.Fprintf(c.App.ErrWriter, "--no-trace-capture ignored: run %s resumes with the choice it started with (trace capture %s)\n",
			m.ID, map[bool]string{true: "skipped", false: "as the target asks"}[cfg.NoTraceCapture])
	}
	q := target.Query{URL: tref.BaseURL, Model: tref.Model, CatalogModel: tref.CatalogModel, Device: tref.Device, Catalog: tref.CatalogMode(), Name: m.Unit,
		Purpose: purpose, TokenTTL: ttl, Issuer: "ttisctl"}
	if q.APIKey, err = apiKey(c); err != nil {
		return nil, err
	}
	if q.Header, err = headers(c); err != nil {
		return nil, err
	}
	if d, err := newClient(c).Unit(c.Context, m.Unit, 0); err == nil && d.State == api.StateActive {
		if u, _, err := daemonUnit(c, m.Unit); err == nil {
			q.Unit, q.URL = u, ""
		}
	}
	if err := runPyTarget(c, &q, q.Unit != nil); err != nil {
		return nil, err
	}
	t, err := target.Resolve(c.Context, q)
	if err != nil {
		return nil, err
	}
	cfg.Target, cfg.Store, cfg.Trigger, cfg.Version, cfg.Progress = t, store, "ttisctl", c.App.Version, p
	if q.Unit != nil {
		cfg.Observe = unitObserver(c, m.Unit)
	}
	if cfg.Hub, err = workflowHub(c, cfg.Workflow, store.Root); err != nil {
		return nil, err
	}
	return release.Resume(c.Context, cfg, m.ID)
}

// workflowOf is the workflow a command runs.
func workflowOf(command string) string {
	switch command {
	case "bench":
		return release.WorkflowBenchmarks
	case "eval":
		return release.WorkflowEvals
	case "test":
		return release.WorkflowTests
	}
	return release.WorkflowRelease
}

// splitList reads repeatable, comma-separated values.
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

// workflowHub is the Hub client that pulls the eval tasks' datasets of a
// run with evals (nil for benchmarks, and for commands without the Hub
// flags); the default cache is the store's state folder's hub/.
func workflowHub(c *cli.Context, workflow, runsRoot string) (*hub.Client, error) {
	if workflow == release.WorkflowBenchmarks || !hasFlag(c, "hub-cache") {
		return nil, nil
	}
	return hubClient(c, filepath.Dir(runsRoot))
}

// hasFlag says whether the command defines a flag.
func hasFlag(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}
