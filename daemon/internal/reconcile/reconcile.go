// Package reconcile keeps the running units equal to the units folder.
// Each pass reads the folder, plans (Plan: a pure comparison of what runs
// with what is declared, giving typed actions) and applies the plan: new
// units start, removed or disabled ones stop, and an edited unit gets
// what its changed fields need (see package change): nothing, a new spec
// for its supervisor, a live reload of its server, or a restart. A unit
// whose new text is broken keeps its last good version running. At
// startup, Restore brings back the last good versions and adopts the
// servers an earlier daemon left running.
package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/daemon/internal/supervise"
	"github.com/ttis-dev/ttis/units"
)

// Errors the control API maps to HTTP statuses.
var (
	// ErrNoUnit: no unit of that name is known.
	ErrNoUnit = errors.New("no such unit")
	// ErrNotRunnable: the unit has no valid version, or is disabled.
	ErrNotRunnable = errors.New("unit cannot run")
)

// Loader reads the units folder; held units keep their chips and
// addresses against newcomers (units.LoadDirHeld).
type Loader func(dir string, held []*units.Unit) (*units.Set, error)

// Reconciler owns the set of supervised units.
type Reconciler struct {
	dir         string
	snapshotDir string
	load        Loader
	deps        supervise.Deps
	running     func(unit string, pid int, spec supervise.Spec)
	ended       func(unit string, pid int)
	hooks       Hooks
	logLines    int
	log         *slog.Logger
	now         func() time.Time
	identify    func(ctx context.Context, listen string) (int, string, bool, error)
	preflight   func(*units.Unit) error

	runCtx context.Context // parent of every supervisor's Run

	scanMu sync.Mutex // one reconcile pass at a time
	pruned bool       // stale snapshots were pruned (first good pass); scanMu

	mu       sync.Mutex
	units    map[string]*entry
	dirErr   string
	lastScan time.Time
}

// entry is one unit name's state: the version that runs (good) and the
// state of the current file text.
type entry struct {
	name    string
	sup     *supervise.Supervisor
	cancel  context.CancelFunc
	ring    *logring.Ring
	good    *units.Unit
	goodAt  time.Time
	hash    string // hash of the good version
	path    string
	loadErr string    // problems of the current file text, empty when good
	errHash string    // file hash whose error was logged, to log it once
	errAt   time.Time // when the current file text was first found broken
	// stoppedByUser: "ttisctl stop" holds until start/restart, even across
	// edits.
	stoppedByUser bool
	// last is what the last accepted edit did.
	last *api.Change
}

// Options configure a Reconciler.
type Options struct {
	// Dir is the units folder.
	Dir string
	// SnapshotDir holds a copy of each unit's validated text, which its
	// server reads; empty means servers read the unit files.
	SnapshotDir string
	// Load reads it; nil means units.LoadDirHeld.
	Load Loader
	// Deps is the template for every unit's supervisor (starter, probe,
	// reset, clock); Logger and Ring are set per unit.
	Deps supervise.Deps
	// Running and Ended are told about every server process of every
	// unit (see supervise.Deps).
	Running func(unit string, pid int, spec supervise.Spec)
	Ended   func(unit string, pid int)
	// Hooks are told what passes do.
	Hooks Hooks
	// LogLines is the size of each unit's log ring.
	LogLines int
	Logger   *slog.Logger
	// Now is the wall clock for load times; nil means time.Now.
	Now func() time.Time
	// Identify asks a server which pid and unit text it runs (see
	// Restore); nil means supervise.Identify.
	Identify func(ctx context.Context, listen string) (pid int, unitHash string, ready bool, err error)
	// Preflight runs before every start of a unit's server (ttisd's
	// pre-start checks, units.Preflight with its model folders); a unit
	// that fails it is failed with the reason, not restarted. Nil checks
	// nothing.
	Preflight func(*units.Unit) error
}

