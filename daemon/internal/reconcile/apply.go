package reconcile

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/daemon/internal/supervise"
	"github.com/ttis-dev/ttis/units"
)

// Error kinds counted by Hooks.Error.
const (
	ErrorFolder   = "folder"    // the units folder could not be read
	ErrorUnitFile = "unit_file" // a unit file is broken (counted once per text)
	ErrorApply    = "apply"     // starting, stopping or changing a server failed
)

// Hooks are told what passes do (metrics); nil fields are skipped.
type Hooks struct {
	// Applied is told about every action that changed something.
	Applied func(unit string, k Kind)
	// Error is told about every new problem, by kind.
	Error func(kind string)
}

func (r *Reconciler) count(kind string) {
	if r.hooks.Error != nil {
		r.hooks.Error(kind)
	}
}

// step is an action with the entry it acts on.
type step struct {
	Action
	e    *entry
	spec supervise.Spec
}

// apply carries out a plan: the bookkeeping first (under the lock, in
// plan order), then the stops in parallel, then the snapshots, then the
// starts and changes in parallel.
func (r *Reconciler) apply(ctx context.Context, actions []Action, now time.Time, res *api.ReloadResult) {
	steps := r.record(actions, now, res)
	var wg sync.WaitGroup
	for _, s := range steps {
		if s.Kind.stops() {
			wg.Go(func() { r.stopEntry(ctx, s.e, s.Kind == Remove) })
		}
	}
	wg.Wait()
	for i, s := range steps {
		if s.Unit != nil {
			spec := r.specOf(s.Unit, s.e.hashOf(s.File))
			if s.File != nil {
				spec = r.snapshot(s.Unit, s.File.Data, spec)
			}
			steps[i].spec = spec
		}
	}
	for _, s := range steps {
		switch s.Kind {
		case Start:
			wg.Go(func() { r.startEntry(ctx, s.e, s.spec) })
		case Restart:
			wg.Go(func() {
				r.change(ctx, s.e, func(sup *supervise.Supervisor) error { return sup.Update(ctx, s.spec) }, true)
			})
		case Reload:
			wg.Go(func() {
				r.change(ctx, s.e, func(sup *supervise.Supervisor) error { return sup.Reload(ctx, s.spec) }, false)
			})
		case Retune, Keep, Stop:
			wg.Go(func() {
				r.change(ctx, s.e, func(sup *supervise.Supervisor) error { return sup.Retune(ctx, s.spec) }, false)
			})
		}
	}
	wg.Wait()
}

// record updates the entries for a plan and returns the steps that act on
// processes. r.mu is taken.
func (r *Reconciler) record(actions []Action, now time.Time, res *api.ReloadResult) []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	var steps []step
	for _, a := range actions {
		e := r.units[a.Name]
		if a.Kind == Remove {
			res.Stopped = append(res.Stopped, a.Name)
			delete(r.units, a.Name)
			steps = append(steps, step{Action: a, e: e})
			r.applied(a)
			continue
		}
		if e == nil {
			e = &entry{name: a.Name, ring: logring.New(r.logLines)}
			r.units[a.Name] = e
		}
		if a.File != nil {
			e.path = a.File.Path
		}
		if a.Kind == Invalid {
			r.invalid(e, a, now, res)
			continue
		}
		if a.File != nil {
			first := e.good == nil
			e.loadErr, e.errHash = "", ""
			e.good, e.goodAt, e.hash = a.Unit, now, a.File.Hash
			e.last = &api.Change{Action: a.Kind.String(), Fields: a.Diff.Keys(), At: now, Hash: a.File.Hash}
			if !first {
				text := "Unit file changed (" + short(a.File.Hash) + "): " + a.Kind.String()
				if keys := a.Diff.Keys(); len(keys) > 0 {
					text += " [" + strings.Join(keys, ", ") + "]"
				}
				e.ring.Add(api.LogLine{Time: now, Stream: "ttisd", Text: text + "."})
			}
		}
		switch a.Kind {
		case Start:
			res.Started = append(res.Started, a.Name)
		case Stop:
			res.Stopped = append(res.Stopped, a.Name)
		case Restart, Reload, Retune:
			res.Changed = append(res.Changed, a.Name)
		}
		if a.Kind != Keep {
			r.applied(a)
		}
		steps = append(steps, step{Action: a, e: e})
	}
	return steps
}

func (r *Reconciler) applied(a Action) {
	if r.hooks.Applied != nil {
		r.hooks.Applied(a.Name, a.Kind)
	}
}

// invalid records a broken text, logging it once per text. r.mu is held.
func (r *Reconciler) invalid(e *entry, a Action, now time.Time, res *api.ReloadResult) {
	f := a.File
	msg := f.Err.Error()
	if e.loadErr == "" {
		e.errAt = now
	}
	if f.Hash == "" || e.errHash != f.Hash || e.loadErr != msg {
		r.log.Error("unit file invalid", "unit", f.Name, "err", msg, "last_good", e.good != nil)
		e.ring.Add(api.LogLine{Time: now, Stream: "ttisd", Text: "Unit file invalid: " + oneLine(msg)})
		r.count(ErrorUnitFile)
	}
	e.loadErr, e.errHash = msg, f.Hash
	res.Errors = append(res.Errors, oneLine(msg))
}

// hashOf is the hash of the version a step installs: the file's, or the
// good version's when the file is broken.
func (e *entry) hashOf(f *units.File) string {
	if f != nil {
		return f.Hash
	}
	return e.hash
}

// change runs f on the unit's supervisor; start also starts a unit the
// operator has not stopped (an edit clears a failed state).
func (r *Reconciler) change(ctx context.Context, e *entry, f func(*supervise.Supervisor) error, start bool) {
	r.mu.Lock()
	sup, userStopped := e.sup, e.stoppedByUser
	r.mu.Unlock()
	if sup == nil {
		return
	}
	if err := f(sup); err != nil {
		r.log.Error("change unit", "unit", e.name, "err", err)
		r.count(ErrorApply)
		return
	}
	if start && !userStopped {
		if err := sup.Start(ctx); err != nil {
			r.log.Error("start unit", "unit", e.name, "err", err)
			r.count(ErrorApply)
		}
	}
}
