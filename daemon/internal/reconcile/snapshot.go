package reconcile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
	"github.com/pelletier/go-toml/v2"
	"github.com/ttis-dev/ttis/units"
)

// writeSnapshot saves the validated text of a unit as dir/<name>.toml and
// returns its path. The server process reads the snapshot, not the unit
// file, so a restart (after a crash, or by hand) runs the version the daemon
// validated even when the file has since been broken or edited.
//
// Relative paths in a unit (the cpu model file, the auth secret file) are
// relative to the unit file's folder; in the snapshot they are made
// absolute, since the snapshot lives elsewhere. A file without relative
// paths is copied byte for byte.
func writeSnapshot(dir string, u *units.Unit, data []byte) (string, error) {
	out, err := absolutePaths(u, data)
	if err != nil {
		return "", err
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

// absolutePaths returns data with the unit's relative file paths made
// absolute against the unit file's folder. The text decides, not u: the
// units package may already have resolved the paths in u.
func absolutePaths(u *units.Unit, data []byte) ([]byte, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	base := filepath.Dir(u.Path)
	changed := false
	if m, ok := doc["model"].(string); ok && u.Runtime == units.RuntimeCPU && m != "" && !filepath.IsAbs(m) {
		doc["model"] = filepath.Join(base, m)
		changed = true
	}
	if auth, ok := doc["auth"].(map[string]any); ok {
		if sf, ok := auth["secret_file"].(string); ok && sf != "" && !filepath.IsAbs(sf) {
			auth["secret_file"] = filepath.Join(base, sf)
			changed = true
		}
	}
	if !changed {
		return data, nil
	}
	out, err := toml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	return out, nil
}
