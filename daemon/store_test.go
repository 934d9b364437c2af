package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench/runs"
	ttisd "github.com/ttis-dev/ttis/daemon"
	"github.com/ttis-dev/ttis/units"
)

// Run ids of the hostile entries hostileRuns makes in a unit's results.
const (
	pipeRun   = "20200101T000001Z-benchmarks-000001" // run.json is a named pipe
	bigRun    = "20200101T000002Z-benchmarks-000002" // run.json is 400 MB (sparse)
	pipeMDRun = "20200101T000003Z-benchmarks-000003" // report.md is a named pipe
)

// hostileRuns puts into runsDir/unit what issue 31 found hanging the store's
// readers: a named pipe as run.json, a 400 MB run.json, and a complete run
// whose report.md is a named pipe.
func hostileRuns(t *testing.T, runsDir, unit string) {
	t.Helper()
	dir := func(id string) string {
		d := filepath.Join(runsDir, unit, id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := syscall.Mkfifo(filepath.Join(dir(pipeRun), runs.ManifestFile), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir(bigRun), runs.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(400 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	finished := time.Date(2020, 1, 1, 0, 1, 0, 0, time.UTC)
	m := runs.Manifest{ID: pipeMDRun, Unit: unit, Model: "Llama-3.1-8B-Instruct", Workflow: "benchmarks", Status: runs.StatusComplete,
		Started: time.Date(2020, 1, 1, 0, 0, 3, 0, time.UTC), Finished: &finished, Files: []string{"report.md"}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := dir(pipeMDRun)
	if err := os.WriteFile(filepath.Join(d, runs.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "report.md"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ctlBounded runs ttisctl, failing the test instead of hanging if it does
// not answer within a minute (not a timing check: issue 31's ttisctl never
// answered). It returns the output, the exit status and the peak resident
// memory of the process.
func (d *daemon) ctlBounded(t *testing.T, args ...string) (stdout, stderr string, code int, maxRSS int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ttisctlBin, append([]string{"--socket", d.socket}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ttisctl %s did not answer within a minute:\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss << 10
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode(), maxRSS
}

// With a named pipe as run.json, a 400 MB run.json and a named pipe as
// report.md in a unit's results (issue 31), the unit's scheduled runs still
// run, `ttisctl runs` answers and lists each bad entry with its reason
// without reading the big file, `ttisctl report` names the pipe, and
// SIGTERM still stops the daemon.
func TestScheduledRunBesideHostileStore(t *testing.T) {
	dir := t.TempDir()
	runsDir := filepath.Join(dir, "state", "runs")
	hostileRuns(t, runsDir, "sched")
	schedule := "\n[[schedule]]\nworkflow = \"benchmarks\"\ncalendar = \"@every 1s\"\nlimit = \"smoke\"\n" + fastRestart
	d := startDaemonIn(t, dir, map[string]string{"sched": simUnit(freePort(t), schedule)})
	d.waitUnit(t, "sched", "active", active)

	// A scheduled run reads the store (for the baseline of its
	// regressions) and finishes with its report.
	store := &runs.Store{Root: runsDir}
	var done *runs.Manifest
	for i := 0; i < 1200 && done == nil; i++ {
		list, _ := store.List(context.Background(), "sched")
		for _, m := range list {
			if m.Trigger == "schedule" && m.Status != runs.StatusRunning && m.Status != runs.StatusInterrupted {
				done = &m
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if done == nil {
		list, errs := store.List(context.Background(), "sched")
		t.Fatalf("no scheduled run finished within a minute: %+v %v", list, errs)
	}
	if _, err := os.Stat(filepath.Join(store.Dir(*done), "report.md")); err != nil || done.Status == runs.StatusFailed {
		t.Errorf("scheduled run %s: status %s (%s), report: %v", done.ID, done.Status, done.Error, err)
	}

	for _, args := range [][]string{{"runs", "sched"}, {"runs"}, {"runs", "-o", "json"}} {
		out, errOut, _, rss := d.ctlBounded(t, args...)
		if !strings.Contains(out, done.ID) || !strings.Contains(out, pipeMDRun) {
			t.Errorf("ttisctl %s lacks the good runs:\n%s", strings.Join(args, " "), out)
		}
		for id, why := range map[string]string{pipeRun: "not a regular file (a named pipe)", bigRun: "419430400 bytes, larger than the 1048576-byte limit"} {
			want := "bad run entry: " + filepath.Join(runsDir, "sched", id, runs.ManifestFile) + ": " + why
			if !strings.Contains(errOut, want) {
				t.Errorf("ttisctl %s: errors lack %q:\n%s", strings.Join(args, " "), want, errOut)
			}
		}
		// Not a memory target: a listing that read the 400 MB file
		// would hold it at least once.
		if rss > 200<<20 {
			t.Errorf("ttisctl %s peaked at %d MiB of resident memory", strings.Join(args, " "), rss>>20)
		}
	}
	out, errOut, code, _ := d.ctlBounded(t, "report", pipeMDRun)
	if code == 0 || !strings.Contains(errOut, filepath.Join(runsDir, "sched", pipeMDRun, "report.md")+": not a regular file (a named pipe)") {
		t.Errorf("report of a run whose report.md is a pipe: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code, _ = d.ctlBounded(t, "report", pipeRun)
	if code == 0 || !strings.Contains(errOut, "run.json: not a regular file (a named pipe)") {
		t.Errorf("report of a run whose run.json is a pipe: exit %d\n%s", code, errOut)
	}

	// Scheduled runs keep going every second: SIGTERM meets one.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		if d.exitErr != nil {
			t.Fatalf("ttisd exit after SIGTERM: %v", d.exitErr)
		}
	case <-time.After(time.Minute):
		t.Fatal("ttisd did not exit within a minute of SIGTERM")
	}
}

// syncBuffer is a log destination shared by the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A scheduled run stuck on something deaf to its context does not keep the
// daemon from stopping: Run returns once the stop timeout (the longest
// restart.stop_timeout of the units, 2s here) has passed, and logs the run
// it left behind. The run here is a stand-in, as no real one can be made
// to hang any more.
func TestShutdownLeavesStuckScheduledRun(t *testing.T) {
	dir := t.TempDir()
	cfg := ttisd.DefaultConfig()
	cfg.UnitsDir, cfg.StateDir, cfg.Socket = filepath.Join(dir, "units"), filepath.Join(dir, "state"), filepath.Join(dir, "s.sock")
	cfg.SocketGroup, cfg.DeviceRoot, cfg.ServerExecutable = "", filepath.Join(dir, "dev"), ttisdBin
	for _, p := range []string{cfg.UnitsDir, cfg.DeviceRoot} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	text := simUnit(freePort(t), "\n[[schedule]]\nworkflow = \"release\"\ncalendar = \"@every 1s\"\n[restart]\nstop_timeout = \"2s\"\n")
	if err := os.WriteFile(filepath.Join(cfg.UnitsDir, "stuck.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	started, unstick := make(chan struct{}, 1), make(chan struct{})
	defer close(unstick)
	workflow := func(context.Context, *units.Unit, units.Schedule) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-unstick // deaf to its context
		return nil
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- ttisd.Run(ctx, cfg, ttisd.Options{Version: "test", Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Workflow: workflow})
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("Run returned at start: %v\n%s", err, logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("no scheduled run started within a minute:\n%s", logs.String())
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Run did not return within a minute of its context's end:\n%s", logs.String())
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg         string   `json:"msg"`
			Units       []string `json:"units"`
			StopTimeout string   `json:"stop_timeout"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, "scheduled runs did not stop within the stop timeout") {
			found = fmt.Sprint(rec.Units) == "[stuck]" && rec.StopTimeout == "2s"
		}
	}
	if !found {
		t.Errorf("the stuck run is not logged with its unit and the stop timeout:\n%s", logs.String())
	}
}

// snapshots counts the unit snapshots a daemon keeps.
func (d *daemon) snapshots(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(d.dir, "state", "unit-snapshots"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries)
}

// 1,000 units created then deleted leave no snapshot files (issue 31: 960
// stayed, and every start loaded and logged them), whether they are
// deleted while the daemon runs or while none does.
func TestDeletedUnitsLeaveNoSnapshotFiles(t *testing.T) {
	const n = 1000
	dir := t.TempDir()
	d := startDaemonIn(t, dir, nil)
	// Disabled: a thousand servers would measure the machine, not the
	// snapshots; a disabled unit kept its snapshot before the fix too.
	for i := range n {
		d.write(t, fmt.Sprintf("u%04d", i), simUnit(fmt.Sprintf("127.0.0.1:%d", 30000+i), "disabled = true\n"))
	}
	if out, code := d.ctl(t, "reload"); code != 0 {
		t.Fatalf("reload: exit %d\n%s", code, out)
	}
	if got := d.snapshots(t); got != n {
		t.Fatalf("%d snapshots after creating %d units", got, n)
	}
	for i := range n / 2 {
		if err := os.Remove(filepath.Join(d.unitsDir, fmt.Sprintf("u%04d.toml", i))); err != nil {
			t.Fatal(err)
		}
	}
	d.ctl(t, "reload")
	if got := d.snapshots(t); got != n/2 {
		t.Fatalf("%d snapshots after deleting %d of %d units", got, n/2, n)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-d.done
	for i := n / 2; i < n; i++ {
		if err := os.Remove(filepath.Join(d.unitsDir, fmt.Sprintf("u%04d.toml", i))); err != nil {
			t.Fatal(err)
		}
	}
	d = startDaemonIn(t, dir, nil)
	d.ctl(t, "reload")
	if got := d.snapshots(t); got != 0 {
		t.Fatalf("%d snapshots after the units were deleted while no daemon ran", got)
	}
}
