package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/clock"
	"github.com/ttis-dev/ttis/daemon/internal/proc"
	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/units"
	"go.uber.org/goleak"
)

// The test binary doubles as the fake server process: with helperEnv set it
// reads its "unit file" (mode, listen address, pid file) and behaves as
// told instead of running tests, like os/exec's helper processes.
const helperEnv = "TTIS_SUPERVISE_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[len(os.Args)-1]))
	}
	goleak.VerifyTestMain(m)
}

// helper runs one fake server. Modes:
//
//	serve        /health 200; exits 0 on SIGTERM
//	never-ready  /health 503; exits 0 on SIGTERM
//	crash        prints to stderr and exits 3 at once
//	exit0        exits 0 at once
//	ignore-term  /health 200; ignores SIGTERM
//	sleep        sleeps (a grandchild in the server's process group)
func helper(unitFile string) int {
	data, err := os.ReadFile(unitFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	f := strings.Fields(string(data))
	mode := f[0]
	switch mode {
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: model failed to load")
		return 3
	case "exit0":
		return 0
	case "sleep":
		time.Sleep(time.Minute)
		return 0
	case "probe-emfile":
		// Run out of descriptors, then probe a healthy server: the
		// probe must fail as the daemon's own failure.
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 32, Max: 32}); err != nil {
			fmt.Println("setrlimit:", err)
			return 2
		}
		for range 64 {
			if _, err := os.Open(os.DevNull); err != nil {
				break
			}
		}
		err := HTTPProbe(context.Background(), f[1])
		fmt.Printf("own=%t err=%v\n", ownFailure(err), err)
		return 0
	case "orphan-pipe":
		// Leave a grandchild holding our output pipe, then exit.
		gc := exec.Command(os.Args[0], "helper", writeFile(filepath.Dir(unitFile), "sleep"))
		gc.Env, gc.Stdout = os.Environ(), os.Stdout
		if err := gc.Start(); err != nil {
			return 2
		}
		if err := os.WriteFile(f[2], []byte(strconv.Itoa(gc.Process.Pid)), 0o600); err != nil {
			return 2
		}
		fmt.Println("bye")
		return 0
	}
	listen, pidFile := f[1], f[2]
	// A grandchild in the same process group, to prove stops reach it.
	gc := exec.Command(os.Args[0], "helper", writeFile(filepath.Dir(unitFile), "sleep"))
	gc.Env = os.Environ()
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(gc.Process.Pid)), 0o600); err != nil {
		return 2
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	status := http.StatusOK
	if mode == "never-ready" {
		status = http.StatusServiceUnavailable
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if mode == "media" {
				w.Header().Set(runtime.HeaderWorkers, "2 workers: 2 alive, 1 ready, 3 restarts, 0 errors")
			}
			w.WriteHeader(status)
		}))
	}()
	fmt.Println("listening on", listen)
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			fmt.Println("reloaded", strings.TrimSpace(mustRead(unitFile)))
			continue
		}
		if mode != "ignore-term" {
			fmt.Println("draining")
			return 0
		}
		fmt.Println("ignoring SIGTERM")
	}
	return 0
}

