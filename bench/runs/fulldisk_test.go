package runs

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fileSizeLimit makes every file write past limit bytes fail (EFBIG), as
// a full disk fails them (ENOSPC), for the rest of the test: RLIMIT_FSIZE
// needs no privileges, unlike a small filesystem.
func fileSizeLimit(t *testing.T, limit uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	// Past the limit the kernel sends SIGXFSZ, which would end the test.
	signal.Ignore(syscall.SIGXFSZ)
	lim := syscall.Rlimit{Cur: limit, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		_ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
		signal.Reset(syscall.SIGXFSZ)
	})
}

// On a full disk a run keeps every file written before it filled, never
// holds a half-written file, and a run that cannot even write its
// manifest leaves no folder behind.
func TestFullDiskKeepsWhatWasWritten(t *testing.T) {
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r, err := s.Create(Manifest{Unit: "u", Workflow: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("point-1.json", []byte(`{"ok":1}`)); err != nil {
		t.Fatal(err)
	}
	fileSizeLimit(t, 1024)
	if err := r.WriteFile("point-2.json", []byte(strings.Repeat("x", 4096))); err == nil {
		t.Fatal("a write past the limit succeeded")
	}
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "point-1.json run.json" {
		t.Errorf("run folder holds %v, want the finished point and the manifest only", names)
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, "point-1.json")); err != nil || string(b) != `{"ok":1}` {
		t.Errorf("finished point: %q %v", b, err)
	}
	m, err := s.readManifest(context.Background(), r.Dir)
	if err != nil || len(m.Files) != 1 || m.Files[0] != "point-1.json" {
		t.Errorf("manifest %+v %v, want point-1.json listed", m, err)
	}

	fileSizeLimit(t, 16)
	if _, err := s.Create(Manifest{Unit: "u", Workflow: "bench"}); err == nil {
		t.Fatal("Create succeeded with no room for the manifest")
	}
	runs, err := os.ReadDir(filepath.Join(s.Root, "u"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Errorf("%d run folders, want only the first: a failed Create left one behind", len(runs))
	}
}
