package ctl

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "print or locate a run's report (any run: bench, eval or release)",
		ArgsUsage: "RUN",
		Description: `RUN is a run id (as bench, eval, release and runs print it), a unique prefix
of one, or the path of a run folder. --format md (default) prints report.md,
json report.json (also -o json), html report.html; path prints the run
folder's path.

--rebuild writes the run's reports again from its raw files, as run.py's
report workflow does: every benchmarks/benchmark_*.json and lm-eval
results_*.json, graded against the catalog as it is now (or the targets
file the run used), with regressions against the unit's previous run; the
manifest takes the new verdict. Nothing is sent to the server.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "rebuild", Usage: "rewrite report.md/.json/.html (and run.py's report_data) from the run's raw benchmark and eval files, then print"},
			choice(&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "md", Usage: "md, json, html or path"}, "md", "json", "html", "path"),
			&cli.StringFlag{Name: "state-dir", Usage: "state folder holding runs/ (default: the daemon's, else ./ttis-state)"},
		},
		Action: runReport,
	}
}

func runReport(c *cli.Context) error {
	args, err := positional(c, 1, 1)
	if err != nil {
		return err
	}
	format := c.String("format")
	if asJSON, err := jsonOutput(c); err != nil {
		return err
	} else if asJSON {
		format = "json"
	}
	var name string
	switch format {
	case "md":
		name = release.ReportMarkdown
	case "json":
		name = release.ReportJSON
	case "html":
		name = release.ReportHTML
	case "path":
	default:
		return usageError(c, "--format %q: want md, json, html or path", format)
	}
	dir, err := storeDir(c)
	if err != nil {
		return failure(exitError, "%v", err)
	}
	ctx, cancel := storeContext(c)
	defer cancel()
	store := &runs.Store{Root: dir}
	if c.Bool("rebuild") {
		if _, _, err := release.Rebuild(ctx, store, args[0], release.RebuildOptions{}); err != nil {
			return storeError(err)
		}
	}
	m, runDir, err := store.Open(ctx, args[0])
	if err != nil {
		return storeError(err)
	}
	// Every format goes through safeWriter: a report holds what servers
	// said, and a file in the store may be older than the renderer that
	// escapes it, or written by someone else (valid JSON and ttis's HTML
	// carry no control characters, so they pass unchanged).
	w := safeWriter{c.App.Writer}
	if name == "" {
		_, err := io.WriteString(w, runDir+"\n")
		return err
	}
	b, err := runs.ReadFile(ctx, filepath.Join(runDir, name), release.MaxReportBytes)
	if errors.Is(err, os.ErrNotExist) {
		return failure(exitError, "run %s has no %s (status %s)", m.ID, name, m.Status)
	}
	if err != nil {
		return failure(exitError, "%v", err)
	}
	_, err = w.Write(b)
	return err
}
