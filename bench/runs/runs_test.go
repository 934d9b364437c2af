package runs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testStore(t testing.TB, start time.Time) (*Store, *time.Time) {
	t.Helper()
	now := start
	return &Store{
		Root:  t.TempDir(),
		Now:   func() time.Time { return now },
		Rand:  bytes.NewReader(bytes.Repeat([]byte{0xab, 0x01, 0x7f, 0x10, 0x20, 0x30}, 100)),
		Alive: func(pid int) bool { return pid == os.Getpid() },
	}, &now
}

func TestNewID(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	tests := []struct {
		workflow, want, err string
	}{
		{"release", "20260304T040607Z-release-0102ff", ""},
		{"Benchmarks", "20260304T040607Z-benchmarks-0102ff", ""},
		{"a/b", "", "workflow"},
		{"", "", "workflow"},
	}
	for _, tc := range tests {
		id, err := NewID(at, tc.workflow, bytes.NewReader([]byte{1, 2, 255}))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("NewID(%q) error = %v, want %q", tc.workflow, err, tc.err)
			}
			continue
		}
		if err != nil || id != tc.want {
			t.Errorf("NewID(%q) = %q, %v; want %q", tc.workflow, id, err, tc.want)
		}
		if !idPattern.MatchString(id) {
			t.Errorf("id %q does not match the listing pattern", id)
		}
	}
}

