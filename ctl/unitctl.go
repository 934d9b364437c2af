package ctl

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/api/client"
)

func startCommand() *cli.Command {
	return unitActionCommand("start", "start a unit (clears a failed state)", (*client.Client).Start)
}

func stopCommand() *cli.Command {
	return unitActionCommand("stop", "stop a unit until it is started again", (*client.Client).Stop)
}

func restartCommand() *cli.Command {
	return unitActionCommand("restart", "restart a unit (clears a failed state and the start limit)", (*client.Client).Restart)
}

func unitActionCommand(verb, usage string, call func(*client.Client, context.Context, string) (api.UnitDetail, error)) *cli.Command {
	flags := []cli.Flag(nil)
	if verb != "stop" {
		flags = append(flags, &cli.DurationFlag{Name: "wait", Usage: "wait up to this long for the unit to become active (0: return once started)"})
	}
	return &cli.Command{
		Name:         verb,
		Usage:        usage,
		ArgsUsage:    "UNIT",
		Description:  exitCodesHelp,
		Flags:        flags,
		BashComplete: completeUnits,
		Action: func(c *cli.Context) error {
			args, err := positional(c, 1, 1)
			if err != nil {
				return err
			}
			cl := newClient(c)
			d, err := call(cl, c.Context, args[0])
			if err != nil {
				return daemonError(err)
			}
			if wait := c.Duration("wait"); verb != "stop" && wait > 0 {
				return waitActive(c, cl, d, wait)
			}
			return nil
		},
	}
}

// waitActive polls until the unit is active; failed or timed out is exit 1.
func waitActive(c *cli.Context, cl *client.Client, d api.UnitDetail, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(c.Context, wait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		switch {
		case d.State == api.StateActive:
			return nil
		case d.State == api.StateFailed, d.State == api.StateInactive:
			return failure(exitError, "unit %s is %s (%s): %s", safe(d.Name), d.State, d.SubState, dash(safe(d.LastError)))
		}
		select {
		case <-ctx.Done():
			return cli.Exit(fmt.Sprintf("unit %s not active after %s: %s (%s)", d.Name, wait, d.State, d.SubState), exitError)
		case <-tick.C:
		}
		var err error
		if d, err = cl.Unit(ctx, d.Name, 0); err != nil {
			if ctx.Err() != nil {
				continue
			}
			return daemonError(err)
		}
	}
}

func reloadCommand() *cli.Command {
	return &cli.Command{
		Name:        "reload",
		Usage:       "re-read the units folder now and wait until the changes are applied",
		Description: exitCodesHelp,
		Action: func(c *cli.Context) error {
			if _, err := positional(c, 0, 0); err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			res, err := newClient(c).Reload(c.Context)
			if err != nil {
				return daemonError(err)
			}
			if asJSON {
				return writeJSON(c.App.Writer, res)
			}
			printReload(c.App.Writer, c.App.ErrWriter, res)
			if len(res.Errors) > 0 {
				// A reload that applied some units and refused others is not a
				// success: scripts must see it.
				return failure(exitError, "%d unit file(s) have errors (the units keep their last good version)", len(res.Errors))
			}
			return nil
		},
	}
}

// printReload prints a reload's outcome: unit names (file names, which
// anyone who can write the units folder chooses) and errors are escaped,
// one line each.
func printReload(w, errw io.Writer, res api.ReloadResult) {
	fmt.Fprintf(w, "%d units", res.Units)
	for _, part := range []struct {
		label string
		names []string
	}{{"started", res.Started}, {"stopped", res.Stopped}, {"restarted", res.Changed}} {
		if len(part.names) > 0 {
			names := make([]string, len(part.names))
			for i, n := range part.names {
				names[i] = safe(n)
			}
			fmt.Fprintf(w, "; %s %v", part.label, names)
		}
	}
	fmt.Fprintln(w)
	for _, e := range res.Errors {
		fmt.Fprintln(errw, "error:", safe(e))
	}
}
