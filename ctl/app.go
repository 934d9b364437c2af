// Package ctl implements ttisctl, the operator's command-line client: it talks
// to ttisd over the control socket and runs the client-side workflows (bench,
// eval, token minting, model creation) without a daemon.
package ctl

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// App builds the ttisctl command tree.
func App(version string) *cli.App {
	return &cli.App{
		Name:                 "ttisctl",
		Usage:                "control the ttis daemon and run benchmarks and evals",
		Version:              version,
		EnableBashCompletion: true,
		Suggest:              true,
		ExitErrHandler:       func(*cli.Context, error) {},
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
			modelCommand(),
			tokenCommand(),
			releaseCommand(),
			runsCommand(),
			reportCommand(),
		},
	}
}
