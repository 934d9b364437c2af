package reconcile

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/supervise"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeStarter starts fake processes that run until signalled.
type fakeStarter struct {
	mu     sync.Mutex
	starts map[string]int
	files  map[string]string
	pid    int
}

func (f *fakeStarter) Start(spec supervise.Spec, stdout, _ io.Writer) (supervise.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts == nil {
		f.starts = map[string]int{}
	}
	f.starts[spec.Name]++
	if f.files == nil {
		f.files = map[string]string{}
	}
	f.files[spec.Name] = spec.UnitFile
	f.pid++
	fmt.Fprintf(stdout, "serving %s\n", spec.Name)
	return &fakeProc{pid: 1000 + f.pid, done: make(chan struct{})}, nil
}

func (f *fakeStarter) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[name]
}

type fakeProc struct {
	pid  int
	once sync.Once
	done chan struct{}
}

func (p *fakeProc) Pid() int { return p.pid }
func (p *fakeProc) Signal(sig syscall.Signal) error {
	p.once.Do(func() { close(p.done) })
	return nil
}
func (p *fakeProc) Wait() supervise.Exit {
	<-p.done
	return supervise.Exit{Signal: syscall.SIGTERM}
}

func unitText(port int, extra string) string {
	return fmt.Sprintf("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:%d\"\n%s", port, extra)
}

type fixture struct {
	t       *testing.T
	dir     string
	starter *fakeStarter
	r       *Reconciler
}

func newFixture(t *testing.T) *fixture {
	dir := filepath.Join(t.TempDir(), "units")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := &fakeStarter{}
	ctx, cancel := context.WithCancel(context.Background())
	r := New(ctx, Options{Dir: dir, SnapshotDir: filepath.Join(filepath.Dir(dir), "snap"), Deps: supervise.Deps{
		Starter:      st,
		Probe:        func(context.Context, string) error { return nil },
		PollInterval: 5 * time.Millisecond,
	}})
	t.Cleanup(func() {
		cancel()
		r.Shutdown(context.Background())
	})
	return &fixture{t: t, dir: dir, starter: st, r: r}
}

func (f *fixture) write(name, text string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name+".toml"), []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) reconcile() api.ReloadResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.r.Reconcile(ctx)
}

func (f *fixture) unit(name string) api.UnitDetail {
	f.t.Helper()
	d, err := f.r.Unit(name, 50)
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) waitActive(name string) api.UnitDetail {
	f.t.Helper()
	for range 2000 {
		if d := f.unit(name); d.State == api.StateActive {
			return d
		}
		time.Sleep(2 * time.Millisecond)
	}
	f.t.Fatalf("unit %s not active: %+v", name, f.unit(name))
	return api.UnitDetail{}
}

func TestLifecycle(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(18001, ""))
	res := f.reconcile()
	if strings.Join(res.Started, ",") != "a" || len(res.Errors) != 0 {
		t.Fatalf("first pass %+v", res)
	}
	d := f.waitActive("a")
	if d.Model != "Llama-3.1-8B-Instruct" || d.LoadState != api.LoadLoaded || d.Hash == "" {
		t.Fatalf("detail %+v", d)
	}
	f.starter.mu.Lock()
	served := f.starter.files["a"]
	f.starter.mu.Unlock()
	if served != filepath.Join(filepath.Dir(f.dir), "snap", "a.toml") {
		t.Fatalf("server reads %s, want the snapshot", served)
	}

	// Unchanged folder: nothing happens.
	if res := f.reconcile(); len(res.Started)+len(res.Changed)+len(res.Stopped) != 0 {
		t.Fatalf("idle pass %+v", res)
	}

	// Edit: restart with the new version.
	f.write("a", unitText(18001, "description = \"v2\"\n"))
	if res := f.reconcile(); strings.Join(res.Changed, ",") != "a" {
		t.Fatalf("edit pass %+v", res)
	}
	if d := f.waitActive("a"); d.Description != "v2" || f.starter.count("a") != 2 {
		t.Fatalf("after edit %+v, starts %d", d, f.starter.count("a"))
	}

	// Break: the old version keeps running and the error is shown.
	f.write("a", unitText(18001, "bogus = 1\n"))
	res = f.reconcile()
	if len(res.Errors) != 1 {
		t.Fatalf("broken pass %+v", res)
	}
	d = f.unit("a")
	if d.State != api.StateActive || d.LoadState != api.LoadStale || f.starter.count("a") != 2 {
		t.Fatalf("broken file disturbed the unit: %+v", d)
	}
	if !strings.Contains(d.Detail, "using last good version from") || !strings.Contains(d.Detail, "a.toml:5:1") {
		t.Fatalf("detail %q", d.Detail)
	}

	// Fix: back to loaded, restarted once.
	f.write("a", unitText(18001, "description = \"v3\"\n"))
	f.reconcile()
	if d := f.waitActive("a"); d.LoadState != api.LoadLoaded || d.Description != "v3" || d.LoadError != "" {
		t.Fatalf("after fix %+v", d)
	}

	// Delete: stopped and gone.
	if err := os.Remove(filepath.Join(f.dir, "a.toml")); err != nil {
		t.Fatal(err)
	}
	if res := f.reconcile(); strings.Join(res.Stopped, ",") != "a" {
		t.Fatalf("delete pass %+v", res)
	}
	if _, err := f.r.Unit("a", 0); err == nil {
		t.Fatal("deleted unit still listed")
	}
	if _, err := os.Stat(served); !os.IsNotExist(err) {
		t.Fatalf("snapshot of a deleted unit left behind: %v", err)
	}
}