func mustRead(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func writeFile(dir, content string) string {
	f, err := os.CreateTemp(dir, "helper-*")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	_, _ = f.WriteString(content)
	return f.Name()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// dur is a restart setting as the units package holds it.
func dur(d time.Duration) units.Duration { return units.Duration{Duration: d} }

type fixture struct {
	t       *testing.T
	clk     *clock.Fake
	sup     *Supervisor
	pidFile string
	cancel  context.CancelFunc
}

// newFixture writes a fake unit file for mode and starts a supervisor on it.
func newFixture(t *testing.T, mode string, p units.Restart, opts ...func(*Deps)) *fixture {
	t.Helper()
	dir := t.TempDir()
	listen := freePort(t)
	pidFile := filepath.Join(dir, "grandchild.pid")
	unitFile := filepath.Join(dir, "u.toml")
	if err := os.WriteFile(unitFile, []byte(mode+" "+listen+" "+pidFile), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	deps := Deps{
		Starter:      ExecStarter{Path: os.Args[0], Args: []string{"helper"}, Env: append(os.Environ(), helperEnv+"=1"), LogDir: filepath.Join(dir, "logs"), Poll: 5 * time.Millisecond},
		Clock:        clk,
		PollInterval: 10 * time.Millisecond,
	}
	for _, o := range opts {
		o(&deps)
	}
	sup := New(Spec{Unit: units.Unit{Name: "u", Listen: listen, Restart: p}, UnitFile: unitFile}, deps)
	ctx, cancel := context.WithCancel(context.Background())
	go sup.Run(ctx)
	f := &fixture{t: t, clk: clk, sup: sup, pidFile: pidFile, cancel: cancel}
	t.Cleanup(func() {
		cancel()
		select {
		case <-sup.Done():
		case <-time.After(10 * time.Second):
			t.Error("supervisor did not shut down")
		}
	})
	return f
}

// waitState polls the status until state/sub match, in real time.
func (f *fixture) waitState(state, sub string) Status {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := f.sup.Status()
		if st.State == state && (sub == "" || st.SubState == sub) {
			return st
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("unit state %s (%s), want %s (%s); last error %q", st.State, st.SubState, state, sub, st.LastError)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	f.t.Cleanup(cancel)
	return ctx
}

func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// A zombie has exited; it only waits for a parent to reap it.
	fields := strings.Fields(string(data))
	return len(fields) > 2 && fields[2] == "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 400 {
		if gone(pid) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d still running", pid)
}

func (f *fixture) grandchild() int {
	f.t.Helper()
	for range 400 {
		b, err := os.ReadFile(f.pidFile)
		if err == nil && len(b) > 0 {
			pid, _ := strconv.Atoi(string(b))
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatal("no grandchild pid")
	return 0
}

func TestStartReadyStop(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{StopTimeout: dur(5 * time.Second)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	st := f.waitState(api.StateActive, api.SubRunning)
	if st.PID == 0 {
		t.Fatal("active without a pid")
	}
	gc := f.grandchild()
	if err := f.sup.Stop(f.ctx()); err != nil {
		t.Fatal(err)
	}
	st = f.sup.Status()
	if st.State != api.StateInactive || st.SubState != api.SubDead || st.PID != 0 {
		t.Fatalf("after stop: %+v", st)
	}
	if !strings.Contains(st.LastExit, "status=0") {
		t.Errorf("last exit %q, want a clean exit", st.LastExit)
	}
	waitGone(t, gc)
	var sawDrain bool
	for _, l := range f.sup.Ring().Tail(0) {
		sawDrain = sawDrain || (l.Stream == "stdout" && l.Text == "draining")
	}
	if !sawDrain {
		t.Errorf("child output not captured: %+v", f.sup.Ring().Tail(0))
	}
}

func TestStopEscalatesToSigkill(t *testing.T) {
	f := newFixture(t, "ignore-term", units.Restart{StopTimeout: dur(5 * time.Second)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	pid := f.waitState(api.StateActive, "").PID
	gc := f.grandchild()
	stopped := make(chan error, 1)
	go func() { stopped <- f.sup.Stop(f.ctx()) }()
	f.waitState(api.StateDeactivating, api.SubStopSigterm)
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no stop timer")
	}
	select {
	case <-stopped:
		t.Fatal("stop returned before the stop timeout")
	case <-time.After(50 * time.Millisecond):
	}
	f.clk.Advance(5 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if st := f.sup.Status(); st.LastExit != "code=killed, signal=KILL" {
		t.Fatalf("last exit %q", st.LastExit)
	}
	waitGone(t, pid)
	waitGone(t, gc)
}

func TestCrashBackoffAndStartLimit(t *testing.T) {
	f := newFixture(t, "crash", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), MaxDelay: dur(4 * time.Second), Burst: 4, Interval: dur(time.Minute)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	// Starts at t=0, 1, 3, 7; the restart due at t=11 hits the limit.
	for i, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		st := f.waitState(api.StateActivating, api.SubAutoRestart)
		if st.Restarts != i+1 {
			t.Fatalf("restart %d: counter %d", i+1, st.Restarts)
		}
		if !strings.Contains(st.LastError, "status=3") || !strings.Contains(st.LastError, "boom") {
			t.Fatalf("last error %q lacks exit status and stderr", st.LastError)
		}
		if !f.clk.WaitForTimers(1, 5*time.Second) {
			t.Fatal("no restart timer")
		}
		f.clk.Advance(delay - time.Millisecond)
		if f.clk.Pending() != 1 {
			t.Fatalf("restart %d fired before its %s delay", i+1, delay)
		}
		f.clk.Advance(time.Millisecond)
		if i < 3 {
			// Wait for the new process to come and go.
			f.waitState(api.StateActivating, api.SubAutoRestart)
			for n := 0; f.sup.Status().Restarts == i+1; n++ {
				if n > 5000 {
					t.Fatalf("restart %d never ran", i+2)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
	}
	st := f.waitState(api.StateFailed, api.SubFailed)
	if st.Result != api.ResultStartLimitHit {
		t.Fatalf("result %q, want start-limit-hit", st.Result)
	}
	// A manual restart clears the limit.
	if err := f.sup.Restart(f.ctx()); err != nil {
		t.Fatal(err)
	}
	st = f.waitState(api.StateActivating, api.SubAutoRestart)
	if st.Restarts != 1 {
		t.Fatalf("restart counter %d after manual restart, want 1", st.Restarts)
	}
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		mode, policy   string
		state, sub     string
		result         string
		wantRestartHit bool
	}{
		{mode: "exit0", policy: units.RestartAlways, state: api.StateActivating, sub: api.SubAutoRestart, result: api.ResultSuccess},
		{mode: "exit0", policy: units.RestartOnFailure, state: api.StateInactive, sub: api.SubDead, result: api.ResultSuccess},
		{mode: "crash", policy: units.RestartNo, state: api.StateFailed, sub: api.SubFailed, result: api.ResultExitCode},
		{mode: "crash", policy: units.RestartOnFailure, state: api.StateActivating, sub: api.SubAutoRestart, result: api.ResultExitCode},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.policy, func(t *testing.T) {
			f := newFixture(t, tt.mode, units.Restart{Policy: tt.policy, Delay: dur(time.Hour)})
			if err := f.sup.Start(f.ctx()); err != nil {
				t.Fatal(err)
			}
			st := f.waitState(tt.state, tt.sub)
			if st.Result != tt.result {
				t.Fatalf("result %q, want %q", st.Result, tt.result)
			}
		})
	}
}

func TestReadyTimeoutIsAFailure(t *testing.T) {
	f := newFixture(t, "never-ready", units.Restart{Policy: units.RestartNo, ReadyTimeout: dur(10 * time.Second), StopTimeout: dur(5 * time.Second)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	f.waitState(api.StateActivating, api.SubStart)
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no ready timer")
	}
	f.clk.Advance(10 * time.Second)
	st := f.waitState(api.StateFailed, api.SubFailed)
	if st.Result != api.ResultTimeout || !strings.Contains(st.LastError, "not ready") {
		t.Fatalf("status %+v", st)
	}
}

func TestReadyTimeoutIsStallTimeout(t *testing.T) {
	f := newFixture(t, "never-ready", units.Restart{Policy: units.RestartNo, ReadyTimeout: dur(10 * time.Second), StopTimeout: dur(5 * time.Second)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	f.waitState(api.StateActivating, api.SubStart)
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no ready timer")
	}
	f.clk.Advance(6 * time.Second)
	f.sup.markOutput() // load progress at t=6s
	f.clk.Advance(4 * time.Second)
	// The deadline moved to t=16s.
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("ready timer not re-armed")
	}
	if st := f.sup.Status(); st.State != api.StateActivating {
		t.Fatalf("timed out despite progress: %+v", st)
	}
	f.clk.Advance(6 * time.Second)
	f.waitState(api.StateFailed, api.SubFailed)
}

func TestUpdateRestartsWithNewSpec(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{StopTimeout: dur(5 * time.Second)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	old := f.waitState(api.StateActive, "")
	spec := old.Spec
	spec.Hash = "v2"
	if err := f.sup.Update(f.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	st := f.waitState(api.StateActive, "")
	if st.PID == old.PID || st.Spec.Hash != "v2" {
		t.Fatalf("update did not restart: old pid %d, new %+v", old.PID, st)
	}
	waitGone(t, old.PID)
}

func TestResetBeforeAutomaticRestart(t *testing.T) {
	var resets atomic.Int32
	f := newFixture(t, "crash", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), ResetDevice: true}, func(d *Deps) {
		d.Reset = func(_ context.Context, chips []int) error {
			if len(chips) != 1 || chips[0] != 3 {
				return fmt.Errorf("chips %v", chips)
			}
			resets.Add(1)
			return errors.New("tt-smi: no such device")
		}
	})
	spec := f.sup.Status().Spec
	spec.Chips = []int{3}
	if err := f.sup.Update(f.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	f.waitState(api.StateActivating, api.SubAutoRestart)
	if resets.Load() != 0 {
		t.Fatal("reset before the first start")
	}
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no restart timer")
	}
	f.clk.Advance(time.Second)
	for i := 0; resets.Load() == 0 && i < 2000; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if resets.Load() != 1 {
		t.Fatalf("resets = %d, want 1", resets.Load())
	}
	var logged bool
	for _, l := range f.sup.Ring().Tail(0) {
		logged = logged || strings.Contains(l.Text, "no such device")
	}
	if !logged {
		t.Error("reset failure not in the unit log")
	}
}

func TestStartFailure(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartNo}, func(d *Deps) {
		d.Starter = ExecStarter{Path: filepath.Join(t.TempDir(), "missing")}
	})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	st := f.waitState(api.StateFailed, "")
	if st.Result != api.ResultResources || !strings.Contains(st.LastError, "start failed") {
		t.Fatalf("status %+v", st)
	}
}

// A grandchild that keeps the output file open must not hold up the exit
// handling, and is killed with the process group.
func TestGrandchildHoldingOutput(t *testing.T) {
	f := newFixture(t, "orphan-pipe", units.Restart{Policy: units.RestartNo})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	st := f.waitState(api.StateInactive, api.SubDead)
	if st.LastExit != "code=exited, status=0" {
		t.Fatalf("last exit %q", st.LastExit)
	}
	waitGone(t, f.grandchild())
	var sawBye bool
	for _, l := range f.sup.Ring().Tail(0) {
		sawBye = sawBye || l.Text == "bye"
	}
	if !sawBye {
		t.Error("output before the exit was lost")
	}
}

func TestHungServerIsRestarted(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), StopTimeout: dur(5 * time.Second)}, func(d *Deps) {
		d.LiveInterval, d.LiveTimeout, d.LiveFailures = 20*time.Millisecond, 100*time.Millisecond, 2
	})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	pid := f.waitState(api.StateActive, "").PID
	// A stopped process keeps its socket but answers nothing, like a
	// server stuck on a hung device.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	st := f.waitState(api.StateActivating, api.SubAutoRestart)
	if st.Result != api.ResultWatchdog || !strings.Contains(st.LastError, "stopped answering /health") {
		t.Fatalf("status %+v", st)
	}
	// SIGCONT came with SIGTERM: the server drained and exited cleanly.
	if st.LastExit != "code=exited, status=0" {
		t.Fatalf("last exit %q", st.LastExit)
	}
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no restart timer")
	}
	f.clk.Advance(time.Second)
	if st := f.waitState(api.StateActive, ""); st.PID == pid || st.Restarts != 1 {
		t.Fatalf("after restart %+v", st)
	}
}

// TestWorkersFromHealth: a media server's worker summary in /health's
// Ttis-Workers header reaches the unit's status and its log.
func TestWorkersFromHealth(t *testing.T) {
	f := newFixture(t, "media", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), StopTimeout: dur(5 * time.Second)}, func(d *Deps) {
		d.LiveInterval, d.LiveTimeout = 20*time.Millisecond, time.Second
	})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	f.waitState(api.StateActive, "")
	want := "2 workers: 2 alive, 1 ready, 3 restarts, 0 errors"
	deadline := time.Now().Add(10 * time.Second)
	for f.sup.Status().Workers != want {
		if time.Now().After(deadline) {
			t.Fatalf("status workers %q, want %q", f.sup.Status().Workers, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var noted bool
	for _, l := range f.sup.Ring().Tail(0) {
		noted = noted || l.Text == "Workers: "+want
	}
	if !noted {
		t.Error("the workers are not in the unit's log")
	}
}

func TestExitClassification(t *testing.T) {
	tests := []struct {
		exit  Exit
		clean bool
		str   string
	}{
		{Exit{}, true, "code=exited, status=0"},
		{Exit{Code: 1}, false, "code=exited, status=1"},
		{Exit{Signal: syscall.SIGTERM}, true, "code=killed, signal=TERM"},
		{Exit{Signal: syscall.SIGKILL}, false, "code=killed, signal=KILL"},
		{Exit{Signal: syscall.SIGSEGV}, false, "code=killed, signal=SEGV"},
		{Exit{Err: errors.New("x")}, false, "wait failed: x"},
	}
	for _, tt := range tests {
		if tt.exit.Clean() != tt.clean || tt.exit.String() != tt.str {
			t.Errorf("%+v: clean %v %q, want %v %q", tt.exit, tt.exit.Clean(), tt.exit.String(), tt.clean, tt.str)
		}
	}
}

func TestScrubEnv(t *testing.T) {
	got := scrub([]string{"PATH=/bin", "NOTIFY_SOCKET=/run/x", "WATCHDOG_USEC=1", "LISTEN_FDS=3", "HOME=/h"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/h" {
		t.Fatalf("scrub = %v", got)
	}
}

func TestHTTPProbeBadAddress(t *testing.T) {
	if err := HTTPProbe(context.Background(), "no-port"); err == nil {
		t.Fatal("probe of an address without port succeeded")
	}
}

// ringHas waits until a ring line contains text.
func (f *fixture) ringHas(text string) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range f.sup.Ring().Tail(0) {
			if strings.Contains(l.Text, text) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("no log line contains %q: %+v", text, f.sup.Ring().Tail(0))
}

// A daemon-side edit never touches the process; a live edit reaches it as
// SIGHUP, and the server keeps its pid.
func TestRetuneAndReloadKeepTheProcess(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{StopTimeout: dur(5 * time.Second)})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	old := f.waitState(api.StateActive, "")
	spec := old.Spec
	spec.Restart.Policy = units.RestartAlways
	if err := f.sup.Retune(f.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	if st := f.sup.Status(); st.PID != old.PID || st.State != api.StateActive || st.Spec.Restart.Policy != units.RestartAlways {
		t.Fatalf("after retune %+v", st)
	}
	spec.Hash = "v2"
	if err := f.sup.Reload(f.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	f.ringHas("reloaded serve")
	if st := f.sup.Status(); st.PID != old.PID || st.State != api.StateActive || st.Spec.Hash != "v2" {
		t.Fatalf("after reload %+v", st)
	}
}

// A server an earlier daemon started is adopted: its output (also what it
// printed while no daemon ran) reaches the ring, a live reload reaches it,
// and its exit, seen without being its parent, applies the restart policy.
func TestAdoptServerOfEarlierDaemon(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), StopTimeout: dur(5 * time.Second)})
	st := f.sup.Status()
	starter := f.sup.deps.Starter.(ExecStarter)
	// The "earlier daemon": start the server the way ExecStarter does.
	if err := os.MkdirAll(starter.LogDir, 0o750); err != nil {
		t.Fatal(err)
	}
	outPath, errPath := starter.OutputFiles("u")
	var files []*os.File
	for _, p := range []string{outPath, errPath} {
		fl, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		defer fl.Close()
		files = append(files, fl)
	}
	cmd := exec.Command(starter.Path, "helper", st.Spec.UnitFile)
	cmd.Env, cmd.Stdout, cmd.Stderr = starter.Env, files[0], files[1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(reaped)
	}()
	for !healthyAt(st.Spec.Listen) {
		time.Sleep(5 * time.Millisecond)
	}
	start, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	// The fixture's supervisor already runs; adopt with a fresh one.
	f.cancel()
	<-f.sup.Done()
	sup := New(st.Spec, f.sup.deps)
	if err := sup.Adopt(cmd.Process.Pid, start, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go sup.Run(ctx)
	defer func() {
		cancel()
		<-sup.Done()
	}()
	f.sup = sup
	if got := sup.Status(); got.State != api.StateActive || got.PID != cmd.Process.Pid || !got.Adopted {
		t.Fatalf("adopted %+v", got)
	}
	f.ringHas("listening on")
	if err := sup.Reload(f.ctx(), st.Spec); err != nil {
		t.Fatal(err)
	}
	f.ringHas("reloaded serve")

	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-reaped
	got := f.waitState(api.StateActivating, api.SubAutoRestart)
	if got.LastExit != "code=unknown (adopted process)" || got.Adopted || got.RestartsTotal != 1 {
		t.Fatalf("after the adopted server died %+v", got)
	}
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no restart timer")
	}
	f.clk.Advance(time.Second)
	if got := f.waitState(api.StateActive, ""); got.PID == cmd.Process.Pid || got.Adopted {
		t.Fatalf("after restart %+v", got)
	}
}

func healthyAt(listen string) bool { return HTTPProbe(context.Background(), listen) == nil }

// probeSwitch is a probe whose outcome the test sets: the real HTTP probe,
// the daemon's own failure (a socket it could not open), or the server's
// failure (an error answer).
type probeSwitch struct {
	mode  atomic.Int32
	calls atomic.Int64
}

const (
	probeReal = iota
	probeOwn
	probeServer
)

func (p *probeSwitch) probe(ctx context.Context, listen string) error {
	p.calls.Add(1)
	switch p.mode.Load() {
	case probeOwn:
		return &url.Error{Op: "Get", URL: "http://" + listen + "/health", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}}
	case probeServer:
		return errors.New("health answered 500 Internal Server Error")
	}
	return HTTPProbe(ctx, listen)
}

// waitCalls waits until n more probes have run.
func (p *probeSwitch) waitCalls(t *testing.T, n int64) {
	t.Helper()
	want := p.calls.Load() + n
	for range 2000 {
		if p.calls.Load() >= want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("probes did not run: %d of %d", p.calls.Load(), want)
}

func (f *fixture) notes(text string) int {
	n := 0
	for _, l := range f.sup.Ring().Tail(0) {
		if l.Stream == "ttisd" && strings.Contains(l.Text, text) {
			n++
		}
	}
	return n
}

// A probe the daemon could not make (out of descriptors) never counts
// against the server, however many fail, and the episode is noted once; a
// failure of the server's own still restarts it.
func TestOwnProbeFailuresAreNotTheServers(t *testing.T) {
	var p probeSwitch
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), StopTimeout: dur(5 * time.Second)}, func(d *Deps) {
		d.Probe = p.probe
		d.LiveInterval, d.LiveTimeout, d.LiveFailures = 5*time.Millisecond, time.Second, 2
	})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	before := f.waitState(api.StateActive, "")
	p.mode.Store(probeOwn)
	p.waitCalls(t, 20) // ten times LiveFailures
	f.ringHas("Cannot probe /health")
	p.mode.Store(probeReal)
	f.ringHas("Probing /health again.")
	st := f.sup.Status()
	if st.State != api.StateActive || st.PID != before.PID || st.RestartsTotal != 0 || st.Result != before.Result {
		t.Fatalf("after own probe failures: %+v", st)
	}
	if n := f.notes("Cannot probe /health"); n != 1 {
		t.Errorf("the episode was noted %d times, want once", n)
	}
	if n := f.notes("Health check failed"); n != 0 {
		t.Errorf("%d own probe failures were counted as health check failures", n)
	}

	p.mode.Store(probeServer)
	st = f.waitState(api.StateActivating, api.SubAutoRestart)
	if st.Result != api.ResultWatchdog || st.RestartsTotal != 1 {
		t.Fatalf("a server answering errors was not restarted: %+v", st)
	}
}

