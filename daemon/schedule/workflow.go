package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	benchclient "github.com/ttis-dev/ttis/bench/client"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
	"github.com/ttis-dev/ttis/daemon/release"
	"github.com/ttis-dev/ttis/daemon/runs"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/units"
)

// WorkflowRunner returns the RunFunc the daemon schedules: it resolves the
// unit's address, model and credentials from the unit file and runs the
// schedule's workflow (benchmarks, evals or release) with its limit into
// store. active, when set, refuses a unit that is not serving. A run that
// finishes with a failed acceptance is reported as an error, so the
// schedule's last result shows it; the report is in the store either way.
func WorkflowRunner(store *runs.Store, version string, active func(unit string) error, log *slog.Logger) RunFunc {
	return func(ctx context.Context, u *units.Unit, s units.Schedule) error {
		if active != nil {
			if err := active(u.Name); err != nil {
				return err
			}
		}
		t, err := TargetOf(ctx, u)
		if err != nil {
			return err
		}
		out, err := release.Run(ctx, release.Config{Target: t, Workflow: s.Workflow, Limit: s.Limit, Store: store,
			Trigger: "schedule", Version: version, Logger: log})
		if err != nil {
			return err
		}
		if !out.Report.Acceptance.Passed {
			return fmt.Errorf("run %s: acceptance failed (%d blockers)", out.Manifest.ID, len(out.Report.Acceptance.Blockers))
		}
		return nil
	}
}

// TargetOf builds a workflow target from a unit file: its listen address
// (a wildcard host becomes loopback), model, device, runtime and auth (a
// JWT is minted from the unit's secret). A cpu unit names a model file, so
// the served name is asked from the server.
func TargetOf(ctx context.Context, u *units.Unit) (release.Target, error) {
	base, err := daemonclient.BaseURL(u.Listen)
	if err != nil {
		return release.Target{}, fmt.Errorf("unit %s: %w", u.Name, err)
	}
	t := release.Target{Unit: u.Name, BaseURL: base, Model: u.Model, CatalogModel: u.Model, Device: u.Device,
		Runtime: u.Runtime, Simulated: u.Runtime == "sim", MaxModelLen: u.Limits.MaxContext}
	switch u.Auth.Mode {
	case "", auth.ModeNone:
	case auth.ModeAPIKey, auth.ModeJWT:
		secret, err := auth.ReadSecret(u.Auth.SecretFile)
		if err != nil {
			return release.Target{}, fmt.Errorf("unit %s: %w", u.Name, err)
		}
		t.APIKey = strings.TrimSpace(string(secret))
		if u.Auth.Mode == auth.ModeJWT {
			if t.APIKey, err = auth.Mint(secret, "ttisd", "schedule", 24*time.Hour, time.Now()); err != nil {
				return release.Target{}, fmt.Errorf("unit %s: %w", u.Name, err)
			}
		}
	default:
		return release.Target{}, fmt.Errorf("unit %s: unknown auth mode %q", u.Name, u.Auth.Mode)
	}
	// The server says what it serves: the context length, and the model's
	// name for a cpu unit, whose file names a model file.
	gguf := strings.HasSuffix(strings.ToLower(u.Model), ".gguf")
	var header map[string][]string
	if t.APIKey != "" {
		header = map[string][]string{"Authorization": {"Bearer " + t.APIKey}}
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cards, err := benchclient.ListModels(lctx, base, header)
	cancel()
	switch {
	case (err != nil || len(cards) == 0) && gguf:
		return release.Target{}, fmt.Errorf("unit %s: ask the server for its model name: %v", u.Name, err)
	case err == nil && len(cards) > 0:
		if gguf {
			t.Model, t.CatalogModel = cards[0].ID, cards[0].ID
		}
		if cards[0].MaxModelLen > 0 {
			t.MaxModelLen = cards[0].MaxModelLen
		}
	}
	return t, nil
}
