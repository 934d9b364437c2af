package units

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckModelPath(t *testing.T) {
	root := t.TempDir()
	models := filepath.Join(root, "models")
	other := filepath.Join(root, "other")
	for _, d := range []string{filepath.Join(models, "sub"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("root:x:0:0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inside := write(filepath.Join(models, "a.gguf"))
	deeper := write(filepath.Join(models, "sub", "b.gguf"))
	outside := write(filepath.Join(other, "secret"))
	link := filepath.Join(models, "link.gguf")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	// A folder named like the model folder with a suffix is not inside it.
	sibling := filepath.Join(root, "models-evil")
	if err := os.Mkdir(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	evil := write(filepath.Join(sibling, "c.gguf"))
	dirs := []string{filepath.Join(root, "absent"), models}
	for _, ok := range []string{inside, deeper, filepath.Join(models, "sub", "..", "a.gguf")} {
		if err := CheckModelPath(ok, dirs); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{outside, link, evil, filepath.Join(models, "..", "other", "secret"), "/etc/passwd"} {
		err := CheckModelPath(bad, dirs)
		if err == nil || !strings.Contains(err.Error(), "is outside the model folders ("+strings.Join(dirs, ", ")+")") {
			t.Errorf("%s: %v, want refused naming the folders", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "root:") {
			t.Errorf("%s: the error shows the file's content: %v", bad, err)
		}
	}
	if err := CheckModelPath(inside, nil); err == nil || !strings.Contains(err.Error(), "no model folders") {
		t.Errorf("no folders: %v", err)
	}
	if got := DefaultModelDirs("/srv/ttis"); strings.Join(got, " ") != "/srv/ttis/models /var/lib/ttis/models" {
		t.Errorf("DefaultModelDirs = %v", got)
	}
	if got := DefaultModelDirs("/var/lib/ttis"); strings.Join(got, " ") != "/var/lib/ttis/models" {
		t.Errorf("DefaultModelDirs(system) = %v", got)
	}
}