// New returns a reconciler; supervisors run under ctx, and cancelling it
// stops every unit (Shutdown waits for that).
func New(ctx context.Context, o Options) *Reconciler {
	r := &Reconciler{
		dir:         o.Dir,
		snapshotDir: o.SnapshotDir,
		load:        o.Load,
		deps:        o.Deps,
		running:     o.Running,
		ended:       o.Ended,
		hooks:       o.Hooks,
		logLines:    o.LogLines,
		log:         o.Logger,
		now:         o.Now,
		identify:    o.Identify,
		preflight:   o.Preflight,
		runCtx:      ctx,
		units:       map[string]*entry{},
	}
	if r.load == nil {
		r.load = units.LoadDirHeld
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.identify == nil {
		r.identify = supervise.Identify
	}
	if r.logLines < 1 {
		r.logLines = 1000
	}
	return r
}

// Reconcile re-reads the folder and makes the running units match it:
// it plans (see Plan) and applies the plan.
func (r *Reconciler) Reconcile(ctx context.Context) api.ReloadResult {
	r.scanMu.Lock()
	defer r.scanMu.Unlock()
	var res api.ReloadResult

	set, err := r.load(r.dir, nil)
	if err == nil {
		// Units whose file is present but now broken keep running their
		// last good version, so they keep their chips and addresses.
		if held := r.heldBy(set); len(held) > 0 {
			set, err = r.load(r.dir, held)
		}
	}
	now := r.now()
	if err != nil {
		msg := fmt.Sprintf("%v; running units keep running", err)
		r.mu.Lock()
		if r.dirErr != msg {
			r.log.Error("cannot read units folder", "dir", r.dir, "err", err)
			r.count(ErrorFolder)
		}
		r.dirErr, r.lastScan = msg, now
		n := len(r.units)
		r.mu.Unlock()
		res.Units, res.Errors = n, []string{msg}
		return res
	}

	r.mu.Lock()
	if r.dirErr != "" {
		r.log.Info("units folder readable again", "dir", r.dir)
	}
	r.dirErr, r.lastScan = "", now
	actions := Plan(r.current(), set.Files)
	r.mu.Unlock()

	r.apply(ctx, actions, now, &res)
	if !r.pruned {
		r.pruneSnapshots(set)
		r.pruned = true
	}
	r.mu.Lock()
	res.Units = len(r.units)
	r.mu.Unlock()
	for _, l := range [][]string{res.Started, res.Stopped, res.Changed, res.Errors} {
		sort.Strings(l)
	}
	if len(res.Started)+len(res.Stopped)+len(res.Changed) > 0 {
		r.log.Info("units reconciled", "started", res.Started, "stopped", res.Stopped, "changed", res.Changed, "errors", len(res.Errors))
	}
	return res
}

// current is Plan's view of the units; r.mu is held.
func (r *Reconciler) current() map[string]Current {
	cur := make(map[string]Current, len(r.units))
	for name, e := range r.units {
		cur[name] = Current{Good: e.good, Hash: e.hash, Supervised: e.sup != nil, Broken: e.loadErr != ""}
	}
	return cur
}

// heldBy returns the running versions of units whose file is in set but
// broken.
func (r *Reconciler) heldBy(set *units.Set) []*units.Unit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var held []*units.Unit
	for _, f := range set.Files {
		if e := r.units[f.Name]; e != nil && f.Unit == nil && e.good != nil {
			held = append(held, e.good)
		}
	}
	return held
}

// startEntry starts a unit, making its supervisor first if it has none.
func (r *Reconciler) startEntry(ctx context.Context, e *entry, spec supervise.Spec) {
	r.mu.Lock()
	sup := e.sup
	r.mu.Unlock()
	if sup != nil {
		// Enabled again: the supervisor takes the new version.
		r.change(ctx, e, func(sup *supervise.Supervisor) error { return sup.Update(ctx, spec) }, true)
		return
	}
	sup = r.supervisor(e, spec)
	r.run(e, sup)
	r.change(ctx, e, func(*supervise.Supervisor) error { return nil }, true)
}