// While the daemon cannot probe, a loading server's ready timeout does not
// run out; it counts again from the first probe that reaches the server.
func TestOwnProbeFailuresHoldTheReadyTimeout(t *testing.T) {
	var p probeSwitch
	p.mode.Store(probeOwn)
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartNo, ReadyTimeout: dur(10 * time.Second), StopTimeout: dur(5 * time.Second)}, func(d *Deps) {
		d.Probe = p.probe
	})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	f.waitState(api.StateActivating, api.SubStart)
	f.ringHas("Cannot probe /health")
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("no ready timer")
	}
	f.clk.Advance(10 * time.Second)
	// The deadline passed while blind: the timer is armed again.
	if !f.clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("ready timer not re-armed")
	}
	if st := f.sup.Status(); st.State != api.StateActivating {
		t.Fatalf("timed out while the daemon could not probe: %+v", st)
	}
	// Probes reach the server again at t=10s, and it answers errors: the
	// timeout runs out 10s later, not before.
	p.mode.Store(probeServer)
	f.ringHas("Probing /health again.")
	f.clk.Advance(10*time.Second - time.Millisecond)
	if f.clk.Pending() != 1 {
		t.Fatal("ready timeout fired before 10s of probes reaching the server")
	}
	f.clk.Advance(time.Millisecond)
	st := f.waitState(api.StateFailed, api.SubFailed)
	if st.Result != api.ResultTimeout {
		t.Fatalf("status %+v", st)
	}
}