func TestBrokenNewUnitAndConflicts(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(18002, ""))
	f.write("b", unitText(18002, "")) // port clash: b is the later unit
	f.write("c", "model = [\n")       // broken TOML
	res := f.reconcile()
	if strings.Join(res.Started, ",") != "a" || len(res.Errors) != 2 {
		t.Fatalf("pass %+v", res)
	}
	f.waitActive("a")
	b := f.unit("b")
	if b.State != api.StateFailed || b.LoadState != api.LoadError || !strings.Contains(b.LastError, "already used by unit a") {
		t.Fatalf("b %+v", b)
	}
	if c := f.unit("c"); !strings.Contains(c.LastError, "c.toml:") || c.Since.IsZero() {
		t.Fatalf("c error lacks position or time: %q %v", c.LastError, c.Since)
	}
	if err := f.r.Start(context.Background(), "b"); err == nil {
		t.Fatal("started a unit with no valid version")
	}
}

func TestEditedUnitKeepsItsPortAgainstNewcomer(t *testing.T) {
	f := newFixture(t)
	f.write("b", unitText(18003, ""))
	f.reconcile()
	f.waitActive("b")
	// b breaks; a newcomer "a" (earlier by name) wants b's port.
	f.write("b", "broken = \n")
	f.write("a", unitText(18003, ""))
	f.reconcile()
	if a := f.unit("a"); a.LoadState != api.LoadError || !strings.Contains(a.LastError, "already used by unit b") {
		t.Fatalf("newcomer took a running unit's port: %+v", a)
	}
	if b := f.unit("b"); b.State != api.StateActive {
		t.Fatalf("b %+v", b)
	}
}

func TestDisabledAndUserStop(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(18004, ""))
	f.reconcile()
	f.waitActive("a")
	ctx := context.Background()
	if err := f.r.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// An edit does not start a unit the operator stopped.
	f.write("a", unitText(18004, "description = \"x\"\n"))
	f.reconcile()
	if d := f.unit("a"); d.State != api.StateInactive {
		t.Fatalf("edit started a stopped unit: %+v", d)
	}
	if err := f.r.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	f.waitActive("a")

	f.write("a", unitText(18004, "disabled = true\n"))
	f.reconcile()
	if d := f.unit("a"); d.State != api.StateInactive || d.Detail == "" {
		t.Fatalf("disabled unit %+v", d)
	}
	if err := f.r.Restart(ctx, "a"); err == nil {
		t.Fatal("restarted a disabled unit")
	}
	f.write("a", unitText(18004, ""))
	f.reconcile()
	f.waitActive("a")
	if _, err := f.r.Unit("nope", 0); err == nil {
		t.Fatal("unknown unit found")
	}
}

func TestFolderGoneKeepsUnits(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(18005, ""))
	f.reconcile()
	f.waitActive("a")
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	res := f.reconcile()
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "running units keep running") {
		t.Fatalf("pass %+v", res)
	}
	l := f.r.List()
	if len(l.Units) != 1 || l.Units[0].State != api.StateActive || len(l.Errors) != 1 {
		t.Fatalf("list %+v", l)
	}
	if err := os.Mkdir(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.write("a", unitText(18005, ""))
	res = f.reconcile()
	if len(res.Errors)+len(res.Changed)+len(res.Started) != 0 || len(f.r.List().Errors) != 0 {
		t.Fatalf("same unit back restarted it: %+v", res)
	}
	if !strings.Contains(f.r.Summary(), "1 units: 1 active") {
		t.Fatalf("summary %q", f.r.Summary())
	}
}

func TestRelativeSecretFile(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "key"), []byte("sekrit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.write("a", unitText(18006, "[auth]\nmode = \"api-key\"\nsecret_file = \"key\"\n"))
	if res := f.reconcile(); len(res.Errors) != 0 {
		t.Fatalf("pass %+v", res)
	}
	d := f.waitActive("a")
	if d.AuthMode != "api-key" || d.AuthSecretFile != filepath.Join(f.dir, "key") {
		t.Fatalf("auth %q %q", d.AuthMode, d.AuthSecretFile)
	}
	f.starter.mu.Lock()
	snap := f.starter.files["a"]
	f.starter.mu.Unlock()
	b, err := os.ReadFile(snap)
	if err != nil || !strings.Contains(string(b), filepath.Join(f.dir, "key")) {
		t.Fatalf("snapshot %s: %v\n%s", snap, err, b)
	}
}

func TestResidentBytes(t *testing.T) {
	if n := residentBytes(os.Getpid()); n <= 0 {
		t.Fatalf("resident memory of this test = %d", n)
	}
	if n := residentBytes(1 << 30); n != 0 {
		t.Fatalf("resident memory of no process = %d", n)
	}
}

// The scheduler follows GoodUnits: a broken edit must leave the last good
// version (and so its schedules) in place, and a removed file takes it away.
func TestGoodUnitsKeepLastGoodVersion(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(19301, "description = \"first\"\n"))
	f.write("b", unitText(19302, ""))
	f.reconcile()
	f.write("a", unitText(19301, "description = \"first\"\nbogus_key = 1\n"))
	f.reconcile()
	got := f.r.GoodUnits()
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("GoodUnits = %v, want a and b", got)
	}
	if got[0].Description != "first" {
		t.Errorf("unit a is %q, want the last good version", got[0].Description)
	}
	if err := os.Remove(filepath.Join(f.dir, "b.toml")); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	if got := f.r.GoodUnits(); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("after removing b: GoodUnits = %v", got)
	}
}
