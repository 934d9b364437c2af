package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type recorder struct {
	c chan string
}

func (r *recorder) changed(reason string) {
	select {
	case r.c <- reason:
	default:
	}
}

// start runs a watcher on dir and waits for its start call.
func start(t *testing.T, w *Watcher) *recorder {
	t.Helper()
	r := &recorder{c: make(chan string, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, r.changed) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if got := r.next(t, 2*time.Second); got != ReasonStart {
		t.Fatalf("first change %q, want %q", got, ReasonStart)
	}
	return r
}

func (r *recorder) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case reason := <-r.c:
		return reason
	case <-time.After(timeout):
		t.Fatal("no change reported")
		return ""
	}
}

func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case reason := <-r.c:
		t.Fatalf("unexpected change %q", reason)
	case <-time.After(d):
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The tests in this file run the real fsnotify on real folders: they check
// what inotify reports for each way a folder changes. The watcher's timing
// (debounce, cap, rescan, retry) is replayed without sleeping in
// machine_test.go.

// Each editor save pattern (fsnotify probe in the daemon anchors, §2.1)
// must produce exactly one change after the debounce.
func TestEditorSavePatterns(t *testing.T) {
	tests := []struct {
		name string
		save func(t *testing.T, dir string)
	}{
		{"write-in-place", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "a.toml"), os.O_WRONLY|os.O_TRUNC, 0)
			must(t, err)
			_, err = f.WriteString("model = \"x\"\n")
			must(t, err)
			_, err = f.WriteString("device = \"n150\"\n")
			must(t, err)
			must(t, f.Close())
		}},
		{"rename-over", func(t *testing.T, dir string) {
			tmp := filepath.Join(dir, ".a.toml.tmp")
			write(t, tmp, "model = \"y\"\n")
			must(t, os.Rename(tmp, filepath.Join(dir, "a.toml")))
		}},
		{"vim-backup", func(t *testing.T, dir string) {
			a := filepath.Join(dir, "a.toml")
			must(t, os.Rename(a, a+"~"))
			write(t, a, "model = \"z\"\n")
			must(t, os.Remove(a+"~"))
		}},
		{"remove", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "a.toml")))
		}},
		{"configmap-symlink-swap", func(t *testing.T, dir string) {
			// Layout: a.toml -> ..data/a.toml, ..data -> ..v1. Swap to ..v2.
			must(t, os.Mkdir(filepath.Join(dir, "..v2"), 0o755))
			write(t, filepath.Join(dir, "..v2", "a.toml"), "model = \"v2\"\n")
			must(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
			must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
			must(t, os.RemoveAll(filepath.Join(dir, "..v1")))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.name == "configmap-symlink-swap" {
				must(t, os.Mkdir(filepath.Join(dir, "..v1"), 0o755))
				write(t, filepath.Join(dir, "..v1", "a.toml"), "model = \"v1\"\n")
				must(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
				must(t, os.Symlink(filepath.Join("..data", "a.toml"), filepath.Join(dir, "a.toml")))
			} else {
				write(t, filepath.Join(dir, "a.toml"), "model = \"old\"\n")
			}
			// A long debounce: under a loaded machine the steps of one save
			// must still fall into one quiet period.
			r := start(t, &Watcher{Dir: dir, Debounce: 300 * time.Millisecond, MaxWait: 2 * time.Second, Rescan: time.Hour})
			tt.save(t, dir)
			if got := r.next(t, 2*time.Second); got != ReasonEvent {
				t.Fatalf("reason %q", got)
			}
			r.none(t, 200*time.Millisecond)
		})
	}
}

func TestFolderDeletedAndRecreated(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "units")
	must(t, os.Mkdir(dir, 0o755))
	r := start(t, &Watcher{Dir: dir, Debounce: 20 * time.Millisecond, Retry: 20 * time.Millisecond, Rescan: time.Hour})
	must(t, os.RemoveAll(dir))
	if got := r.next(t, 2*time.Second); got != ReasonGone {
		t.Fatalf("reason %q, want %q", got, ReasonGone)
	}
	must(t, os.Mkdir(dir, 0o755))
	if got := r.next(t, 2*time.Second); got != ReasonReturned {
		t.Fatalf("reason %q, want %q", got, ReasonReturned)
	}
	// The new folder is watched.
	write(t, filepath.Join(dir, "b.toml"), "x")
	if got := r.next(t, 2*time.Second); got != ReasonEvent {
		t.Fatalf("reason %q, want %q", got, ReasonEvent)
	}
}

func TestMissingFolderAtStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	r := start(t, &Watcher{Dir: dir, Retry: 20 * time.Millisecond, Rescan: time.Hour})
	must(t, os.Mkdir(dir, 0o755))
	if got := r.next(t, 2*time.Second); got != ReasonReturned {
		t.Fatalf("reason %q, want %q", got, ReasonReturned)
	}
}

// A folder that something holds open (a process's working directory, an
// open descriptor) sends no inotify event when deleted, and a new folder at
// the same path is a different inode: the periodic check must notice both.
func TestHeldFolderReplaced(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "units")
	must(t, os.Mkdir(dir, 0o755))
	held, err := os.Open(dir)
	must(t, err)
	defer held.Close()
	r := start(t, &Watcher{Dir: dir, Debounce: 20 * time.Millisecond, Retry: 20 * time.Millisecond, Rescan: time.Hour})
	must(t, os.RemoveAll(dir))
	if got := r.next(t, 2*time.Second); got != ReasonGone {
		t.Fatalf("reason %q, want %q", got, ReasonGone)
	}
	must(t, os.Mkdir(dir, 0o755))
	if got := r.next(t, 2*time.Second); got != ReasonReturned {
		t.Fatalf("reason %q, want %q", got, ReasonReturned)
	}
	write(t, filepath.Join(dir, "b.toml"), "x")
	if got := r.next(t, 2*time.Second); got != ReasonEvent {
		t.Fatalf("reason %q, want %q", got, ReasonEvent)
	}
}

func TestFolderSwappedByRename(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "units")
	must(t, os.Mkdir(dir, 0o755))
	r := start(t, &Watcher{Dir: dir, Debounce: 20 * time.Millisecond, Retry: 20 * time.Millisecond, Rescan: time.Hour})
	must(t, os.Mkdir(dir+".new", 0o755))
	must(t, os.Rename(dir, dir+".old"))
	must(t, os.Rename(dir+".new", dir))
	// Gone then back, or straight to replaced, depending on timing.
	for i, got := 0, r.next(t, 2*time.Second); got != ReasonReturned; i, got = i+1, r.next(t, 2*time.Second) {
		if (got != ReasonGone && got != ReasonEvent) || i > 10 {
			t.Fatalf("reason %q after %d changes", got, i)
		}
	}
	write(t, filepath.Join(dir, "c.toml"), "x")
	if got := r.next(t, 2*time.Second); got != ReasonEvent {
		t.Fatalf("reason %q, want %q", got, ReasonEvent)
	}
	// The old folder is not watched any more.
	write(t, filepath.Join(dir+".old", "d.toml"), "x")
	r.none(t, 150*time.Millisecond)
}
