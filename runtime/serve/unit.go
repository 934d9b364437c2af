package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"golang.org/x/term"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// OpenFunc opens a unit's engine; each runtime provides one
// (sim.Open, cpu.Open, …).
type OpenFunc func(ctx context.Context, u *units.Unit) (runtime.Engine, error)

// Options are the process-level settings of RunUnit.
type Options struct {
	// Version is ttis's version (GET /version).
	Version string
	Logger  *slog.Logger
	// Grace overrides the shutdown grace period; 0 derives it from the
	// unit's restart.stop_timeout (5s less, so the daemon's SIGKILL never
	// cuts a drain short), or 30s.
	Grace time.Duration
	// Heartbeat overrides the SSE heartbeat interval (tests).
	Heartbeat time.Duration
}

// ConfigFor builds the server configuration for a loaded unit.
func ConfigFor(u *units.Unit, o Options) (Config, error) {
	v, err := auth.New(u.Auth.Mode, u.Auth.SecretFile)
	if err != nil {
		return Config{}, fmt.Errorf("unit %s: %w", u.Name, err)
	}
	cfg := Config{
		Listen: u.Listen, Model: u.Model, Auth: v,
		MaxConcurrency: u.Limits.MaxConcurrency, MaxQueue: u.Limits.MaxQueue, MaxContext: u.Limits.MaxContext,
		RequestTimeout: u.Limits.RequestTimeout.Duration, MaxBodyBytes: u.Limits.MaxBodyBytes,
		ShutdownGrace: o.Grace, Heartbeat: o.Heartbeat, Version: o.Version, Logger: o.Logger,
	}
	if u.API.Legacy {
		cfg.LegacyRoute = u.API.LegacyRoute
	}
	if u.Name != "" && u.Name != u.Model {
		cfg.Aliases = append(cfg.Aliases, u.Name)
	}
	if spec, err := catalog.Lookup(u.Model, u.Device); err == nil {
		// Clients (vllm bench, lm-eval) name models by their HF repo.
		cfg.Aliases = append(cfg.Aliases, spec.HFRepo, spec.ModelName)
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 30 * time.Second
		if st := u.Restart.StopTimeout.Duration; st > 0 {
			cfg.ShutdownGrace = max(st-5*time.Second, st/2, time.Second)
		}
	}
	if cfg.MaxConcurrency == 0 {
		return Config{}, fmt.Errorf("unit %s: limits.max_concurrency is not set and the catalog gives none", u.Name)
	}
	return cfg, nil
}

// RunUnit serves a loaded unit until ctx ends (see Run).
func RunUnit(ctx context.Context, u *units.Unit, open func(context.Context) (runtime.Engine, error), o Options) error {
	cfg, err := ConfigFor(u, o)
	if err != nil {
		return err
	}
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With("unit", u.Name)
	}
	return Run(ctx, cfg, open)
}

// UpstreamOpenFunc opens a unit's upstream server (vllm.Open, adapted).
type UpstreamOpenFunc func(ctx context.Context, u *units.Unit, log *slog.Logger) (Upstream, error)

// RunUnitUpstream serves a loaded unit by forwarding to the upstream that
// open starts (see RunUpstream).
func RunUnitUpstream(ctx context.Context, u *units.Unit, open func(context.Context) (Upstream, error), o Options) error {
	cfg, err := ConfigFor(u, o)
	if err != nil {
		return err
	}
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With("unit", u.Name)
	}
	return RunUpstream(ctx, cfg, open)
}

// NewLogger returns the serve process's logger: tint (coloured text) when
// w is a terminal, JSON lines otherwise.
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: l, TimeFormat: time.TimeOnly})), nil
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}
