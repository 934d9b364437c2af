// Command ttisd is the ttis host daemon. "ttisd" supervises every unit in
// the units folder; "ttisd serve UNIT_FILE" runs one unit's inference server
// in the foreground (the process the daemon supervises).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	app := &cli.App{
		Name:           "ttisd",
		Usage:          "keep model inference servers running and prove they are fast and accurate",
		Version:        version,
		Flags:          daemonFlags(),
		Action:         runDaemon,
		Commands:       []*cli.Command{serveCommand(), docsCommand()},
		ExitErrHandler: func(*cli.Context, error) {},
	}
	// SIGTERM and SIGINT cancel ctx; each mode drains before returning.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "ttisd:", err)
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}
