package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon/release"
	"github.com/ttis-dev/ttis/daemon/runs"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "print or locate a run's report",
		ArgsUsage: "[flags] RUN",
		Description: `RUN is a run id, a unique prefix of one, or the path of a run folder.
--format md (default) prints report.md, json report.json, html report.html;
path prints the run folder's path.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "md", Usage: "md, json, html or path"},
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
	var name string
	switch f := c.String("format"); f {
	case "md":
		name = release.ReportMarkdown
	case "json":
		name = release.ReportJSON
	case "html":
		name = release.ReportHTML
	case "path":
	default:
		return usageError(c, "--format %q: want md, json, html or path", f)
	}
	dir, err := storeDir(c)
	if err != nil {
		return cli.Exit("report: "+err.Error(), exitError)
	}
	m, runDir, err := (&runs.Store{Root: dir}).Open(args[0])
	if err != nil {
		return cli.Exit("report: "+err.Error(), exitError)
	}
	if name == "" {
		fmt.Fprintln(c.App.Writer, runDir)
		return nil
	}
	b, err := os.ReadFile(filepath.Join(runDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return cli.Exit(fmt.Sprintf("report: run %s has no %s (status %s)", m.ID, name, m.Status), exitError)
	}
	if err != nil {
		return cli.Exit("report: "+err.Error(), exitError)
	}
	_, err = c.App.Writer.Write(b)
	return err
}