// ownFailingStarter fails its first fails starts as a daemon out of
// descriptors does, then starts for real.
type ownFailingStarter struct {
	Starter
	fails atomic.Int32
}

func (s *ownFailingStarter) Start(spec Spec, stdout, stderr io.Writer) (Process, error) {
	if s.fails.Add(-1) >= 0 {
		return nil, fmt.Errorf("server output: %w", &fs.PathError{Op: "open", Path: "/state/server-output/u.stdout", Err: syscall.EMFILE})
	}
	return s.Starter.Start(spec, stdout, stderr)
}

// Starts that fail for want of the daemon's descriptors are retried and
// never count against the start limit: more of them than the limit allows
// still end with the server running and no restart counted.
func TestOwnStartFailuresAreNotCounted(t *testing.T) {
	var starter *ownFailingStarter
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartOnFailure, Delay: dur(time.Second), Burst: 2, Interval: dur(time.Minute), StopTimeout: dur(5 * time.Second)}, func(d *Deps) {
		starter = &ownFailingStarter{Starter: d.Starter}
		starter.fails.Store(5)
		d.Starter = starter
	})
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		st := f.waitState(api.StateActivating, api.SubAutoRestart)
		if !strings.Contains(st.LastError, "too many open files") {
			t.Fatalf("last error %q", st.LastError)
		}
		if !f.clk.WaitForTimers(1, 5*time.Second) {
			t.Fatal("no retry timer")
		}
		f.clk.Advance(time.Second)
	}
	st := f.waitState(api.StateActive, api.SubRunning)
	if st.Restarts != 0 || st.RestartsTotal != 0 {
		t.Fatalf("own start failures counted as restarts: %+v", st)
	}
	if n := f.notes("cannot start the server"); n != 1 {
		t.Errorf("the episode was noted %d times, want once", n)
	}
}

