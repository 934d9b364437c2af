// Command ttisctl is the operator's CLI for ttisd.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ttis-dev/ttis/ctl"
	"github.com/urfave/cli/v2"
)

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := ctl.App(version).RunContext(ctx, os.Args)
	stop()
	if err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, "ttisctl:", msg)
			}
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "ttisctl:", err)
		os.Exit(1)
	}
}
