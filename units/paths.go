package units

import (
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// A unit file names other files relative to its own folder. Parse resolves
// them (resolvePath), and AbsoluteText rewrites them in the text, with the
// same rule and for the same keys, so that a copy of the text read from
// another folder means the same.

// resolvePath is p, written in a unit file in folder dir, as an absolute
// path: a relative path is taken from dir.
func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// AbsoluteText returns data, the text of u's file, with every path in it
// that is relative to the file's folder made absolute: a cpu unit's model,
// auth.secret_file, [vllm] weights_dir, cache_dir and hf_token_file, and
// the [evals] datasets. ttisd's snapshots live in another folder, and a
// server reading one must find the files the unit file names. The text
// decides which keys are written; u gives the file's folder and the
// runtime (a model names a file only for the cpu runtime). A text without
// relative paths comes back unchanged, byte for byte; otherwise it is
// re-encoded, which drops comments.
func (u *Unit) AbsoluteText(data []byte) ([]byte, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	dir := filepath.Dir(u.Path)
	changed := false
	abs := func(table map[string]any, key string) {
		if p, ok := table[key].(string); ok && p != "" && !filepath.IsAbs(p) {
			table[key] = resolvePath(dir, p)
			changed = true
		}
	}
	if u.Runtime == RuntimeCPU {
		abs(doc, "model")
	}
	if t, ok := doc["auth"].(map[string]any); ok {
		abs(t, "secret_file")
	}
	if t, ok := doc["vllm"].(map[string]any); ok {
		abs(t, "weights_dir")
		abs(t, "cache_dir")
		abs(t, "hf_token_file")
	}
	if t, ok := doc["evals"].(map[string]any); ok {
		if ds, ok := t["datasets"].(map[string]any); ok {
			for task := range ds {
				abs(ds, task)
			}
		}
	}
	if !changed {
		return data, nil
	}
	return toml.Marshal(doc)
}
