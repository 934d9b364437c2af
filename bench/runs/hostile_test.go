package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test instead of hanging when f does not return: the bug
// guarded against is a listing that never returns (a named pipe as
// run.json). The bound is generous; nothing here is timed.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s blocked for 30s", what)
	}
}

// hostileStore is a store with one good run of unit u and, beside it, run
// folders whose manifest is every kind of file the store must refuse to
// open or read whole. It returns the store, the good run's id and, per bad
// run id, what its entry must say.
func hostileStore(t testing.TB) (*Store, string, map[string]string) {
	t.Helper()
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	good, err := s.Create(Manifest{Unit: "u", Workflow: "release"})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"20260101T000001Z-release-000001": "not a regular file (a named pipe)",
		"20260101T000002Z-release-000002": "419430400 bytes, larger than the 1048576-byte limit",
		"20260101T000003Z-release-000003": "not a regular file (a device node)",
		"20260101T000004Z-release-000004": "not a regular file (a folder)",
		"20260101T000005Z-release-000005": "too many levels of symbolic links",
		"20260101T000006Z-release-000006": "unexpected end of JSON input",
	}
	for id := range bad {
		if err := os.MkdirAll(filepath.Join(s.Root, "u", id), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := func(id string) string { return filepath.Join(s.Root, "u", id, ManifestFile) }
	if err := syscall.Mkfifo(manifest("20260101T000001Z-release-000001"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(manifest("20260101T000002Z-release-000002"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the 400 MB cost nothing to make, and must cost nothing to
	// list.
	if err := big.Truncate(400 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if err := os.Symlink("/dev/zero", manifest("20260101T000003Z-release-000003")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(manifest("20260101T000004Z-release-000004"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ManifestFile, manifest("20260101T000005Z-release-000005")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest("20260101T000006Z-release-000006"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s, good.ID(), bad
}

func TestListReportsHostileManifestsAsBadEntries(t *testing.T) {
	s, good, bad := hostileStore(t)
	for _, unit := range []string{"u", ""} {
		var list []Manifest
		var errs []error
		within(t, "List", func() { list, errs = s.List(context.Background(), unit) })
		if len(list) != 1 || list[0].ID != good {
			t.Errorf("List(%q) = %+v, want the good run alone", unit, list)
		}
		found := map[string]bool{}
		for _, err := range errs {
			var be *BadEntry
			if !errors.As(err, &be) {
				t.Errorf("List(%q): %v is not a bad entry", unit, err)
				continue
			}
			id := filepath.Base(be.Dir)
			want, ok := bad[id]
			if !ok {
				t.Errorf("List(%q): unexpected bad entry %v", unit, err)
				continue
			}
			found[id] = true
			path := filepath.Join(s.Root, "u", id, ManifestFile)
			if msg := err.Error(); !strings.HasPrefix(msg, "bad run entry: "+path+": ") || !strings.Contains(msg, want) {
				t.Errorf("List(%q): %q, want the manifest's path and %q", unit, msg, want)
			}
		}
		if len(found) != len(bad) {
			t.Errorf("List(%q) reported %d of %d bad entries: %v", unit, len(found), len(bad), errs)
		}
	}
}

// Open by a bad run's id says what is wrong with it, rather than that no
// such run exists.
func TestOpenBadEntry(t *testing.T) {
	s, good, _ := hostileStore(t)
	var err error
	within(t, "Open", func() { _, _, err = s.Open(context.Background(), "20260101T000001Z-release-000001") })
	if err == nil || !strings.Contains(err.Error(), "run.json: not a regular file (a named pipe)") {
		t.Errorf("Open(pipe run) = %v", err)
	}
	within(t, "Open", func() {
		_, _, err = s.Open(context.Background(), filepath.Join(s.Root, "u", "20260101T000002Z-release-000002"))
	})
	if err == nil || !strings.Contains(err.Error(), "larger than the 1048576-byte limit") {
		t.Errorf("Open(path of the big run) = %v", err)
	}
	if m, _, err := s.Open(context.Background(), good); err != nil || m.ID != good {
		t.Errorf("Open(good) = %+v, %v", m, err)
	}
}

// A named pipe or a file in place of the store's folders is reported, not
// opened.
func TestListHostileFolders(t *testing.T) {
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.Root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	var errs []error
	within(t, "List(pipe)", func() { _, errs = s.List(context.Background(), "pipe") })
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), filepath.Join(s.Root, "pipe")+": not a folder (a named pipe)") {
		t.Errorf("List of a unit whose folder is a pipe: %v", errs)
	}
	root := &Store{Root: filepath.Join(s.Root, "pipe")}
	within(t, "List(root pipe)", func() { _, errs = root.List(context.Background(), "") })
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "not a folder (a named pipe)") {
		t.Errorf("List of a store that is a pipe: %v", errs)
	}
}

// When the caller's context ends, List returns what it has and says that
// it stopped.
func TestListStopsWithContext(t *testing.T) {
	s, _, _ := hostileStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	list, errs := s.List(ctx, "")
	if len(list) != 0 || len(errs) == 0 || !errors.Is(errs[len(errs)-1], context.Canceled) ||
		!strings.Contains(errs[len(errs)-1].Error(), "listing stopped after 0 runs") {
		t.Errorf("List with a cancelled context = %v, %v", list, errs)
	}
}

// BenchmarkListHostile lists a unit whose store holds a 400 MB run.json (and
// a pipe, a device node, ...) beside one good run: the allocations per
// listing must stay in kilobytes, not grow with the big file (issue 31:
// 841 MB for `ttisctl runs`).
func BenchmarkListHostile(b *testing.B) {
	s, _, bad := hostileStore(b)
	b.ReportAllocs()
	for b.Loop() {
		if list, errs := s.List(context.Background(), "u"); len(list) != 1 || len(errs) != len(bad) {
			b.Fatalf("listed %d runs, %v", len(list), errs)
		}
	}
}
