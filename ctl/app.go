// Package ctl implements ttisctl, the operator's command-line client. It is
// flags and output only: the control API client (daemon/api/client) talks
// to ttisd, and the workflows (bench, eval, release) run in bench/release
// against the server bench/target resolves, the same code ttisd's schedules
// run.
package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/units/limit"
)

// App builds the ttisctl command tree. Every command also takes the global
// flags (--socket, -o/--output), so they work before or after it.
func App(version string) *cli.App {
	app := &cli.App{
		Name:                 "ttisctl",
		Usage:                "control the ttis daemon and run benchmarks and evals",
		Version:              version,
		EnableBashCompletion: true,
		Suggest:              true,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError:         onUsageError,
		Flags:                globalFlags(),
		// An unknown command is a usage error (exit 2); urfave/cli's own
		// "No help topic" exits 3, which means "not active" here.
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("unknown command %q (see \"ttisctl --help\")", c.Args().First()), exitUsage)
			}
			return cli.ShowAppHelp(c)
		},
		// One entry per command; each lives in its own file.
		Commands: []*cli.Command{
			statusCommand(),
			startCommand(),
			stopCommand(),
			restartCommand(),
			reloadCommand(),
			logsCommand(),
			devicesCommand(),
			validateCommand(),
			catalogCommand(),
			benchCommand(),
			evalCommand(),
			releaseCommand(),
			testCommand(),
			runsCommand(),
			reportCommand(),
			modelCommand(),
			datasetCommand(),
			tokenCommand(),
			planCommand(),
			doctorCommand(),
		},
	}
	for _, c := range app.Commands {
		inherit(c)
	}
	return app
}

// globalFlags are the flags every command reads.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "socket", Value: client.DefaultSocket, EnvVars: []string{"TTIS_SOCKET"}, Usage: "control socket of ttisd"},
		choice(&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format: table or json"}, "table", "json"),
	}
}

// choiceFlag is a string flag with a fixed set of values, which the
// completion scripts offer (packaging/clidoc.Chooser); the command still
// checks the value it reads.
type choiceFlag struct {
	*cli.StringFlag
	values []string
}

// Choices implements packaging/clidoc.Chooser.
func (f choiceFlag) Choices() []string { return f.values }

func choice(f *cli.StringFlag, values ...string) cli.Flag { return choiceFlag{f, values} }

// limitModes are the run sizes --limit completes to.
func limitModes() []string {
	var out []string
	for _, m := range limit.All() {
		out = append(out, string(m))
	}
	return out
}

// global reads a global flag on the command that runs: reorder puts every
// global flag of the command line there, so its copy holds the command
// line's value, else the environment's, else the default.
func global(c *cli.Context, name string) string { return c.String(name) }

// inherit gives c and its subcommands the global flags they do not define,
// and the usage-error handler: urfave/cli v2 reads an app's flags only
// before the command name.
func inherit(c *cli.Command) {
	have := map[string]bool{}
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			have[n] = true
		}
	}
	for _, f := range globalFlags() {
		if !have[f.Names()[0]] {
			c.Flags = append(c.Flags, f)
		}
	}
	c.OnUsageError = onUsageError
	for _, s := range c.Subcommands {
		inherit(s)
	}
}

// Main runs ttisctl with args (args[0] is the program name) and returns
// its exit status. Flags may come before or after the arguments; every
// error is printed once, as "ttisctl COMMAND: message", with control
// characters escaped.
func Main(ctx context.Context, version string, args []string, stdout, stderr io.Writer) int {
	app := App(version)
	app.Writer, app.ErrWriter = stdout, stderr
	args, path := reorder(app, args)
	err := app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	code := exitError
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ec):
		code = ec.ExitCode()
	case strings.HasPrefix(err.Error(), "Required flag"):
		// urfave/cli reports a missing required flag past the usage hook,
		// in an unexported type.
		code = exitUsage
	}
	if msg := err.Error(); msg != "" {
		prefix := strings.Join(append([]string{"ttisctl"}, path...), " ")
		fmt.Fprintf(stderr, "%s: %s\n", prefix, escapeControls(msg, true))
	}
	return code
}