// supervisor makes a unit's supervisor (not yet running).
func (r *Reconciler) supervisor(e *entry, spec supervise.Spec) *supervise.Supervisor {
	deps := r.deps
	deps.Ring = e.ring
	deps.Logger = r.log
	if r.running != nil {
		deps.Running = func(pid int, spec supervise.Spec) { r.running(e.name, pid, spec) }
	}
	if r.ended != nil {
		deps.Ended = func(pid int) { r.ended(e.name, pid) }
	}
	return supervise.New(spec, deps)
}

// run runs sup as the unit's supervisor until the unit is removed or the
// reconciler's context ends.
func (r *Reconciler) run(e *entry, sup *supervise.Supervisor) {
	sctx, cancel := context.WithCancel(r.runCtx)
	go sup.Run(sctx)
	r.mu.Lock()
	e.sup, e.cancel = sup, cancel
	r.mu.Unlock()
}

// stopEntry stops a unit's process; remove also ends its supervisor and
// deletes what the daemon keeps of the unit: its snapshot, whether or not
// it ever ran (a disabled unit, a version restored at start whose file is
// gone), and the starter's files.
func (r *Reconciler) stopEntry(ctx context.Context, e *entry, remove bool) {
	r.mu.Lock()
	sup, cancel := e.sup, e.cancel
	if remove {
		e.sup, e.cancel = nil, nil
	}
	r.mu.Unlock()
	if sup != nil {
		if err := sup.Stop(ctx); err != nil {
			r.log.Error("stop unit", "unit", e.name, "err", err)
		}
		if remove {
			cancel()
			<-sup.Done()
		}
	}
	if !remove {
		return
	}
	r.removeSnapshot(e.name)
	// The starter may keep files per unit (ExecStarter's output).
	if f, ok := r.deps.Starter.(interface{ Forget(unit string) }); ok {
		f.Forget(e.name)
	}
}

// snapshot points spec at a snapshot of the validated unit text, or leaves
// it on the unit file when snapshots are off or cannot be written.
func (r *Reconciler) snapshot(u *units.Unit, data []byte, spec supervise.Spec) supervise.Spec {
	if r.snapshotDir == "" || u == nil {
		return spec
	}
	path, err := writeSnapshot(r.snapshotDir, u, data)
	if err != nil {
		r.log.Warn("server reads the unit file directly", "unit", u.Name, "err", err)
		return spec
	}
	spec.UnitFile = path
	return spec
}

// Detach makes every supervisor leave its server running when the
// reconciler's context ends (live restore: the next daemon adopts them).
func (r *Reconciler) Detach(ctx context.Context) {
	r.scanMu.Lock()
	defer r.scanMu.Unlock()
	for _, s := range r.supervisors(false) {
		if err := s.Detach(ctx); err != nil {
			r.log.Warn("detach unit", "err", err)
		}
	}
}

// supervisors returns every unit's supervisor, cancelling each one's
// context when cancel is set.
func (r *Reconciler) supervisors(cancel bool) []*supervise.Supervisor {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sups []*supervise.Supervisor
	for _, e := range r.units {
		if e.sup != nil {
			if cancel {
				e.cancel()
			}
			sups = append(sups, e.sup)
		}
	}
	return sups
}

// Shutdown stops every unit and waits until all their processes are gone.
// The caller cancels the context passed to New first, or Shutdown does
// the stops itself.
func (r *Reconciler) Shutdown(ctx context.Context) {
	r.scanMu.Lock()
	defer r.scanMu.Unlock()
	for _, s := range r.supervisors(true) {
		select {
		case <-s.Done():
		case <-ctx.Done():
			return
		}
	}
}

func (r *Reconciler) entry(name string) (*entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.units[name]
	if e == nil {
		return nil, fmt.Errorf("unit %q: %w", name, ErrNoUnit)
	}
	return e, nil
}

// Start starts a unit (clearing a failed state).
func (r *Reconciler) Start(ctx context.Context, name string) error {
	sup, err := r.runnable(name)
	if err != nil {
		return err
	}
	return sup.Start(ctx)
}

// Restart restarts a unit (clearing a failed state).
func (r *Reconciler) Restart(ctx context.Context, name string) error {
	sup, err := r.runnable(name)
	if err != nil {
		return err
	}
	return sup.Restart(ctx)
}

