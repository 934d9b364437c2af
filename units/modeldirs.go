package units

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SystemModelDir is where a system-wide install keeps model files; it is
// always among the default model folders.
const SystemModelDir = "/var/lib/ttis/models"

// DefaultModelDirs are the folders model files may live in when nothing is
// configured: the state folder's models/ and SystemModelDir.
func DefaultModelDirs(stateDir string) []string {
	dirs := []string{SystemModelDir}
	if stateDir != "" {
		if d := filepath.Join(stateDir, "models"); d != SystemModelDir {
			dirs = append([]string{d}, dirs...)
		}
	}
	return dirs
}

// CheckModelPath refuses a model file outside dirs. Without it a unit could
// name any file the server can read (/etc/shadow) and the loader's errors
// would show its first bytes to everyone who can read the unit's status.
// Symlinks are resolved on both sides, so a link inside a model folder to a
// file outside it is refused too; a folder that does not exist is skipped.
// The error names the file and the folders, never the file's content.
func CheckModelPath(model string, dirs []string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("model file %s: no model folders are configured (model_dirs in ttisd.toml, or ttisd serve --model-dir)", model)
	}
	real, err := filepath.EvalSymlinks(model)
	if err != nil {
		return fmt.Errorf("model file %s: %v", model, unwrapPathError(err))
	}
	if real, err = filepath.Abs(real); err != nil {
		return fmt.Errorf("model file %s: %v", model, err)
	}
	for _, d := range dirs {
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if rd, err = filepath.Abs(rd); err != nil {
			continue
		}
		rel, err := filepath.Rel(rd, real)
		if err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(os.PathSeparator)) {
			return nil
		}
	}
	return fmt.Errorf("model file %s is outside the model folders (%s): move it into one of them, or add its folder to model_dirs in ttisd.toml (ttisd serve: --model-dir)",
		model, strings.Join(dirs, ", "))
}
