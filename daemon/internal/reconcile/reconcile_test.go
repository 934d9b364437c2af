package reconcile

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/orphans"
	"github.com/ttis-dev/ttis/daemon/internal/supervise"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeStarter starts fake processes that run until signalled.
type fakeStarter struct {
	mu      sync.Mutex
	starts  map[string]int
	files   map[string]string
	procs   map[string]*fakeProc
	adopted map[string]*fakeProc
	pid     int
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
	p := &fakeProc{pid: 1000 + f.pid, done: make(chan struct{})}
	if f.procs == nil {
		f.procs = map[string]*fakeProc{}
	}
	f.procs[spec.Name] = p
	return p, nil
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
	hups atomic.Int32
}

func (p *fakeProc) Pid() int { return p.pid }
func (p *fakeProc) SignalMain(sig syscall.Signal) error {
	if sig == syscall.SIGHUP {
		p.hups.Add(1)
	}
	return nil
}
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
	r, st := newReconciler(t, dir, nil)
	return &fixture{t: t, dir: dir, starter: st, r: r}
}

// newReconciler runs a reconciler on the units folder dir (snapshots
// beside it) with fake servers, as a daemon would.
func newReconciler(t *testing.T, dir string, identify func(context.Context, string) (int, string, bool, error)) (*Reconciler, *fakeStarter) {
	st := &fakeStarter{}
	ctx, cancel := context.WithCancel(context.Background())
	r := New(ctx, Options{Dir: dir, SnapshotDir: filepath.Join(filepath.Dir(dir), "snap"), Identify: identify, Deps: supervise.Deps{
		Starter:      st,
		Probe:        func(context.Context, string) error { return nil },
		PollInterval: 5 * time.Millisecond,
	}})
	t.Cleanup(func() {
		cancel()
		r.Shutdown(context.Background())
	})
	return r, st
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

	// A daemon-side edit: the new version, the same server.
	f.write("a", unitText(18001, "description = \"v2\"\n"))
	if res := f.reconcile(); strings.Join(res.Changed, ",") != "a" {
		t.Fatalf("edit pass %+v", res)
	}
	if d := f.waitActive("a"); d.Description != "v2" || f.starter.count("a") != 1 || d.LastChange == nil || d.LastChange.Action != api.ChangeRetune {
		t.Fatalf("after edit %+v, starts %d", d, f.starter.count("a"))
	}
	// A server-shaping edit: restarted with the new version.
	f.write("a", unitText(18001, "description = \"v2\"\n[sim]\nseed = 3\n"))
	if res := f.reconcile(); strings.Join(res.Changed, ",") != "a" {
		t.Fatalf("edit pass %+v", res)
	}
	if d := f.waitActive("a"); f.starter.count("a") != 2 || d.LastChange.Action != api.ChangeRestart || strings.Join(d.LastChange.Fields, ",") != "sim" {
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
	if !strings.Contains(d.Detail, "using last good version from") || !strings.Contains(d.Detail, "a.toml:5:1") ||
		d.Pending != nil {
		t.Fatalf("detail %q", d.Detail)
	}

	// Fix: back to loaded; the seed went back, so it restarts once.
	f.write("a", unitText(18001, "description = \"v3\"\n"))
	f.reconcile()
	if d := f.waitActive("a"); d.LoadState != api.LoadLoaded || d.Description != "v3" || d.LoadError != "" || f.starter.count("a") != 3 {
		t.Fatalf("after fix %+v, starts %d", d, f.starter.count("a"))
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

func (f *fakeStarter) Adopt(spec supervise.Spec, pid int, _ uint64, stdout, _ io.Writer) (supervise.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.adopted == nil {
		f.adopted = map[string]*fakeProc{}
	}
	p := &fakeProc{pid: pid, done: make(chan struct{})}
	f.adopted[spec.Name] = p
	fmt.Fprintf(stdout, "still serving %s\n", spec.Name)
	return p, nil
}

func (f *fixture) proc(name string) *fakeProc {
	f.starter.mu.Lock()
	defer f.starter.mu.Unlock()
	return f.starter.procs[name]
}

// A live edit reaches the running server as SIGHUP: same pid, new
// version. Before the pass, the unit's detail shows what it will do.
func TestLiveEditKeepsTheServer(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(18011, "[limits]\nmax_queue = 4\n"))
	f.reconcile()
	before := f.waitActive("a")
	f.write("a", unitText(18011, "[limits]\nmax_queue = 9\n"))
	if p := f.unit("a").Pending; p == nil || p.Action != api.ChangeReload || strings.Join(p.Fields, ",") != "limits.max_queue" {
		t.Fatalf("pending %+v", p)
	}
	if res := f.reconcile(); strings.Join(res.Changed, ",") != "a" {
		t.Fatalf("pass %+v", res)
	}
	d := f.unit("a")
	if d.PID != before.PID || f.starter.count("a") != 1 || f.proc("a").hups.Load() != 1 || d.Pending != nil ||
		d.LastChange == nil || d.LastChange.Action != api.ChangeReload {
		t.Fatalf("after a live edit: %+v, starts %d, hups %d", d, f.starter.count("a"), f.proc("a").hups.Load())
	}
	// A comment: nothing at all.
	f.write("a", "# managed\n"+unitText(18011, "[limits]\nmax_queue = 9\n"))
	if p := f.unit("a").Pending; p == nil || p.Action != api.ChangeKeep {
		t.Fatalf("pending %+v", p)
	}
	if res := f.reconcile(); len(res.Changed)+len(res.Started)+len(res.Stopped) != 0 || f.proc("a").hups.Load() != 1 || f.starter.count("a") != 1 {
		t.Fatalf("a comment did something: %+v", res)
	}
	// A broken edit shows as invalid before the pass.
	f.write("a", unitText(18011, "bogus = 1\n"))
	if p := f.unit("a").Pending; p == nil || p.Action != api.ChangeInvalid || !strings.Contains(p.Error, "bogus") {
		t.Fatalf("pending %+v", p)
	}
}

// A unit whose file broke while no daemon ran runs its last good version
// (from the snapshot folder) and shows the error.
func TestBrokenAtStartupRunsLastGood(t *testing.T) {
	f := newFixture(t)
	f.write("a", unitText(18012, "description = \"good\"\n"))
	f.reconcile()
	f.waitActive("a")
	f.write("a", unitText(18012, "bogus = 1\n"))

	r, st := newReconciler(t, f.dir, nil)
	if rejected, _ := r.Restore(context.Background(), nil); len(rejected) != 0 {
		t.Fatalf("rejected %+v", rejected)
	}
	res := r.Reconcile(context.Background())
	if strings.Join(res.Started, ",") != "a" || len(res.Errors) != 1 {
		t.Fatalf("pass %+v", res)
	}
	g := &fixture{t: t, dir: f.dir, starter: st, r: r}
	d := g.waitActive("a")
	if d.Description != "good" || d.LoadState != api.LoadStale || !strings.Contains(d.Detail, "using last good version") || !strings.Contains(d.LastError, "bogus") {
		t.Fatalf("unit %+v", d)
	}
}

// Servers an earlier daemon left running are adopted when they answer as
// recorded and run the last good version; only what changed is applied.
func TestRestoreAdoptsMatchingServers(t *testing.T) {
	f := newFixture(t)
	f.write("same", unitText(18013, ""))
	f.write("live", unitText(18014, "[limits]\nmax_queue = 2\n"))
	f.write("moved", unitText(18015, ""))
	f.write("liar", unitText(18016, ""))
	f.reconcile()
	snap := filepath.Join(filepath.Dir(f.dir), "snap")
	servers := []orphans.Server{}
	for i, name := range []string{"same", "live", "moved", "liar"} {
		text, err := os.ReadFile(filepath.Join(snap, name+".toml"))
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, orphans.Server{Unit: name, PID: 5000 + i, Start: 1, Listen: fmt.Sprintf("127.0.0.1:%d", 18013+i), Text: string(text), Hash: fmt.Sprint("h", i)})
	}
	// While no daemon ran: one live edit, one server-shaping edit.
	f.write("live", unitText(18014, "[limits]\nmax_queue = 7\n"))
	f.write("moved", unitText(18025, ""))
	identify := func(_ context.Context, listen string) (int, string, bool, error) {
		for i, s := range servers {
			if s.Listen == listen {
				if s.Unit == "liar" {
					return 4242, s.Hash, true, nil // another process answers
				}
				// "same" is still loading: adopted, then awaited.
				return s.PID, fmt.Sprint("h", i), s.Unit != "same", nil
			}
		}
		return 0, "", false, fmt.Errorf("nobody at %s", listen)
	}
	r, st := newReconciler(t, f.dir, identify)
	rejected, why := r.Restore(context.Background(), servers)
	if len(rejected) != 1 || rejected[0].Unit != "liar" || !strings.Contains(why[0], "pid 4242") {
		t.Fatalf("rejected %+v %q", rejected, why)
	}
	res := r.Reconcile(context.Background())
	g := &fixture{t: t, dir: f.dir, starter: st, r: r}
	if strings.Join(res.Started, ",") != "liar" || strings.Join(res.Changed, ",") != "live,moved" {
		t.Fatalf("pass %+v", res)
	}
	if d := g.waitActive("same"); d.PID != 5000 || !d.Adopted || st.count("same") != 0 {
		t.Fatalf("same: %+v", d)
	}
	if d := g.waitActive("live"); d.PID != 5001 || st.adopted["live"].hups.Load() != 1 || st.count("live") != 0 {
		t.Fatalf("live: %+v", d)
	}
	if d := g.waitActive("moved"); d.PID == 5002 || d.Adopted || st.count("moved") != 1 || d.Listen != "127.0.0.1:18025" {
		t.Fatalf("moved: %+v", d)
	}
}

// TestDetailCatalog: a dev unit's detail says so, so that ttisctl grades
// its benchmarks with the dev catalog; a prod unit's leaves it empty.
func TestDetailCatalog(t *testing.T) {
	f := newFixture(t)
	f.write("d", unitText(18017, "catalog = \"dev\"\n"))
	f.write("p", unitText(18018, ""))
	if res := f.reconcile(); len(res.Errors) != 0 {
		t.Fatalf("pass %+v", res)
	}
	if d := f.waitActive("d"); d.Catalog != "dev" {
		t.Errorf("dev unit detail catalog %q", d.Catalog)
	}
	if d := f.waitActive("p"); d.Catalog != "" {
		t.Errorf("prod unit detail catalog %q", d.Catalog)
	}
}
