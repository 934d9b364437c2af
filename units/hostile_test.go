package units

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileDir is a units folder with one good unit and every kind of file
// that must be reported rather than read: a named pipe (open() would block
// until a writer came), a device node (reached through a symlink, since
// creating one needs root), a symlink loop, a file over the size limit
// (sparse, so the test writes nothing) and a folder. It returns the
// folder and, per hostile name, what its error must say.
func hostileDir(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"good.toml": simUnit("127.0.0.1:8001", "")})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop.toml", filepath.Join(dir, "loop.toml")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir, "big.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(1<<20 + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if err := os.Mkdir(filepath.Join(dir, "folder.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{
		"fifo":   "not a regular file (a named pipe)",
		"zero":   "not a regular file (a device node)",
		"loop":   "too many levels of symbolic links",
		"big":    "larger than the 1048576-byte limit",
		"folder": "not a regular file (a folder)",
	}
}

// within fails the test if f does not return in time: the bug these tests
// guard against is a read that never returns.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked for 10s", what)
	}
}

func TestLoadDirHostileFiles(t *testing.T) {
	dir, want := hostileDir(t)
	var set *Set
	var err error
	within(t, "LoadDir", func() { set, err = LoadDir(dir) })
	if err != nil {
		t.Fatal(err)
	}
	if f := set.File("good"); f == nil || f.Unit == nil {
		t.Fatalf("good unit not loaded beside hostile files: %+v", f)
	}
	for name, msg := range want {
		f := set.File(name)
		if f == nil {
			t.Errorf("%s: not reported", name)
			continue
		}
		if f.Unit != nil || len(f.Err) == 0 {
			t.Errorf("%s: loaded, want an error", name)
			continue
		}
		got := f.Err.Error()
		if !strings.Contains(got, msg) || !strings.HasPrefix(got, filepath.Join(dir, name+".toml")+": ") {
			t.Errorf("%s: error %q, want the path and %q", name, got, msg)
		}
	}
}

func TestLoadHostileFiles(t *testing.T) {
	dir, want := hostileDir(t)
	for name, msg := range want {
		var err error
		within(t, "Load "+name, func() { _, err = Load(filepath.Join(dir, name+".toml")) })
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Load %s: %v, want %q", name, err, msg)
		}
	}
}

// A named pipe in place of the units folder is reported, not opened.
func TestLoadDirOfAPipe(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "units")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	within(t, "LoadDir", func() { _, err = LoadDir(pipe) })
	if err == nil || err.Error() != "read units folder "+pipe+": not a folder (a named pipe)" {
		t.Errorf("LoadDir of a pipe: %v", err)
	}
}
