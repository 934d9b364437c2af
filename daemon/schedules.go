package daemon

import (
	"context"
	"fmt"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/schedule"
	"github.com/ttis-dev/ttis/runtime/hub"
)

// startSchedules fires the units' [[schedule]] entries (benchmarks, evals
// or release runs into the results store, or what run does when set) until
// ctx ends. The schedules follow the reconciler: after every pass they are
// set from the versions that run, so a unit whose file is broken keeps the
// schedules of its last good version. The returned channel is closed when
// the scheduler's loop has returned; d.sched.Wait then waits for its runs.
func (d *daemon) startSchedules(ctx context.Context, run schedule.RunFunc) (loopDone <-chan struct{}) {
	if run == nil {
		active := func(name string) error {
			u, err := d.rec.Unit(name, 0)
			if err != nil {
				return err
			}
			if u.State != api.StateActive {
				return fmt.Errorf("unit %s is %s, not active", name, u.State)
			}
			return nil
		}
		// The spec tests' stability check asks the supervisor, as ttisctl
		// asks the control API, whether the server restarted under load.
		observe := func(name string) spectest.Observer {
			return func(context.Context) (spectest.ServerState, error) {
				u, err := d.rec.Unit(name, 0)
				if err != nil {
					return spectest.ServerState{}, err
				}
				return spectest.ServerState{Restarts: u.RestartsTotal, PID: u.PID}, nil
			}
		}
		store := &runs.Store{Root: d.runsDir}
		run = schedule.WorkflowRunner(store, d.version, active, observe, d.log, d.hubClient)
	}
	d.sched = schedule.New(nil, run, d.log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.sched.Loop(ctx)
	}()
	return done
}

// updateSchedules hands the scheduler the units as the last pass left them.
func (d *daemon) updateSchedules() {
	for _, err := range d.sched.Set(d.rec.GoodUnits()) {
		d.log.Warn("schedules", "err", err)
	}
}

// hubClient is the Hugging Face Hub client of one scheduled run, from
// ttisd.toml's hub_cache, hf_endpoint, hf_token_file and offline; the token
// file is read each time.
func (d *daemon) hubClient() (*hub.Client, error) {
	tok, err := hub.ReadToken(d.cfg.HFTokenFile)
	if err != nil {
		return nil, fmt.Errorf("hf_token_file: %w", err)
	}
	return hub.New(hub.Config{Endpoint: d.cfg.Endpoint(), Token: tok, CacheDir: d.cfg.HubCacheDir(), Offline: d.cfg.Offline,
		UserAgent: "ttisd/" + d.version})
}
