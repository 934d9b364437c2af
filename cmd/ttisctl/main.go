// Command ttisctl is the operator's CLI for ttisd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ttis-dev/ttis/ctl"
)

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := ctl.Main(ctx, version, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
