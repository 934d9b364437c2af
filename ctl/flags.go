package ctl

import (
	"github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/urfave/cli/v2"
)

// globalFlags are readable from every subcommand.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "socket", Value: client.DefaultSocket, EnvVars: []string{"TTIS_SOCKET"}, Usage: "control socket of ttisd"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format of read commands: table or json"},
	}
}
