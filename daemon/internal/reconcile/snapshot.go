package reconcile

import (
	"fmt"
	"os"
	"path/filepath"

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
	tmp, err := os.CreateTemp(dir, "."+u.Name+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	// The unit may name a secret file; keep the snapshot private too.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	return path, nil
}

// absolutePaths returns data with the unit's relative file paths made
// absolute against the unit file's folder.
func absolutePaths(u *units.Unit, data []byte) ([]byte, error) {
	base := filepath.Dir(u.Path)
	relModel := u.Runtime == units.RuntimeCPU && u.Model != "" && !filepath.IsAbs(u.Model)
	relSecret := u.Auth.SecretFile != "" && !filepath.IsAbs(u.Auth.SecretFile)
	if !relModel && !relSecret {
		return data, nil
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	if relModel {
		doc["model"] = filepath.Join(base, u.Model)
	}
	if relSecret {
		if auth, ok := doc["auth"].(map[string]any); ok {
			auth["secret_file"] = filepath.Join(base, u.Auth.SecretFile)
		}
	}
	out, err := toml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", u.Name, err)
	}
	return out, nil
}
