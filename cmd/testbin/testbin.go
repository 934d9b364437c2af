// Package testbin builds ttis's commands (ttisd, ttisctl) for the tests that
// run them as real processes, once per `go test` run: every package's test
// binary of one run shares a build folder, keyed by the go command that
// started them, and a binary is rebuilt only when a Go file of the module
// is newer than it. Builds are serialised with a file lock, so packages
// tested in parallel wait for one build instead of each linking its own.
package testbin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Path returns the path of command name ("ttisd" or "ttisctl") built from
// this module, building it if needed. With race the binary is built with
// the race detector (a test that wants races in the server reported).
func Path(tb testing.TB, name string, race bool) string {
	tb.Helper()
	p, err := build(name, race)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// ModuleRoot is the folder of this module's go.mod (its parent holds the
// shared test models, ../shared/models).
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// Shared returns the path of rel inside ../shared beside the module root,
// where a checkout may keep the test models (models/) and the reference
// documents (reference/), or skips the test when it is absent: a fresh
// clone has none.
func Shared(tb testing.TB, rel string) string {
	tb.Helper()
	p, err := SharedPath(rel)
	if err != nil {
		tb.Skipf("%v (a fresh clone has no ../shared)", err)
	}
	return p
}

// SharedPath is Shared for a caller that goes on without the file: it
// returns an error when rel is absent.
func SharedPath(rel string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "..", "shared", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("testbin: shared test file %s not present: %w", rel, err)
	}
	return p, nil
}

// Build is Path for TestMain, before there is a testing.TB.
func Build(name string, race bool) (string, error) { return build(name, race) }

var mu sync.Mutex

func build(name string, race bool) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	cleanOnce.Do(clean)
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "ttis-testbin-"+runKey())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("testbin: lock %s: %w", dir, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	bin := filepath.Join(dir, name)
	args := []string{"build", "-o", bin}
	if race {
		bin += "-race"
		args = []string{"build", "-race", "-o", bin}
	}
	if fresh(bin, root) {
		return bin, nil
	}
	cmd := exec.Command("go", append(args, "./cmd/"+name)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: build %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// runKey names the go command process running the tests (its pid and
// start time, so a reused pid is a new key), or this process when run by
// hand.
func runKey() string {
	ppid := os.Getppid()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", ppid))
	if err != nil {
		return fmt.Sprint(os.Getpid())
	}
	// Field 22 is the start time; the command name (field 2) may hold
	// spaces, so count from the closing parenthesis.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 20 {
		return fmt.Sprint(ppid)
	}
	return fmt.Sprintf("%d-%s", ppid, f[19])
}

// fresh reports whether bin exists and no Go file (or go.mod/go.sum) of the
// module is newer.
func fresh(bin, root string) bool {
	st, err := os.Stat(bin)
	if err != nil {
		return false
	}
	built := st.ModTime()
	newer := errors.New("newer")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".s") || n == "go.mod" || n == "go.sum" {
			if info, err := d.Info(); err == nil && info.ModTime().After(built) {
				return newer
			}
		}
		return nil
	})
	return err == nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 30 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("testbin: go.mod not found above the test directory")
}

// keep is how long another run's build folder stays before a new run
// removes it.
const keep = 24 * time.Hour

var cleanOnce sync.Once

// clean removes the build folders of runs long gone, so /tmp does not
// fill.
func clean() {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "ttis-testbin-*"))
	for _, d := range old {
		if st, err := os.Stat(d); err == nil && time.Since(st.ModTime()) > keep {
			_ = os.RemoveAll(d)
		}
	}
}
