package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/units"
)

// WorkflowRunner returns the RunFunc the daemon schedules: it resolves the
// unit's server from its unit file (bench/target) and runs the schedule's
// workflow (benchmarks, evals, tests or release) with its limit into
// store, the same code `ttisctl release` runs. active, when set, refuses a
// unit that is not serving; observe, when set, gives the spec tests the
// unit's restart count and server pid, as the supervisor knows them. A run whose verdict is FAIL or INCOMPLETE, or that ttisd
// had to interrupt, is reported as an error, so the schedule's last result
// shows it; its report is in the store either way.
//
// data, when set, gives each run its Hugging Face Hub client (built per
// run, so a rotated token file needs no restart): the eval tasks' datasets
// are pulled before they run, or, offline, read from the cache.
func WorkflowRunner(store *runs.Store, version string, active func(unit string) error, observe func(unit string) spectest.Observer, log *slog.Logger, data func() (*hub.Client, error)) RunFunc {
	return func(ctx context.Context, u *units.Unit, s units.Schedule) error {
		if active != nil {
			if err := active(u.Name); err != nil {
				return err
			}
		}
		view := u.View()
		// The token must outlive a full nightly run.
		t, err := target.Resolve(ctx, target.Query{Unit: &view, Purpose: "schedule", TokenTTL: 24 * time.Hour, Issuer: "ttisd"})
		if err != nil {
			return err
		}
		cfg := release.Config{Target: t, Workflow: s.Workflow, Limit: s.Limit, Store: store,
			Trigger: "schedule", Version: version, Logger: log}
		if observe != nil {
			cfg.Observe = observe(u.Name)
		}
		if data != nil && (s.Workflow == release.WorkflowEvals || s.Workflow == release.WorkflowRelease) {
			if cfg.Hub, err = data(); err != nil {
				return fmt.Errorf("eval datasets: %w", err)
			}
		}
		out, err := release.Run(ctx, cfg)
		switch {
		case errors.Is(err, release.ErrInterrupted) && out != nil:
			return fmt.Errorf("run %s interrupted (finish it with `ttisctl release --resume %s`)", out.Manifest.ID, out.Manifest.ID)
		case err != nil:
			return err
		}
		switch v := out.Report.Acceptance.Verdict; v {
		case release.VerdictFail, release.VerdictIncomplete:
			return fmt.Errorf("run %s: %s: %s", out.Manifest.ID, v, out.Report.Acceptance.Summary)
		}
		return nil
	}
}
