package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// serveCommand is replaced by the inference-server work (issue 2).
func serveCommand() *cli.Command {
	return &cli.Command{Name: "serve", Action: func(*cli.Context) error { return errors.New("serve is not built yet") }}
}