// runnable clears the user stop of a unit that can run and returns its
// supervisor, creating it for a unit stopped before it ever ran.
func (r *Reconciler) runnable(name string) (*supervise.Supervisor, error) {
	e, err := r.entry(name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case e.good == nil:
		return nil, fmt.Errorf("unit %q has no valid version: %s: %w", name, oneLine(e.loadErr), ErrNotRunnable)
	case e.good.Disabled:
		return nil, fmt.Errorf("unit %q is disabled in %s: %w", name, e.path, ErrNotRunnable)
	case e.sup == nil:
		return nil, fmt.Errorf("unit %q is being removed: %w", name, ErrNotRunnable)
	}
	e.stoppedByUser = false
	return e.sup, nil
}

// Stop stops a unit until it is started again or the daemon restarts.
func (r *Reconciler) Stop(ctx context.Context, name string) error {
	e, err := r.entry(name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	e.stoppedByUser = true
	sup := e.sup
	r.mu.Unlock()
	if sup == nil {
		return nil
	}
	return sup.Stop(ctx)
}

// Ring returns a unit's log ring.
func (r *Reconciler) Ring(name string) (*logring.Ring, error) {
	e, err := r.entry(name)
	if err != nil {
		return nil, err
	}
	return e.ring, nil
}

// List returns every unit's state, in name order.
func (r *Reconciler) List() api.UnitList {
	r.mu.Lock()
	entries := make([]*entry, 0, len(r.units))
	for _, e := range r.units {
		entries = append(entries, e)
	}
	dirErr := r.dirErr
	r.mu.Unlock()
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.name, b.name) })
	out := api.UnitList{Units: make([]api.Unit, 0, len(entries))}
	for _, e := range entries {
		out.Units = append(out.Units, r.unitOf(e))
	}
	if dirErr != "" {
		out.Errors = []string{dirErr}
	}
	return out
}

