package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/runs"
	"github.com/ttis-dev/ttis/daemon/schedule"
	"github.com/ttis-dev/ttis/units"
)

// startSchedules fires the units' [[schedule]] entries (benchmarks, evals
// or release runs into the results store) until ctx ends. The scheduler
// re-reads the units folder on the rescan interval; a unit whose file is
// broken has no schedule until it is fixed. The returned func stops the
// scheduler and waits for its runs to end.
func (d *daemon) startSchedules(ctx context.Context) (stop func()) {
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
	store := &runs.Store{Root: d.runsDir}
	s := schedule.New(nil, schedule.WorkflowRunner(store, d.version, active, d.log), d.log)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.Loop(ctx)
	}()
	go func() {
		defer wg.Done()
		every := d.cfg.RescanInterval.Duration
		if every <= 0 {
			every = 30 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if set, err := units.LoadDir(d.cfg.UnitsDir); err == nil {
				s.Set(set.Units())
			} else {
				d.log.Warn("schedules: read units folder", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
