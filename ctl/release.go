package ctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	benchclient "github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/daemon/api"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/daemon/release"
	"github.com/ttis-dev/ttis/daemon/runs"
)

// releaseExitRejected: the run finished and its report was written, but
// acceptance failed (a blocker, or an incomplete step).
const releaseExitRejected = 3

func releaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "run the release workflow (evals, then the benchmark sweep) and write one report with an acceptance verdict",
		ArgsUsage: "[flags] UNIT | --url URL --model M --device D",
		Description: `Runs a limited eval (the catalog's tasks for the model when ttis can run them
without a download, otherwise the built-in deterministic tasks), then the
benchmark sweep for --limit, into one run folder of the results store
(<state>/runs/<unit>/<run-id>/), and writes report.md, report.json and
report.html there. Metrics are compared with the unit's previous complete run
of the same workflow; regressions are flagged in the report.

With UNIT, ttisd supplies the address, model, device and auth, and the
results go to its state folder. With --url, no daemon is needed: --state-dir
(default: the daemon's, if one answers, else ./ttis-state) receives the run.

Exit status: 0 accepted, 1 could not run, 3 acceptance failed (see the report),
4 no such unit, 69 ttisd unreachable.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "server root, e.g. http://127.0.0.1:8000 (no daemon)"},
			&cli.StringFlag{Name: "model", Usage: "model name to send (default: the server's first model)"},
			&cli.StringFlag{Name: "catalog-model", Usage: "catalog model for targets, references and status (default: --model)"},
			&cli.StringFlag{Name: "device", Usage: "catalog device (url mode)"},
			&cli.StringFlag{Name: "unit", Usage: "unit name the run is filed under (url mode; default url-<model>-<device>)"},
			&cli.StringFlag{Name: "workflow", Value: release.WorkflowRelease, Usage: "release, benchmarks or evals"},
			&cli.StringFlag{Name: "limit", Value: "smoke", Usage: "smoke, ci-commit, ci-nightly or full"},
			&cli.StringSliceFlag{Name: "task", Usage: "eval task (repeatable; default: the catalog's tasks or the built-in ones)"},
			&cli.StringSliceFlag{Name: "dataset", Usage: "local eval dataset TASK=PATH (repeatable)"},
			&cli.StringFlag{Name: "eval-api", Value: "completions", Usage: "completions or chat"},
			&cli.StringFlag{Name: "api-key", EnvVars: []string{"OPENAI_API_KEY"}, Usage: "bearer token"},
			&cli.StringFlag{Name: "api-key-file", Usage: "file holding the bearer token"},
			&cli.DurationFlag{Name: "request-timeout", Value: 10 * time.Minute, Usage: "bound on one request"},
			&cli.StringFlag{Name: "state-dir", Usage: "state folder holding runs/ (default: the daemon's; url mode without a daemon: ./ttis-state)"},
		},
		Action: runRelease,
	}
}

var unsafeUnitChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func runRelease(c *cli.Context) error {
	fail := func(format string, a ...any) error {
		return cli.Exit("release: "+fmt.Sprintf(format, a...), 1)
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	t := release.Target{BaseURL: c.String("url"), Model: c.String("model"), CatalogModel: c.String("catalog-model"), Device: c.String("device")}
	key := c.String("api-key")
	if f := c.String("api-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fail("--api-key-file: %v", err)
		}
		key = strings.TrimSpace(string(b))
	}
	t.APIKey = key
	var runsDir string
	switch {
	case t.BaseURL != "" && c.NArg() > 0:
		return fail("give either UNIT or --url, not both")
	case t.BaseURL != "":
		if runsDir, err = storeDir(c); err != nil {
			return fail("%v", err)
		}
	case c.NArg() == 1:
		if runsDir, err = resolveReleaseUnit(c, &t); err != nil {
			switch {
			case daemonclient.IsUnreachable(err):
				return cli.Exit("release: "+err.Error(), exitUnavailable)
			case daemonclient.IsNotFound(err):
				return cli.Exit("release: "+err.Error(), exitNoUnit)
			}
			return fail("%v", err)
		}
		if c.String("state-dir") != "" {
			if runsDir, err = storeDir(c); err != nil {
				return fail("%v", err)
			}
		}
	case c.NArg() > 1:
		return fail("flags after UNIT are not read (%q...): put them before it", c.Args().Get(1))
	default:
		return fail("give a UNIT or --url URL")
	}
	// The server says what it serves: the model name when not given, the
	// context length, and whether it is simulated.
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	cards, err := benchclient.ListModels(ctx, t.BaseURL, bearer(t.APIKey))
	cancel()
	switch {
	case err != nil && t.Model == "":
		return fail("no --model given and the server's model list failed: %v", err)
	case err == nil && len(cards) > 0:
		card := cards[0]
		for _, cd := range cards {
			if cd.ID == t.Model {
				card = cd
			}
		}
		if t.Model == "" {
			t.Model = card.ID
		}
		t.Simulated = t.Simulated || card.Simulated
		t.MaxModelLen = card.MaxModelLen
		if t.Runtime == "" {
			t.Runtime = card.Runtime
		}
	}
	if t.Model == "" {
		return fail("no --model given and the server lists no model")
	}
	if t.Unit == "" {
		t.Unit = c.String("unit")
	}
	if t.Unit == "" {
		name := "url-" + filepath.Base(firstNonEmpty(t.CatalogModel, t.Model))
		if t.Device != "" {
			name += "-" + t.Device
		}
		t.Unit = strings.Trim(unsafeUnitChars.ReplaceAllString(name, "-"), "-.")
	}
	datasets := map[string]string{}
	for _, kv := range c.StringSlice("dataset") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return fail("--dataset %q: want TASK=PATH", kv)
		}
		datasets[k] = v
	}
	progress := c.App.ErrWriter
	out, err := release.Run(c.Context, release.Config{
		Target: t, Workflow: c.String("workflow"), Limit: c.String("limit"), EvalTasks: splitList(c.StringSlice("task")),
		EvalDatasets: datasets, EvalAPI: c.String("eval-api"), RequestTimeout: c.Duration("request-timeout"),
		Store: &runs.Store{Root: runsDir}, Trigger: "ttisctl", Version: c.App.Version, Progress: progress,
	})
	if err != nil {
		return fail("%v", err)
	}
	if asJSON {
		if err := writeJSON(c.App.Writer, map[string]any{"run": out.Manifest, "dir": out.Dir, "acceptance_criteria": out.Report.Acceptance.Passed}); err != nil {
			return err
		}
	} else {
		w := c.App.Writer
		if out.Report.Metadata.Simulated {
			fmt.Fprintln(w, "SIMULATED: results from the sim runtime, not hardware.")
		}
		fmt.Fprint(w, release.AcceptanceMarkdown(out.Report))
		if rg := out.Report.Regressions; rg != nil {
			fmt.Fprintf(w, "\nRegressions against run %s: %d of %d compared metrics\n", rg.Against, len(rg.Items), rg.Compared)
		}
		fmt.Fprintf(w, "\nRun %s (%s)\nReports: %s\n", out.Manifest.ID, out.Manifest.Status,
			strings.Join([]string{filepath.Join(out.Dir, release.ReportMarkdown), filepath.Join(out.Dir, release.ReportJSON), filepath.Join(out.Dir, release.ReportHTML)}, "\n         "))
	}
	if !out.Report.Acceptance.Passed {
		return cli.Exit("", releaseExitRejected)
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func bearer(key string) map[string][]string {
	if key == "" {
		return nil
	}
	return map[string][]string{"Authorization": {"Bearer " + key}}
}

// storeDir finds the results store without a unit: --state-dir, else the
// daemon's (when one answers), else ./ttis-state.
func storeDir(c *cli.Context) (string, error) {
	if d := c.String("state-dir"); d != "" {
		return filepath.Abs(filepath.Join(d, "runs"))
	}
	ctx, cancel := context.WithTimeout(c.Context, 3*time.Second)
	defer cancel()
	info, err := daemonclient.New(c.String("socket")).Info(ctx)
	switch {
	case err == nil && info.RunsDir != "":
		return info.RunsDir, nil
	case err == nil:
		return filepath.Join(info.StateDir, "runs"), nil
	case daemonclient.IsUnreachable(err):
		return filepath.Abs(filepath.Join("ttis-state", "runs"))
	}
	return "", fmt.Errorf("daemon info: %w (or pass --state-dir)", err)
}

// resolveReleaseUnit asks ttisd for a unit's address, model, device,
// runtime and auth, and returns the daemon's results folder.
func resolveReleaseUnit(c *cli.Context, t *release.Target) (string, error) {
	name := c.Args().First()
	ep, err := daemonclient.New(c.String("socket")).Endpoint(c.Context, name)
	if err != nil {
		return "", err
	}
	if ep.State != api.StateActive {
		return "", fmt.Errorf("unit %s is %s, not active", name, ep.State)
	}
	t.Unit, t.BaseURL, t.Device, t.Runtime = name, ep.BaseURL, ep.Device, ep.Runtime
	t.Simulated = ep.Runtime == "sim"
	if !strings.HasSuffix(strings.ToLower(ep.Model), ".gguf") && t.Model == "" {
		// A cpu unit names a model file; the server reports its name.
		t.Model = ep.Model
	}
	// A release may run for hours at full limits.
	tok, err := unitBearer(name, ep.AuthMode, ep.SecretFile, "release", 24*time.Hour, t.APIKey != "")
	if err != nil {
		return "", err
	}
	if tok != "" {
		t.APIKey = tok
	}
	if ep.RunsDir == "" {
		return "", errors.New("the daemon reports no results folder")
	}
	return ep.RunsDir, nil
}
