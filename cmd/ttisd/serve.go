package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu"
	"github.com/ttis-dev/ttis/runtime/serve"
	"github.com/ttis-dev/ttis/runtime/sim"
	"github.com/ttis-dev/ttis/runtime/vllm"
	"github.com/ttis-dev/ttis/units"
)

// runtimes maps a unit's runtime name to the function that opens its engine.
// A runtime missing here and in upstreams fails `ttisd serve` with a clear
// error.
var runtimes = map[string]serve.OpenFunc{
	"sim": sim.Open,
	"cpu": cpu.Open,
}

// upstreams maps runtimes that forward to an upstream server.
var upstreams = map[string]serve.UpstreamOpenFunc{
	"vllm": func(ctx context.Context, u *units.Unit, log *slog.Logger) (serve.Upstream, error) {
		s, err := vllm.Open(ctx, u, log)
		if err != nil {
			return nil, err
		}
		return s, nil
	},
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "run one unit's inference server in the foreground",
		ArgsUsage: "UNIT_FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"TTIS_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
			&cli.DurationFlag{Name: "grace", Value: 0, Usage: "how long in-flight requests may finish after SIGTERM (default: restart.stop_timeout minus 5s, at least 1s)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("usage: ttisd serve UNIT_FILE", 2)
			}
			log, err := serve.NewLogger(c.App.ErrWriter, c.String("log-level"))
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			u, err := units.Load(c.Args().First())
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			return runUnit(c.Context, u, runtimes, upstreams, serve.Options{Version: version, Logger: log, Grace: c.Duration("grace")})
		},
	}
}

// runUnit serves u with the engine or upstream its runtime opens.
func runUnit(ctx context.Context, u *units.Unit, opens map[string]serve.OpenFunc, ups map[string]serve.UpstreamOpenFunc, o serve.Options) error {
	if up, ok := ups[u.Runtime]; ok {
		log := o.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		return serve.RunUnitUpstream(ctx, u, func(ctx context.Context) (serve.Upstream, error) { return up(ctx, u, log) }, o)
	}
	open, ok := opens[u.Runtime]
	if !ok {
		names := make([]string, 0, len(opens)+len(ups))
		for n := range opens {
			names = append(names, n)
		}
		for n := range ups {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unit %s: runtime %q is not available in this build of ttisd serve (available: %s)", u.Name, u.Runtime, strings.Join(names, ", "))
	}
	return serve.RunUnit(ctx, u, func(ctx context.Context) (runtime.Engine, error) { return open(ctx, u) }, o)
}