// A real probe out of descriptors is the daemon's own failure; a refused
// connection is the server's.
func TestOwnFailureOfRealProbe(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	unitFile := filepath.Join(dir, "u.toml")
	if err := os.WriteFile(unitFile, []byte("probe-emfile "+ln.Addr().String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "helper", unitFile)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "own=true") || !strings.Contains(string(out), "too many open files") {
		t.Fatalf("probe without descriptors: %v\n%s", err, out)
	}
	if err := HTTPProbe(context.Background(), freePort(t)); err == nil || ownFailure(err) {
		t.Fatalf("a refused connection counted as the daemon's own failure: %v", err)
	}
}

// A start the pre-start checks refuse fails the unit with the reason: no
// process, no restart scheduled, however long one waits (a retry would
// fail the same way). Once the operator fixes the host, a start works.
func TestPreStartCheckRefusesTheStart(t *testing.T) {
	f := newFixture(t, "serve", units.Restart{Policy: units.RestartAlways, StopTimeout: dur(5 * time.Second)})
	var failing atomic.Bool
	failing.Store(true)
	spec := f.sup.Status().Spec
	spec.Check = func() error {
		if failing.Load() {
			return errors.New("/etc/ttis/u.toml:7:1: auth.secret_file: secret file /etc/ttis/key is empty")
		}
		return nil
	}
	if err := f.sup.Update(f.ctx(), spec); err != nil {
		t.Fatal(err)
	}
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	st := f.waitState(api.StateFailed, api.SubFailed)
	if st.Result != api.ResultPreStart || st.PID != 0 || st.RestartsTotal != 0 ||
		!strings.Contains(st.LastError, "pre-start check failed: /etc/ttis/u.toml:7:1: auth.secret_file: secret file /etc/ttis/key is empty") ||
		!strings.Contains(st.LastError, `ttisctl start u`) {
		t.Fatalf("status %+v", st)
	}
	f.clk.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	if st := f.sup.Status(); st.State != api.StateFailed || st.RestartsTotal != 0 || st.Restarts != 0 {
		t.Fatalf("after an hour: %+v", st)
	}
	failing.Store(false)
	if err := f.sup.Start(f.ctx()); err != nil {
		t.Fatal(err)
	}
	f.waitState(api.StateActive, api.SubRunning)
	if err := f.sup.Stop(f.ctx()); err != nil {
		t.Fatal(err)
	}
}
