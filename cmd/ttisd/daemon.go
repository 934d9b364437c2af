package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// daemonFlags and runDaemon are replaced by the daemon work (issue 3).
func daemonFlags() []cli.Flag { return nil }

func runDaemon(*cli.Context) error { return errors.New("daemon mode is not built yet") }
