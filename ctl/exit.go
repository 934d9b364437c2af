package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/urfave/cli/v2"
)

// Exit codes of the daemon commands, as systemctl's (LSB) where they
// overlap; success is 0.
const (
	// exitError: the command failed.
	exitError = 1
	// exitUsage: bad arguments or flags.
	exitUsage = 2
	// exitNotActive: status of a unit that is not active.
	exitNotActive = 3
	// exitNoUnit: the named unit does not exist.
	exitNoUnit = 4
	// exitUnavailable: the daemon cannot be reached (EX_UNAVAILABLE).
	exitUnavailable = 69
)

// exitCodesHelp documents the codes in --help.
const exitCodesHelp = "Exit codes: 0 ok, 1 error, 2 usage, 3 unit not active (status), 4 no such unit, 69 ttisd unreachable."

// usageError is a usage problem: exit 2 with the command's usage hint.
func usageError(c *cli.Context, format string, a ...any) error {
	return cli.Exit(fmt.Sprintf("%s: %s (see \"ttisctl %s --help\")", c.Command.Name, fmt.Sprintf(format, a...), c.Command.Name), exitUsage)
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

// positional checks the positional arguments: between min and max (-1: no
// limit), and none that looks like a flag, since urfave/cli v2 does not
// parse flags after the first positional argument.
func positional(c *cli.Context, min, max int) ([]string, error) {
	args := c.Args().Slice()
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			return nil, usageError(c, "flag %q after an argument; put flags before %s", a, strings.ToUpper(c.Command.ArgsUsage))
		}
	}
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

// jsonOutput reports whether --output asks for JSON, rejecting unknown
// formats.
func jsonOutput(c *cli.Context) (bool, error) {
	switch o := c.String("output"); o {
	case "json":
		return true, nil
	case "table", "":
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
func newClient(c *cli.Context) *client.Client { return client.New(c.String("socket")) }

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
