// Package ctl implements ttisctl, the operator's command-line client: it talks
// to ttisd over the control socket and runs the client-side workflows (bench,
// eval, token minting, model creation) without a daemon.
package ctl

import (
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
		// One entry per command; each lives in its own file.
		Commands: []*cli.Command{
			validateCommand(),
			catalogCommand(),
			evalCommand(),
		},
	}
}
