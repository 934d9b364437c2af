package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/hardened"
)

// writeSnapshot saves the validated text of a unit as dir/<name>.toml and
// returns its path. The server process reads the snapshot, not the unit
// file, so a restart (after a crash, or by hand) runs the version the daemon
// validated even when the file has since been broken or edited.
//
// Paths in a unit are relative to the unit file's folder; in the snapshot
// they are made absolute (units.(*Unit).AbsoluteText), since the snapshot
// lives elsewhere. A file without relative paths is copied byte for byte.
func writeSnapshot(dir string, u *units.Unit, data []byte) (string, error) {
	out, err := u.AbsoluteText(data)
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("snapshot folder: %w", err)
	}
	path := filepath.Join(dir, u.Name+units.Ext)
	// The unit may name a secret file; keep the snapshot private too.
	if err := renameio.WriteFile(path, out, 0o600, renameio.WithTempDir(dir)); err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	return path, nil
}

// removeSnapshot deletes a removed unit's snapshot.
func (r *Reconciler) removeSnapshot(name string) {
	if r.snapshotDir == "" {
		return
	}
	path := filepath.Join(r.snapshotDir, name+units.Ext)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("cannot remove the snapshot of a removed unit", "unit", name, "path", path, "err", err)
	}
}

// maxSnapshots bounds the listing of the snapshot folder, which holds one
// file per unit.
const maxSnapshots = 100_000

// pruneSnapshots deletes, once the units folder has been read, what the
// snapshot folder holds for no unit: the snapshot of a unit whose file is
// gone and that the reconciler no longer knows (one that an older ttisd
// left, or this one cannot use), and temporary files of writes a crash cut
// short. A unit whose file is there, broken or not, keeps its snapshot: it
// is the last good version the unit runs (live restore). scanMu is held.
func (r *Reconciler) pruneSnapshots(set *units.Set) {
	if r.snapshotDir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), units.ReadTimeout)
	defer cancel()
	entries, err := hardened.ReadDir(ctx, r.snapshotDir, maxSnapshots)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot prune the last good unit versions", "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var pruned []string
	for _, de := range entries {
		name := de.Name()
		unit, isUnit := strings.CutSuffix(name, units.Ext)
		switch {
		case strings.HasPrefix(name, "."):
			// A temporary file of renameio: no write is going on before
			// the first pass ends.
		case !isUnit || set.File(unit) != nil || r.units[unit] != nil:
			continue
		default:
			pruned = append(pruned, unit)
		}
		if err := os.Remove(filepath.Join(r.snapshotDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot prune a stale snapshot", "path", filepath.Join(r.snapshotDir, name), "err", err)
		}
	}
	if len(pruned) > 0 {
		r.log.Info("removed the snapshots of units whose file is gone", "units", len(pruned))
	}
}