func TestCreateWriteFinishList(t *testing.T) {
	s, now := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r1, err := s.Create(Manifest{Unit: "llama", Model: "M", Workflow: "release", Limit: "smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.WriteFile("report.md", []byte("# hi\n")); err != nil {
		t.Fatal(err)
	}
	if err := r1.WriteFile("benchmarks/a.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"../x", "/abs", ManifestFile, "."} {
		if err := r1.WriteFile(bad, nil); err == nil {
			t.Errorf("WriteFile(%q) succeeded", bad)
		}
	}
	*now = now.Add(90 * time.Second)
	if err := r1.Finish(StatusComplete, "PASS", ""); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Hour)
	r2, err := s.Create(Manifest{Unit: "llama", Model: "M", Workflow: "benchmarks"})
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Create(Manifest{Unit: "other", Model: "M", Workflow: "evals"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r3.Finish("bogus", "", ""); err == nil {
		t.Error("Finish with a bad status succeeded")
	}

	got, errs := s.List(context.Background(), "llama")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(got) != 2 || got[0].ID != r2.ID() || got[1].ID != r1.ID() {
		t.Fatalf("List(llama) = %+v, want r2, r1", got)
	}
	m1 := got[1]
	if m1.Status != StatusComplete || m1.Verdict != "PASS" || m1.Duration(time.Time{}) != 90*time.Second {
		t.Errorf("r1 manifest = %+v", m1)
	}
	if strings.Join(m1.Files, ",") != "benchmarks/a.json,report.md" {
		t.Errorf("r1 files = %v", m1.Files)
	}
	if got[0].Status != StatusRunning {
		t.Errorf("r2 status = %s, want running (our own pid)", got[0].Status)
	}
	all, _ := s.List(context.Background(), "")
	if len(all) != 3 {
		t.Errorf("List(\"\") = %d runs, want 3", len(all))
	}
	if _, errs := s.List(context.Background(), "../etc"); len(errs) == 0 {
		t.Error("List accepted a unit name with a path")
	}
}

func TestInterruptedRun(t *testing.T) {
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r, err := s.Create(Manifest{Unit: "u", Workflow: "release"})
	if err != nil {
		t.Fatal(err)
	}
	s.Alive = func(int) bool { return false }
	got, _ := s.List(context.Background(), "u")
	if len(got) != 1 || got[0].Status != StatusInterrupted {
		t.Fatalf("List = %+v, want one interrupted run", got)
	}
	m, dir, err := s.Open(context.Background(), r.ID()[:12])
	if err != nil || m.Status != StatusInterrupted || dir != r.Dir {
		t.Errorf("Open(prefix) = %+v %s %v", m, dir, err)
	}
}

// TestCrashLeavesNoRun simulates crashes: a run folder whose manifest was
// never renamed into place, and a half-written temp file next to a good
// manifest. Listing shows neither half file as a run or a file.
func TestCrashLeavesNoRun(t *testing.T) {
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	crashed := filepath.Join(s.Root, "u", "20260102T030000Z-release-aaaaaa")
	if err := os.MkdirAll(crashed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashed, ".run.json.tmp-123"), []byte(`{"id":"20260102T030000Z-rel`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := s.Create(Manifest{Unit: "u", Workflow: "release"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, ".report.md.tmp-9"), []byte("# half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, "u", "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, errs := s.List(context.Background(), "u")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(got) != 1 || got[0].ID != r.ID() || len(got[0].Files) != 0 {
		t.Fatalf("List = %+v, want only the good run with no files", got)
	}
	if _, _, err := s.Open(context.Background(), "20260102T030000Z"); err == nil {
		t.Error("Open found the crashed run")
	}
}

func TestOpenAmbiguousAndPath(t *testing.T) {
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, _ := s.Create(Manifest{Unit: "u", Workflow: "release"})
	b, _ := s.Create(Manifest{Unit: "v", Workflow: "release"})
	if _, _, err := s.Open(context.Background(), "20260102"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("Open(common prefix) = %v, want ambiguous", err)
	}
	if m, _, err := s.Open(context.Background(), b.ID()); err != nil || m.Unit != "v" {
		t.Errorf("Open(id) = %+v %v", m, err)
	}
	if m, dir, err := s.Open(context.Background(), a.Dir); err != nil || m.ID != a.ID() || dir != a.Dir {
		t.Errorf("Open(path) = %+v %v", m, err)
	}
	if _, _, err := s.Open(context.Background(), "nope"); err == nil {
		t.Error("Open(nope) succeeded")
	}
	if err := os.WriteFile(filepath.Join(a.Dir, ManifestFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs := s.List(context.Background(), "u"); len(errs) != 1 {
		t.Errorf("a corrupt manifest gave errors %v, want one", errs)
	}
	if _, err := s.Create(Manifest{Unit: "../x", Workflow: "release"}); err == nil {
		t.Error("Create accepted a unit name with a path")
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"id":"20260102T030405Z-release-abcdef","unit":"u","workflow":"release","status":"complete","started":"2026-01-02T03:04:05Z","files":["report.md"]}`))
	f.Add([]byte(`{"id":"x","unit":"../u","status":"running"}`))
	f.Add([]byte(`{"id":"20260102T030405Z-release-abcdef","unit":"u","status":"done"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest("run.json", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "run.json: ") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		if CheckUnitName(m.Unit) != nil || !idPattern.MatchString(m.ID) {
			t.Errorf("accepted a manifest with unit %q id %q", m.Unit, m.ID)
		}
	})
}

// BenchmarkList lists a unit with 50 runs (every manifest is read).
func BenchmarkList(b *testing.B) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Store{Root: b.TempDir(), Now: func() time.Time { now = now.Add(time.Minute); return now }, Alive: func(int) bool { return true }}
	for i := 0; i < 50; i++ {
		r, err := s.Create(Manifest{Unit: "u", Workflow: "release"})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Finish(StatusComplete, "PASS", ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, errs := s.List(context.Background(), "u"); len(got) != 50 || len(errs) > 0 {
			b.Fatalf("listed %d runs, %v", len(got), errs)
		}
	}
}

func TestLock(t *testing.T) {
	s, _ := testStore(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	unlock, err := s.Lock("u")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock("u"); !errors.Is(err, ErrBusy) {
		t.Errorf("second Lock = %v, want ErrBusy", err)
	}
	other, err := s.Lock("v")
	if err != nil {
		t.Fatalf("another unit's lock: %v", err)
	}
	other()
	unlock()
	again, err := s.Lock("u")
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
	if _, err := s.Lock("../x"); err == nil {
		t.Error("Lock accepted a bad unit name")
	}
	if list, errs := s.List(context.Background(), ""); len(list) != 0 || len(errs) != 0 {
		t.Errorf("lock files list as runs: %v %v", list, errs)
	}
}
