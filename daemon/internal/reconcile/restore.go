package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/change"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
	"github.com/ttis-dev/ttis/daemon/internal/orphans"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/hardened"
)

// Restore picks up where an earlier daemon left off, before the first
// Reconcile: every unit's last good version comes back from the snapshot
// folder (so a unit whose file broke while no daemon ran still runs it),
// and each server an earlier daemon left running is adopted when it is
// healthy and runs that version (see adoptable). Restore returns the
// servers it did not adopt, with why; the caller stops them before the
// first pass needs their ports and chips.
//
// The first pass then treats the units folder as an edit of the restored
// versions: unchanged units keep their adopted servers, and only what
// changed is reloaded or replaced.
func (r *Reconciler) Restore(ctx context.Context, servers []orphans.Server) (rejected []orphans.Server, why []string) {
	r.restoreSnapshots()
	for _, s := range servers {
		if err := r.adopt(ctx, s); err != nil {
			rejected = append(rejected, s)
			why = append(why, err.Error())
			continue
		}
		r.log.Info("adopted a server left running by an earlier ttisd", "unit", s.Unit, "pid", s.PID, "listen", s.Listen)
	}
	return rejected, why
}

// restoreSnapshots loads the last good versions.
func (r *Reconciler) restoreSnapshots() {
	if r.snapshotDir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), units.ReadTimeout)
	entries, err := hardened.ReadDir(ctx, r.snapshotDir, maxSnapshots)
	cancel()
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot read the last good unit versions", "dir", r.snapshotDir, "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, de := range entries {
		name, ok := strings.CutSuffix(de.Name(), units.Ext)
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(r.snapshotDir, de.Name())
		// The snapshot folder is the daemon's own, but a pipe left there
		// must not stall the start either.
		data, err := units.ReadFile(path)
		var u *units.Unit
		if err == nil {
			u, err = units.Parse(name, path, data)
		}
		if err != nil {
			// Written by an older ttisd and refused by this one: the unit
			// file decides alone.
			r.log.Warn("last good version of a unit not usable", "unit", name, "err", err)
			continue
		}
		at := r.now()
		if fi, err := de.Info(); err == nil {
			at = fi.ModTime()
		}
		e := &entry{name: name, ring: logring.New(r.logLines), good: u, goodAt: at}
		e.ring.Add(api.LogLine{Time: r.now(), Stream: "ttisd", Text: "Restored the last good version of the unit from " + at.Format(time.RFC3339) + "."})
		r.units[name] = e
	}
}

// adopt makes a supervisor own s, if s runs the unit's last good version
// (or one that differs from it only in daemon-side fields) and answers
// /health (ready, or still loading) as the recorded process with the
// recorded text.
func (r *Reconciler) adopt(ctx context.Context, s orphans.Server) error {
	r.mu.Lock()
	e := r.units[s.Unit]
	r.mu.Unlock()
	switch {
	case e == nil:
		return fmt.Errorf("unit %s: no last good version to compare with", s.Unit)
	case s.Hash == "":
		return fmt.Errorf("unit %s: the record of pid %d does not say what it runs (written by an older ttisd)", s.Unit, s.PID)
	case e.good.Disabled:
		return fmt.Errorf("unit %s: disabled", s.Unit)
	}
	runs, err := units.Parse(s.Unit, e.good.Path, []byte(s.Text))
	if err != nil {
		return fmt.Errorf("unit %s: the text pid %d runs no longer loads: %w", s.Unit, s.PID, err)
	}
	// The daemon writes the last good version before it reloads or
	// replaces the server: a server behind it in live or restart fields
	// means the earlier daemon died in between.
	if d := change.Between(runs, e.good); d.Effect >= change.Live {
		return fmt.Errorf("unit %s: pid %d runs an older version (%s)", s.Unit, s.PID, strings.Join(d.Keys(), ", "))
	}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	pid, hash, ready, err := r.identify(ictx, s.Listen)
	cancel()
	switch {
	case err != nil:
		return fmt.Errorf("unit %s: pid %d does not answer /health: %w", s.Unit, s.PID, err)
	case pid != s.PID || hash != s.Hash:
		return fmt.Errorf("unit %s: %s is served by pid %d running %s, not the recorded pid %d running %s", s.Unit, s.Listen, pid, short(hash), s.PID, short(s.Hash))
	}
	sup := r.supervisor(e, r.specOf(e.good, ""))
	// A server still loading (minutes for vLLM on hardware) is adopted
	// too, and awaited as after a start.
	if err := sup.Adopt(s.PID, s.Start, ready); err != nil {
		return err
	}
	r.run(e, sup)
	return nil
}
