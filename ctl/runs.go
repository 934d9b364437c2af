package ctl

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon/runs"
)

func runsCommand() *cli.Command {
	return &cli.Command{
		Name:      "runs",
		Usage:     "list benchmark, eval and release runs in the results store, newest first",
		ArgsUsage: "[UNIT]",
		Description: `Lists the runs of UNIT (every unit when none is given) from the daemon's
results store, or from --state-dir. A run whose manifest says running but
whose process is gone shows as interrupted.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state-dir", Usage: "state folder holding runs/ (default: the daemon's, else ./ttis-state)"},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "show at most this many runs (0: all)"},
			// Also accepted after the command name (ttisctl runs -o json),
			// where the global flag is not parsed.
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "table or json (default: the global --output)"},
		},
		Action: runRuns,
	}
}

func runRuns(c *cli.Context) error {
	args, err := positional(c, 0, 1)
	if err != nil {
		return err
	}
	asJSON, err := localOrGlobalJSON(c)
	if err != nil {
		return err
	}
	dir, err := storeDir(c)
	if err != nil {
		return cli.Exit("runs: "+err.Error(), exitError)
	}
	unit := ""
	if len(args) == 1 {
		unit = args[0]
	}
	store := &runs.Store{Root: dir}
	list, errs := store.List(unit)
	for _, e := range errs {
		fmt.Fprintf(c.App.ErrWriter, "runs: %v\n", e)
	}
	if n := c.Int("limit"); n > 0 && len(list) > n {
		list = list[:n]
	}
	if asJSON {
		if list == nil {
			list = []runs.Manifest{}
		}
		return writeJSON(c.App.Writer, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(c.App.Writer, "No runs in %s\n", dir)
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tUNIT\tWORKFLOW\tLIMIT\tSTATUS\tVERDICT\tSTARTED\tDURATION")
	for _, m := range list {
		verdict := m.Verdict
		if m.Simulated && verdict != "" {
			verdict += " (sim)"
		}
		dur := m.Duration(now).Round(time.Second).String()
		if m.Status == runs.StatusInterrupted {
			dur = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Unit, m.Workflow, dash(m.Limit), m.Status, dash(verdict),
			m.Started.Local().Format("2006-01-02 15:04:05"), dur)
	}
	return tw.Flush()
}

// localOrGlobalJSON reads a command's own --output, else the global one.
func localOrGlobalJSON(c *cli.Context) (bool, error) {
	o := c.String("output")
	for _, p := range c.Lineage()[1:] {
		if o != "" {
			break
		}
		o = p.String("output")
	}
	switch o {
	case "json":
		return true, nil
	case "table", "":
		return false, nil
	}
	return false, cli.Exit(fmt.Sprintf("--output %q: want table or json", o), exitUsage)
}
