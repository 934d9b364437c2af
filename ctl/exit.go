package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/daemon/api/client"
)

// Exit codes, as systemctl's (LSB) where they overlap; success is 0. The
// workflow commands (bench, eval, release) add their verdicts.
const (
	// exitError: the command failed.
	exitError = 1
	// exitUsage: bad arguments or flags, on every command.
	exitUsage = 2
	// exitNotActive: status of a unit that is not active.
	exitNotActive = 3
	// exitNoUnit: the named unit (or run) does not exist.
	exitNoUnit = 4
	// exitFail: a workflow's verdict is FAIL (an enforced check failed).
	exitFail = 3
	// exitIncomplete: a workflow's verdict is INCOMPLETE (something
	// required was not measured).
	exitIncomplete = 5
	// exitUnavailable: the daemon cannot be reached (EX_UNAVAILABLE).
	exitUnavailable = 69
	// exitInterrupted: stopped by SIGINT or SIGTERM (128+2, as shells
	// report Ctrl-C); what finished is kept and --resume finishes it.
	exitInterrupted = 130
)

// exitCodesHelp documents the codes in --help.
const exitCodesHelp = "Exit codes: 0 ok, 1 error, 2 usage, 3 unit not active (status), 4 no such unit or run, 69 ttisd unreachable."

// workflowExitHelp documents the workflow commands' codes.
const workflowExitHelp = "Exit codes: 0 PASS or UNGRADED, 1 could not run, 2 usage, 3 FAIL, 4 no such unit or run, 5 INCOMPLETE,\n" +
	"69 ttisd unreachable, 130 interrupted (finished parts kept; --resume RUN finishes it)."

// failure is an error with the exit status it stands for. Messages never
// name the command: Main prefixes every message once ("ttisctl eval: ").
func failure(code int, format string, a ...any) error {
	return cli.Exit(fmt.Sprintf(format, a...), code)
}

// usageError is a usage problem: exit 2 with the command's help hint.
func usageError(c *cli.Context, format string, a ...any) error {
	return cli.Exit(fmt.Sprintf("%s (see \"%s --help\")", fmt.Sprintf(format, a...), c.Command.HelpName), exitUsage)
}

// onUsageError turns urfave/cli's flag errors into exit 2.
func onUsageError(c *cli.Context, err error, _ bool) error {
	name := "ttisctl"
	if c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	return cli.Exit(fmt.Sprintf("%v (see \"%s --help\")", err, name), exitUsage)
}

// daemonError turns an error of the control API client into an exit code:
// 69 when the daemon is not there, 4 for an unknown unit, 1 otherwise.
func daemonError(err error) error {
	switch {
	case err == nil:
		return nil
	case client.IsUnreachable(err):
		return cli.Exit(err.Error(), exitUnavailable)
	case client.IsNotFound(err):
		return cli.Exit(err.Error(), exitNoUnit)
	}
	return cli.Exit(err.Error(), exitError)
}

// storeError turns an error of the results store into an exit code: 4 for
// a run that is not there (as for an unknown unit), 1 otherwise.
func storeError(err error) error {
	if errors.Is(err, runs.ErrNoRun) {
		return cli.Exit(err.Error(), exitNoUnit)
	}
	return cli.Exit(err.Error(), exitError)
}

// verdictExit is the exit status of a workflow's verdict.
func verdictExit(verdict string) error {
	switch verdict {
	case release.VerdictFail:
		return cli.Exit("", exitFail)
	case release.VerdictIncomplete:
		return cli.Exit("", exitIncomplete)
	}
	return nil
}

// positional checks the number of positional arguments: between min and
// max (-1: no limit).
func positional(c *cli.Context, min, max int) ([]string, error) {
	args := c.Args().Slice()
	switch {
	case len(args) < min && min == max:
		return nil, usageError(c, "want %s", c.Command.ArgsUsage)
	case len(args) < min:
		return nil, usageError(c, "want at least %d argument(s): %s", min, c.Command.ArgsUsage)
	case max >= 0 && len(args) > max:
		return nil, usageError(c, "too many arguments: want %s", c.Command.ArgsUsage)
	}
	return args, nil
}

// jsonOutput reports whether -o/--output asks for JSON, rejecting unknown
// formats.
func jsonOutput(c *cli.Context) (bool, error) {
	switch o := global(c, "output"); o {
	case "json":
		return true, nil
	case "table", "text", "":
		return false, nil
	default:
		return false, cli.Exit(fmt.Sprintf("--output %q: want table or json", o), exitUsage)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newClient returns a control API client for --socket (or TTIS_SOCKET).
func newClient(c *cli.Context) *client.Client { return client.New(global(c, "socket")) }

// interrupted reports whether err is a workflow stopped by a signal.
func interrupted(err error) bool { return errors.Is(err, release.ErrInterrupted) }

// completeUnits prints the daemon's unit names for shell completion; it
// prints nothing when the daemon does not answer quickly.
func completeUnits(c *cli.Context) {
	ctx, cancel := context.WithTimeout(c.Context, time.Second)
	defer cancel()
	list, err := newClient(c).Units(ctx)
	if err != nil {
		return
	}
	for _, u := range list.Units {
		fmt.Fprintln(c.App.Writer, u.Name)
	}
}
