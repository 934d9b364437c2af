package ctl

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/runs"
)

func runsCommand() *cli.Command {
	return &cli.Command{
		Name:      "runs",
		Usage:     "list benchmark, eval and release runs in the results store, newest first",
		ArgsUsage: "[UNIT]",
		Description: `Lists every run of UNIT (every unit when none is given), whoever started it
(ttisctl bench, eval or release; a schedule), from the daemon's results
store or from --state-dir. A run whose manifest says running but whose
process is gone shows as interrupted. CONDITIONS names what shapes the
numbers: sim (with its time scale) or the runtime, and the device.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state-dir", Usage: "state folder holding runs/ (default: the daemon's, else ./ttis-state)"},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "show at most this many runs (0: all)"},
		},
		Action:       runRuns,
		BashComplete: completeUnits,
	}
}

func runRuns(c *cli.Context) error {
	args, err := positional(c, 0, 1)
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	dir, err := storeDir(c)
	if err != nil {
		return failure(exitError, "%v", err)
	}
	unit := ""
	if len(args) == 1 {
		unit = args[0]
		// A name no unit can have is a usage error, not an empty list.
		if err := runs.CheckUnitName(unit); err != nil {
			return usageError(c, "%v", err)
		}
	}
	ctx, cancel := storeContext(c)
	defer cancel()
	store := &runs.Store{Root: dir}
	list, errs := store.List(ctx, unit)
	for _, e := range errs {
		fmt.Fprintf(safeWriter{c.App.ErrWriter}, "%v\n", e)
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
		fmt.Fprintf(c.App.Writer, "No runs in %s\n", safe(dir))
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tUNIT\tKIND\tLIMIT\tSTATUS\tVERDICT\tCONDITIONS\tSTARTED\tDURATION")
	for _, m := range list {
		dur := m.Duration(now).Round(time.Second).String()
		if m.Status == runs.StatusInterrupted && m.Finished == nil {
			dur = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safe(m.ID), safe(m.Unit), safe(m.Workflow), dash(safe(m.Limit)),
			safe(m.Status), dash(safe(m.Verdict)), dash(safe(conditionsOf(m))), m.Started.Local().Format("2006-01-02 15:04:05"), dur)
	}
	return tw.Flush()
}

// conditionsOf summarises a run's conditions for the table: "sim x0.05",
// "cpu", "vllm n300".
func conditionsOf(m runs.Manifest) string {
	c := m.Conditions
	s := m.Runtime
	if m.Simulated {
		s = "sim"
		if ts := c["time_scale"]; ts != "" {
			s += " x" + ts
		}
	}
	if d := m.Device; d != "" && d != "cpu" {
		s += " " + d
	}
	return s
}

// storeTimeout bounds what a command spends reading the results store;
// each file's read is bounded too (bench/runs), never blocks on a pipe,
// and SIGINT or SIGTERM (c.Context) ends it at once.
const storeTimeout = time.Minute

// storeContext is the context of a command's reads of the results store.
func storeContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, storeTimeout)
}