// GoodUnits returns the version of every unit that runs, or would run if
// started: the last good one when the file is now broken. Sorted by name.
func (r *Reconciler) GoodUnits() []*units.Unit {
	r.mu.Lock()
	out := make([]*units.Unit, 0, len(r.units))
	for _, e := range r.units {
		if e.good != nil {
			out = append(out, e.good)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *units.Unit) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Unit returns one unit's detail with its last logLines log lines.
func (r *Reconciler) Unit(name string, logLines int) (api.UnitDetail, error) {
	e, err := r.entry(name)
	if err != nil {
		return api.UnitDetail{}, err
	}
	d := api.UnitDetail{Unit: r.unitOf(e)}
	r.mu.Lock()
	good, goodAt, loadErr := e.good, e.goodAt, e.loadErr
	d.LastChange = e.last
	cur, path, errHash := Current{Good: e.good, Hash: e.hash, Supervised: e.sup != nil}, e.path, e.errHash
	r.mu.Unlock()
	d.Pending = pending(e.name, path, cur, errHash)
	switch {
	case good != nil && loadErr != "":
		d.Detail = fmt.Sprintf("using last good version from %s; new version invalid: %s", goodAt.Format(time.RFC3339), oneLine(loadErr))
	case good == nil:
		d.Detail = "unit file invalid: " + oneLine(loadErr)
	case good.Disabled:
		d.Detail = "disabled in the unit file"
	}
	if logLines > 0 {
		d.Logs = e.ring.Tail(logLines)
	}
	if d.PID > 0 {
		d.MemoryBytes = residentBytes(d.PID)
	}
	return d, nil
}

// pending plans the unit file at path as it is on disk now against cur,
// the unit as it runs; nil when the text is one already seen (the good
// one, or the broken one reported in errHash). Conflicts with other units
// are only found when the folder is applied.
func pending(name, path string, cur Current, errHash string) *api.Change {
	if path == "" {
		return nil
	}
	f := readFile(name, path)
	if f.Hash != "" && (f.Hash == cur.Hash || f.Hash == errHash) {
		return nil
	}
	acts := Plan(map[string]Current{name: cur}, []*units.File{f})
	if len(acts) == 0 {
		return nil
	}
	a := acts[0]
	c := &api.Change{Action: a.Kind.String(), Fields: a.Diff.Keys(), Hash: f.Hash}
	if a.Kind == Invalid {
		c.Error = oneLine(f.Err.Error())
	}
	return c
}

// readFile reads one unit file as units.LoadDirHeld does, without the
// checks against other units.
func readFile(name, path string) *units.File {
	f := &units.File{Name: name, Path: path}
	// units.ReadFile never blocks on a pipe or device node and refuses a
	// file over the size limit, as the folder pass does.
	data, err := units.ReadFile(path)
	if err != nil {
		f.Err = units.Errors(err)
		return f
	}
	sum := sha256.Sum256(data)
	f.Data, f.Hash = data, hex.EncodeToString(sum[:])
	if f.Unit, err = units.Parse(name, path, data); err != nil {
		f.Err = units.Errors(err)
	}
	return f
}

// residentBytes reads a process's resident memory from /proc, or 0.
func residentBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func (r *Reconciler) unitOf(e *entry) api.Unit {
	r.mu.Lock()
	good, goodAt, hash, loadErr, path, sup, errAt := e.good, e.goodAt, e.hash, e.loadErr, e.path, e.sup, e.errAt
	r.mu.Unlock()
	u := api.Unit{View: units.View{Name: e.name, Path: path}, LoadState: api.LoadLoaded, LoadError: oneLine(loadErr)}
	if good != nil {
		u.View = good.View()
		// The file the operator edits, not the snapshot a restored
		// version was read from.
		u.Name, u.Path = e.name, path
		u.Hash, u.LoadedAt = hash, goodAt
		if loadErr != "" {
			u.LoadState = api.LoadStale
		}
	} else {
		u.LoadState = api.LoadError
	}
	if sup != nil {
		st := sup.Status()
		u.State, u.SubState, u.Result = st.State, st.SubState, st.Result
		u.PID, u.Restarts, u.Since = st.PID, st.Restarts, st.Since
		u.LastExit, u.LastError = st.LastExit, st.LastError
		u.RestartsTotal, u.LastStartSeconds, u.Adopted = st.RestartsTotal, st.LastStartDuration.Seconds(), st.Adopted
		u.Workers = st.Workers
	} else {
		u.State, u.SubState, u.Since = api.StateInactive, api.SubDead, goodAt
		if good == nil {
			u.State, u.SubState, u.Since = api.StateFailed, api.SubFailed, errAt
		}
	}
	if loadErr != "" {
		// The newest problem the operator must see is the broken file.
		u.LastError = oneLine(loadErr)
	}
	return u
}

// Holders maps each chip claimed by an enabled unit to the unit's name.
func (r *Reconciler) Holders() map[int]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]string{}
	for _, e := range r.units {
		if e.good == nil || e.good.Disabled {
			continue
		}
		for _, c := range e.good.Chips {
			out[c] = e.name
		}
	}
	return out
}

// LastScan is when the folder was last read.
func (r *Reconciler) LastScan() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastScan
}

// Summary is a one-line state of all units, for sd_notify STATUS.
func (r *Reconciler) Summary() string {
	l := r.List()
	var active, failed, broken int
	for _, u := range l.Units {
		switch u.State {
		case api.StateActive:
			active++
		case api.StateFailed:
			failed++
		}
		if u.LoadError != "" {
			broken++
		}
	}
	s := fmt.Sprintf("%d units: %d active, %d failed", len(l.Units), active, failed)
	if broken > 0 {
		s += fmt.Sprintf(", %d with file errors", broken)
	}
	if len(l.Errors) > 0 {
		s += "; " + l.Errors[0]
	}
	return s
}

// specOf is the supervisor's spec of u, with the reconciler's pre-start
// checks.
func (r *Reconciler) specOf(u *units.Unit, hash string) supervise.Spec {
	spec := specOf(u, hash)
	if r.preflight != nil {
		spec.Check = func() error { return r.preflight(u) }
	}
	return spec
}

func specOf(u *units.Unit, hash string) supervise.Spec {
	return supervise.Spec{Unit: *u, UnitFile: u.Path, Hash: hash}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
