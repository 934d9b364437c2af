package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/runtime/logging"
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
	// UnitHash is the hex SHA-256 of the unit text (see Config.UnitHash).
	UnitHash string
	// Reload delivers the live settings of re-read versions of the unit
	// (ttisd serve re-reads its file on SIGHUP; see LiveFor).
	Reload <-chan Live
}

// ConfigFor builds the server configuration for a loaded unit.
func ConfigFor(u *units.Unit, o Options) (Config, error) {
	v, err := auth.New(u.Auth.Mode, u.Auth.SecretFile, auth.Policy{MaxLifetime: u.Auth.MaxTokenLifetime.Duration, AllowNoExpiry: u.Auth.AllowNoExpiry})
	if err != nil {
		return Config{}, fmt.Errorf("unit %s: %w", u.Name, err)
	}
	cfg := Config{
		Listen: u.Listen, Model: u.Model, Auth: v,
		MaxConcurrency: u.Limits.MaxConcurrency, MaxQueue: u.Limits.MaxQueue, MaxContext: u.Limits.MaxContext,
		RequestTimeout: u.Limits.RequestTimeout.Duration, MaxBodyBytes: u.Limits.MaxBodyBytes, MaxInflightBytes: u.Limits.MaxInflightBytes,
		WriteTimeout:  u.Limits.WriteTimeout.Duration,
		ShutdownGrace: shutdownGrace(u, o), Heartbeat: o.Heartbeat, Version: o.Version, Logger: o.Logger,
		UnitHash: o.UnitHash, Reload: o.Reload, Conditions: ConditionsOf(u),
		MediaLimits: MediaLimits{MaxAudioSeconds: u.Media.MaxAudioDurationSeconds, MaxAudioBytes: u.Media.MaxAudioSizeBytes},
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
	if cfg.MaxConcurrency == 0 {
		return Config{}, fmt.Errorf("unit %s: limits.max_concurrency is not set and the catalog gives none", u.Name)
	}
	return cfg, nil
}

// shutdownGrace is o.Grace, or the unit's restart.stop_timeout less 5s
// (so the daemon's SIGKILL never cuts a drain short), or 30s.
func shutdownGrace(u *units.Unit, o Options) time.Duration {
	if o.Grace > 0 {
		return o.Grace
	}
	if st := u.Restart.StopTimeout.Duration; st > 0 {
		return max(st-5*time.Second, st/2, time.Second)
	}
	return 30 * time.Second
}

// LiveFor returns the live settings of a re-read version of a unit, whose
// text hashes to hash.
func LiveFor(u *units.Unit, hash string, o Options) Live {
	return Live{MaxQueue: u.Limits.MaxQueue, RequestTimeout: u.Limits.RequestTimeout.Duration, ShutdownGrace: shutdownGrace(u, o), UnitHash: hash}
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

// MediaOpenFunc opens a media unit's engine (sim.OpenMedia).
type MediaOpenFunc func(ctx context.Context, u *units.Unit) (runtime.MediaEngine, error)

// RunUnitMedia serves a loaded media unit (see RunMedia).
func RunUnitMedia(ctx context.Context, u *units.Unit, open func(context.Context) (runtime.MediaEngine, error), o Options) error {
	cfg, err := ConfigFor(u, o)
	if err != nil {
		return err
	}
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With("unit", u.Name)
	}
	return RunMedia(ctx, cfg, open)
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
// w is a terminal, priority-prefixed lines on systemd's journal stream, JSON
// lines otherwise (what ttisd reads from a server it supervises).
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	return logging.New(w, logging.FormatAuto, level)
}
