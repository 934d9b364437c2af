package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/cpu"
	"github.com/ttis-dev/ttis/runtime/host"
	"github.com/ttis-dev/ttis/runtime/serve"
	"github.com/ttis-dev/ttis/runtime/sim"
	"github.com/ttis-dev/ttis/runtime/vllm"
	"github.com/ttis-dev/ttis/units"
)

// runtimes is the registry of backends: a unit's runtime name → the
// function that opens its backend (runtime/backend.go). A runtime missing
// here fails `ttisd serve` with a clear error.
var runtimes = map[string]serve.OpenFunc{
	// The sim runtime simulates a text model or a media model, as the
	// unit's model is.
	"sim": func(ctx context.Context, u *units.Unit, _ *slog.Logger) (runtime.Backend, error) {
		if u.Spec != nil && u.Spec.IsMedia() {
			return sim.OpenMedia(ctx, u)
		}
		return sim.Open(ctx, u)
	},
	"cpu": func(ctx context.Context, u *units.Unit, _ *slog.Logger) (runtime.Backend, error) {
		return cpu.Open(ctx, u)
	},
	"vllm": func(ctx context.Context, u *units.Unit, log *slog.Logger) (runtime.Backend, error) {
		s, err := vllm.Open(ctx, u, log)
		if err != nil {
			return nil, err // not a nil *vllm.Server in a non-nil Backend
		}
		return s, nil
	},
}

// The vllm runtime's server is served by forwarding, ends when its process
// does, and reports a media server's workers.
var (
	_ serve.Forwarder      = (*vllm.Server)(nil)
	_ runtime.Exiter       = (*vllm.Server)(nil)
	_ serve.WorkerReporter = (*vllm.Server)(nil)
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "run one unit's inference server in the foreground",
		ArgsUsage: "UNIT_FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"TTIS_LOG_LEVEL"}, Usage: "debug, info, warn or error"},
			&cli.StringSliceFlag{Name: "model-dir", Usage: "folder the unit's model file may live in; repeatable (default: " + units.SystemModelDir + "; ttisd passes its model_dirs)"},
			&cli.DurationFlag{Name: "grace", Value: 0, Usage: "how long in-flight requests may finish after SIGTERM (default: restart.stop_timeout minus 5s, at least 1s)"},
		},
		Action: func(c *cli.Context) error {
			// First: until SIGHUP is caught, it would end the process.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			if c.NArg() != 1 {
				return cli.Exit("usage: ttisd serve UNIT_FILE", 2)
			}
			log, err := serve.NewLogger(c.App.ErrWriter, c.String("log-level"))
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			path := c.Args().First()
			u, hash, err := loadUnit(path)
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			// The daemon's pre-start checks, the same function (a server
			// started by hand gets them too).
			dirs := c.StringSlice("model-dir")
			if len(dirs) == 0 {
				dirs = []string{units.SystemModelDir}
			}
			if err := units.Preflight(u, units.Host{ModelDirs: dirs}); err != nil {
				return cli.Exit(err.Error(), 2)
			}
			reload := make(chan serve.Live)
			o := serve.Options{Version: version, Logger: log, Grace: c.Duration("grace"), UnitHash: hash, Reload: reload}
			ctx, cancel := context.WithCancel(c.Context)
			defer cancel()
			go rereadOnHUP(ctx, path, hup, reload, o)
			return runUnit(ctx, u, runtimes, o)
		},
	}
}

// loadUnit reads a unit file and the hash of its text, which the server
// reports on /health.
func loadUnit(path string) (*units.Unit, string, error) {
	// One read for both: units.ReadFile never blocks on a pipe and bounds
	// the size, and the hash is that of the very text parsed.
	data, err := units.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	// device = "auto" is resolved here, on the host that runs the server,
	// from tt-smi's board list.
	u, err := units.ParseWith(strings.TrimSuffix(filepath.Base(path), units.Ext), path, data, units.Options{DetectDevice: func() (string, error) {
		return host.DetectDevice(context.Background(), host.Env{})
	}})
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return u, hex.EncodeToString(sum[:]), nil
}

// rereadOnHUP re-reads the unit file on every SIGHUP and hands its live
// settings (limits the server reads per request) to the server. ttisd
// sends SIGHUP only when nothing else changed; a file that no longer
// loads leaves the running settings as they are.
func rereadOnHUP(ctx context.Context, path string, hup <-chan os.Signal, reload chan<- serve.Live, o serve.Options) {
	for {
		select {
		case <-hup:
			u, hash, err := loadUnit(path)
			if err != nil {
				o.Logger.Error("SIGHUP: unit file not re-read; the running settings stay", "err", err)
				continue
			}
			o.Logger.Info("SIGHUP: unit file re-read", "path", path, "hash", hash)
			select {
			case reload <- serve.LiveFor(u, hash, o):
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// runUnit serves u with the backend its runtime opens.
func runUnit(ctx context.Context, u *units.Unit, registry map[string]serve.OpenFunc, o serve.Options) error {
	open, ok := registry[u.Runtime]
	if !ok {
		names := make([]string, 0, len(registry))
		for n := range registry {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unit %s: runtime %q is not available in this build of ttisd serve (available: %s)", u.Name, u.Runtime, strings.Join(names, ", "))
	}
	return serve.RunUnit(ctx, u, open, o)
}
