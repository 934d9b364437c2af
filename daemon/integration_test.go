package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/api/client"
)

// The integration tests run the real binaries, built once in TestMain.
var ttisdBin, ttisctlBin string

// TestMain builds the binaries, then runs the tests and fails them when
// a goroutine outlives them (a daemon's log reader, a client's follower).
func TestMain(m *testing.M) {
	var err error
	if ttisdBin, err = testbin.Build("ttisd", raceEnabled); err == nil {
		ttisctlBin, err = testbin.Build("ttisctl", raceEnabled)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}

// daemon is one running ttisd with private folders.
type daemon struct {
	t        *testing.T
	dir      string
	unitsDir string
	devDir   string
	socket   string
	cmd      *exec.Cmd
	// done is closed once the daemon has exited; exitErr is its status.
	done    chan struct{}
	exitErr error
	cl      *client.Client
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// simUnit is a sim unit that starts at once; extra is appended verbatim.
func simUnit(listen, extra string) string {
	return fmt.Sprintf(`model = "Llama-3.1-8B-Instruct"
device = "n150"
runtime = "sim"
listen = %q
%s
[sim]
time_scale = 0
`, listen, extra)
}

const fastRestart = `
[restart]
policy = "on-failure"
delay = "100ms"
max_delay = "400ms"
burst = 3
interval = "1m"
stop_timeout = "5s"
`

func startDaemon(t testing.TB, units map[string]string, args ...string) *daemon {
	t.Helper()
	return startDaemonIn(t, t.TempDir(), units, args...)
}

// startDaemonIn is startDaemon in a given folder, whose units/ may already
// hold files the test placed there.
func startDaemonIn(t testing.TB, dir string, units map[string]string, args ...string) *daemon {
	t.Helper()
	return startDaemonWrapped(t, dir, units, nil, args...)
}

// startDaemonWrapped is startDaemonIn with the command changed by wrap
// (run under `ulimit`, say) when wrap is not nil.
func startDaemonWrapped(t testing.TB, dir string, units map[string]string, wrap func(*exec.Cmd) *exec.Cmd, args ...string) *daemon {
	t.Helper()
	d := &daemon{
		dir:      dir,
		unitsDir: filepath.Join(dir, "units"),
		devDir:   filepath.Join(dir, "dev"),
		// Short path: sun_path is limited to 108 bytes.
		socket: filepath.Join(dir, "s.sock"),
		done:   make(chan struct{}),
	}
	if tt, ok := t.(*testing.T); ok {
		d.t = tt
	}
	for _, p := range []string{d.unitsDir, d.devDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range units {
		d.write(t, name, text)
	}
	d.cmd = d.command(args...)
	if wrap != nil {
		d.cmd = wrap(d.cmd)
	}
	logf, err := os.Create(filepath.Join(dir, "ttisd.log"))
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		logf.Close()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done: // the test stopped it
		default:
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.done:
				err := d.exitErr
				// Non-zero is a failed shutdown, or a data race found by
				// a -race build (exit 66).
				if err != nil {
					t.Errorf("ttisd exit after SIGTERM: %v", err)
				}
			case <-time.After(20 * time.Second):
				_ = d.cmd.Process.Kill()
				t.Error("ttisd did not exit within 20s of SIGTERM")
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "ttisd.log"))
			t.Logf("ttisd log:\n%s", b)
		}
	})
	d.cl = client.New(d.socket)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := d.cl.Info(context.Background()); err == nil {
			break
		}
		select {
		case <-d.done:
			b, _ := os.ReadFile(filepath.Join(dir, "ttisd.log"))
			t.Fatalf("ttisd exited at start: %v\n%s", d.exitErr, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("ttisd socket did not answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return d
}

func (d *daemon) command(args ...string) *exec.Cmd {
	base := []string{"--units-dir", d.unitsDir, "--state-dir", filepath.Join(d.dir, "state"), "--socket", d.socket,
		"--device-root", d.devDir, "--log-format", "json", "--socket-group", ""}
	return exec.Command(ttisdBin, append(base, args...)...)
}

func (d *daemon) write(t testing.TB, name, text string) {
	t.Helper()
	// Write to a temporary name and rename, as editors and config tools do.
	tmp := filepath.Join(d.unitsDir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.unitsDir, name+".toml")); err != nil {
		t.Fatal(err)
	}
}

func (d *daemon) unit(t testing.TB, name string) api.UnitDetail {
	t.Helper()
	u, err := d.cl.Unit(context.Background(), name, 20)
	if err != nil {
		t.Fatalf("unit %s: %v", name, err)
	}
	return u
}

// waitUnit polls until ok(unit) holds, for up to 20s.
func (d *daemon) waitUnit(t testing.TB, name string, what string, ok func(api.UnitDetail) bool) api.UnitDetail {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		u, err := d.cl.Unit(context.Background(), name, 20)
		if err == nil && ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("unit %s: not %s: %+v (err %v)", name, what, u, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func active(u api.UnitDetail) bool { return u.State == api.StateActive }

func (d *daemon) ctl(t testing.TB, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(ttisctlBin, append([]string{"--socket", d.socket}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func healthy(listen string) bool {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + listen + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] == "Z"
}

func waitGone(t testing.TB, pid int) {
	t.Helper()
	for range 1000 {
		if gone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still running", pid)
}

func TestEditBreakFixDelete(t *testing.T) {
	listen := freePort(t)
	d := startDaemon(t, map[string]string{"a": simUnit(listen, "")})
	u := d.waitUnit(t, "a", "active", active)
	if !healthy(listen) {
		t.Fatal("active unit's server is not healthy")
	}
	first := u.PID

	// A daemon-side edit: the new text, the same server.
	d.write(t, "a", simUnit(listen, `description = "edited"`))
	u = d.waitUnit(t, "a", "edited", func(u api.UnitDetail) bool { return active(u) && u.Description == "edited" })
	if u.PID != first || u.LastChange == nil || u.LastChange.Action != api.ChangeRetune {
		t.Fatalf("a description edit touched the server: %+v", u)
	}
	// A server-shaping edit: restarted with the new text.
	d.write(t, "a", strings.Replace(simUnit(listen, `description = "edited"`), "time_scale = 0", "time_scale = 0\nseed = 7", 1))
	// The old server shows the new text until it is stopped: wait for a
	// new, ready process.
	u = d.waitUnit(t, "a", "restarted", func(u api.UnitDetail) bool { return active(u) && u.PID != first })
	waitGone(t, first)
	if u.LastChange == nil || u.LastChange.Action != api.ChangeRestart || strings.Join(u.LastChange.Fields, ",") != "sim" {
		t.Fatalf("last change %+v", u.LastChange)
	}
	second := u.PID

	// Break: the old server keeps serving and the error has line:col.
	d.write(t, "a", simUnit(listen, `description = "x"`+"\nmax_tokens = 3"))
	u = d.waitUnit(t, "a", "stale", func(u api.UnitDetail) bool { return u.LoadState == api.LoadStale })
	if u.PID != second || !active(u) || !healthy(listen) {
		t.Fatalf("broken file disturbed the server: %+v", u)
	}
	if !strings.Contains(u.Detail, "using last good version from") || !strings.Contains(u.Detail, "a.toml:6:1") {
		t.Fatalf("detail %q lacks the last-good note or the position", u.Detail)
	}
	out, code := d.ctl(t, "status", "a")
	if code != 0 || !strings.Contains(out, "a.toml:6:1") {
		t.Fatalf("status a: exit %d\n%s", code, out)
	}
	// A crash while the file is broken restarts the last good version.
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	u = d.waitUnit(t, "a", "restarted", func(u api.UnitDetail) bool { return active(u) && u.PID != second })
	if u.LoadState != api.LoadStale || u.Description != "edited" || u.Restarts != 1 {
		t.Fatalf("restart while broken: %+v", u)
	}
	second = u.PID

	// Fix: back to the first seed, restarted once more.
	d.write(t, "a", simUnit(listen, `description = "fixed"`))
	u = d.waitUnit(t, "a", "fixed", func(u api.UnitDetail) bool {
		return active(u) && u.Description == "fixed" && u.LoadState == api.LoadLoaded && u.PID != second
	})
	waitGone(t, second)

	// Delete: stopped.
	if err := os.Remove(filepath.Join(d.unitsDir, "a.toml")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := d.cl.Unit(context.Background(), "a", 0)
		if client.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted unit still listed (err %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitGone(t, u.PID)
	// The files go once the supervisor has ended, just after the process.
	for _, f := range []string{"unit-snapshots/a.toml", "server-output/a.stdout", "server-output/a.stderr", "server-output/a.stderr.offset"} {
		for i := 0; ; i++ {
			_, err := os.Stat(filepath.Join(d.dir, "state", f))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if i > 1000 {
				t.Fatalf("%s of a deleted unit left behind: %v", f, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, code := d.ctl(t, "status", "a"); code != 4 {
		t.Fatalf("status of a deleted unit: exit %d, want 4", code)
	}
}

func TestKilledChildIsRestarted(t *testing.T) {
	listen := freePort(t)
	d := startDaemon(t, map[string]string{"a": simUnit(listen, fastRestart)})
	u := d.waitUnit(t, "a", "active", active)
	if err := syscall.Kill(u.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	u2 := d.waitUnit(t, "a", "restarted", func(n api.UnitDetail) bool { return active(n) && n.PID != u.PID })
	if u2.Restarts != 1 || !strings.Contains(u2.LastExit, "signal=KILL") {
		t.Fatalf("after kill -9: restarts %d, last exit %q", u2.Restarts, u2.LastExit)
	}
}

func TestCrashLoopFailsThenRestart(t *testing.T) {
	// The port is taken, so every server exits at once.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := taken.Addr().String()
	d := startDaemon(t, map[string]string{"loop": simUnit(listen, fastRestart)})
	u := d.waitUnit(t, "loop", "failed", func(u api.UnitDetail) bool { return u.State == api.StateFailed })
	if u.Result != api.ResultStartLimitHit || u.Restarts != 3 {
		t.Fatalf("crash loop: result %q, restarts %d", u.Result, u.Restarts)
	}
	if !strings.Contains(u.LastError, "start limit") {
		t.Fatalf("last error %q", u.LastError)
	}
	out, code := d.ctl(t, "status", "loop")
	if code != 3 || !strings.Contains(out, "start-limit-hit") || !strings.Contains(out, "address already in use") {
		t.Fatalf("status loop: exit %d\n%s", code, out)
	}
	// Free the port; a manual restart clears the failed state.
	taken.Close()
	if out, code := d.ctl(t, "restart", "--wait", "20s", "loop"); code != 0 {
		t.Fatalf("restart: exit %d\n%s", code, out)
	}
}

func TestChipClaimedTwice(t *testing.T) {
	units := map[string]string{
		"a": simUnit(freePort(t), "chips = [0]"),
		"b": simUnit(freePort(t), "chips = [0]"),
	}
	d := startDaemon(t, units)
	if err := os.WriteFile(filepath.Join(d.devDir, "0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d.waitUnit(t, "a", "active", active)
	b := d.unit(t, "b")
	if b.LoadState != api.LoadError || !strings.Contains(b.LastError, "chip 0 already claimed by unit a") || b.PID != 0 {
		t.Fatalf("second unit on chip 0: %+v", b)
	}
	out, code := d.ctl(t, "devices")
	if code != 0 || !strings.Contains(out, "a") || !strings.Contains(out, filepath.Join(d.devDir, "0")) {
		t.Fatalf("devices: exit %d\n%s", code, out)
	}
	out, code = d.ctl(t, "--output", "json", "status")
	if code != 0 || !strings.Contains(out, "chip 0 already claimed by unit a") {
		t.Fatalf("status json: exit %d\n%s", code, out)
	}
}

func TestSIGTERMStopsEveryUnit(t *testing.T) {
	d := startDaemon(t, map[string]string{
		"a": simUnit(freePort(t), ""),
		"b": simUnit(freePort(t), ""),
	})
	pa := d.waitUnit(t, "a", "active", active).PID
	pb := d.waitUnit(t, "b", "active", active).PID
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		if err := d.exitErr; err != nil {
			t.Fatalf("ttisd exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ttisd did not exit after SIGTERM")
	}
	for _, pid := range []int{pa, pb} {
		if !gone(pid) {
			t.Errorf("server %d outlived the daemon", pid)
		}
	}
	if _, err := os.Stat(d.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
	if _, code := d.ctl(t, "status"); code != 69 {
		t.Fatalf("status without a daemon: exit %d, want 69", code)
	}
}

func TestSocketInUseAndStale(t *testing.T) {
	d := startDaemon(t, nil)
	// A second daemon on the same socket must refuse to start.
	second := d.command()
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another ttisd is running") {
		t.Fatalf("second daemon: %v\n%s", err, out)
	}
	if _, err := d.cl.Info(context.Background()); err != nil {
		t.Fatalf("first daemon disturbed: %v", err)
	}

	// A stale socket file (nobody listening) is replaced.
	dir := t.TempDir()
	stale := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	units := filepath.Join(dir, "units")
	cmd := exec.Command(ttisdBin, "--units-dir", units, "--state-dir", filepath.Join(dir, "state"), "--socket", stale, "--socket-group", "", "--log-format", "json")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	cl := client.New(stale)
	for i := 0; ; i++ {
		info, err := cl.Info(context.Background())
		if err == nil {
			if info.UnitsDir != units {
				t.Fatalf("info %+v", info)
			}
			break
		}
		if i > 1500 {
			t.Fatalf("daemon on a stale socket: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The units folder does not exist: an error, not a crash.
	l, err := cl.Units(context.Background())
	if err != nil || len(l.Errors) != 1 {
		t.Fatalf("missing units folder: %+v %v", l, err)
	}
}

func TestCtlUsageAndJSON(t *testing.T) {
	listen := freePort(t)
	d := startDaemon(t, map[string]string{"a": simUnit(listen, "")})
	d.waitUnit(t, "a", "active", active)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status"}, 0, "LAST ERROR"},
		{[]string{"status", "a"}, 0, "active (running)"},
		{[]string{"status", "a", "-o", "json"}, 0, `"state": "active"`},
		{[]string{"status", "a", "--lines=2", "--output", "json"}, 0, `"state": "active"`},
		{[]string{"status", "--", "-o"}, 4, "not found"},
		{[]string{"status", "a", "--bogus"}, 2, "ttisctl status: flag provided but not defined: -bogus"},
		{[]string{"-o", "json", "status", "a"}, 0, `"state": "active"`},
		{[]string{"status", "nope"}, 4, "not found"},
		{[]string{"start"}, 2, "want UNIT"},
		{[]string{"logs", "-n", "5", "a"}, 0, "[ttisd] Server is ready."},
		{[]string{"-o", "yaml", "status"}, 2, "want table or json"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"reload"}, 0, "1 units"},
		{[]string{"stop", "a"}, 0, ""},
		{[]string{"status", "a"}, 3, "inactive (dead)"},
		{[]string{"start", "--wait", "20s", "a"}, 0, ""},
		{[]string{"restart", "nope"}, 4, "no such unit"},
	}
	for _, tt := range tests {
		out, code := d.ctl(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("ttisctl %s: exit %d, want %d; output:\n%s", strings.Join(tt.args, " "), code, tt.code, out)
		}
	}
}

func TestFolderDeletedAndRecreated(t *testing.T) {
	listen := freePort(t)
	text := simUnit(listen, "")
	d := startDaemon(t, map[string]string{"a": text}, "--rescan-interval", "1h")
	pid := d.waitUnit(t, "a", "active", active).PID
	if err := os.RemoveAll(d.unitsDir); err != nil {
		t.Fatal(err)
	}
	var list api.UnitList
	for i := 0; ; i++ {
		var err error
		if list, err = d.cl.Units(context.Background()); err == nil && len(list.Errors) == 1 {
			break
		}
		if i > 2000 {
			t.Fatalf("no folder error reported: %+v", list)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(list.Units) != 1 || list.Units[0].PID != pid || !active(api.UnitDetail{Unit: list.Units[0]}) {
		t.Fatalf("deleting the folder disturbed the unit: %+v", list)
	}
	out, code := d.ctl(t, "status")
	if code != 0 || !strings.Contains(out, "running units keep running") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	// Re-created as a ConfigMap mount: a.toml -> ..data/a.toml, ..data -> ..v1.
	if err := os.MkdirAll(filepath.Join(d.unitsDir, "..v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.unitsDir, "..v1", "a.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"..v1", "..data"}, {"..data/a.toml", "a.toml"}} {
		if err := os.Symlink(l[0], filepath.Join(d.unitsDir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		if l, err := d.cl.Units(context.Background()); err == nil && len(l.Errors) == 0 {
			break
		}
		if i > 2000 {
			t.Fatal("folder error not cleared after the folder came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if u := d.unit(t, "a"); u.PID != pid {
		t.Fatalf("same text restarted the unit: pid %d -> %d", pid, u.PID)
	}
	// A ConfigMap update swaps ..data; no event names a.toml.
	if err := os.MkdirAll(filepath.Join(d.unitsDir, "..v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.unitsDir, "..v2", "a.toml"), []byte(simUnit(listen, `description = "v2"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..v2", filepath.Join(d.unitsDir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(d.unitsDir, "..data_tmp"), filepath.Join(d.unitsDir, "..data")); err != nil {
		t.Fatal(err)
	}
	d.waitUnit(t, "a", "updated from the ConfigMap", func(u api.UnitDetail) bool { return active(u) && u.Description == "v2" })
}

// notifySocket listens like systemd's notify socket and collects messages.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "n.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			select {
			case msgs <- string(buf[:n]):
			default:
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return path, msgs
}

func waitMsg(t *testing.T, msgs <-chan string, prefix string) string {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case m := <-msgs:
			if strings.HasPrefix(m, prefix) {
				return m
			}
		case <-timeout:
			t.Fatalf("no sd_notify message %q", prefix)
			return ""
		}
	}
}

func TestSystemdNotifyWatchdogAndSIGHUP(t *testing.T) {
	sock, msgs := notifySocket(t)
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000")
	d := startDaemon(t, map[string]string{"a": simUnit(freePort(t), "")})
	if m := waitMsg(t, msgs, "READY=1"); !strings.Contains(m, "STATUS=1 units") {
		t.Fatalf("ready message %q", m)
	}
	waitMsg(t, msgs, "WATCHDOG=1")
	u := d.waitUnit(t, "a", "active", active)
	// The server must not inherit systemd's per-service variables.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", u.PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range strings.Split(string(env), "\x00") {
		if strings.HasPrefix(v, "NOTIFY_SOCKET=") || strings.HasPrefix(v, "WATCHDOG_USEC=") {
			t.Fatalf("server inherited %s", v)
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if m := waitMsg(t, msgs, "RELOADING=1"); !strings.Contains(m, "MONOTONIC_USEC=") {
		t.Fatalf("reloading message %q", m)
	}
	waitMsg(t, msgs, "READY=1")
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitMsg(t, msgs, "STOPPING=1")
	<-d.done
	if err := d.exitErr; err != nil {
		t.Fatalf("exit: %v", err)
	}
	waitGone(t, u.PID)
}

// Every kind of bad unit is reported with its place and reason, and none
// disturbs a good unit.
func TestBadUnitsDoNotDisturbOthers(t *testing.T) {
	listen := freePort(t)
	units := map[string]string{
		"good":        simUnit(listen, ""),
		"zclash":      simUnit(listen, ""), // sorts after "good": the later unit loses
		"broken":      "model = \"x\"\ndevice = [\n",
		"nomodel":     strings.Replace(simUnit(freePort(t), ""), "Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruc", 1),
		"wrongdevice": strings.Replace(simUnit(freePort(t), ""), `device = "n150"`, `device = "p150"`, 1),
		"nosecret":    simUnit(freePort(t), "[auth]\nmode = \"api-key\"\nsecret_file = \"no-such-secret\"\n"),
	}
	units["wrongdevice"] = strings.Replace(units["wrongdevice"], "Llama-3.1-8B-Instruct", "Llama-3.2-1B-Instruct", 1)
	d := startDaemon(t, units)
	good := d.waitUnit(t, "good", "active", active)
	want := map[string]string{
		"zclash":      "zclash.toml:4:1: listen: address " + listen + " already used by unit good",
		"broken":      "broken.toml:2:",
		"nomodel":     "nomodel.toml:1:",
		"wrongdevice": "wrongdevice.toml:2:",
		"nosecret":    "no-such-secret",
	}
	out, code := d.ctl(t, "status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	for name, msg := range want {
		u := d.unit(t, name)
		if u.State != api.StateFailed || u.LoadState != api.LoadError || !strings.Contains(u.LastError, msg) || u.PID != 0 {
			t.Errorf("%s: state %s load %s error %q, want an error containing %q", name, u.State, u.LoadState, u.LastError, msg)
		}
		if !strings.Contains(out, name+" ") {
			t.Errorf("status table lacks %s:\n%s", name, out)
		}
		if _, code := d.ctl(t, "status", name); code != 3 {
			t.Errorf("status %s: exit %d, want 3", name, code)
		}
	}
	if u := d.unit(t, "good"); u.PID != good.PID || !active(u) || !healthy(listen) {
		t.Fatalf("good unit disturbed: %+v", u)
	}
}

// A unit with reset_device gets its chips reset (by the configured command)
// before an automatic restart; the config file sets the command.
func TestDeviceResetBeforeRestart(t *testing.T) {
	dir := t.TempDir()
	resets := filepath.Join(dir, "resets")
	cfg := filepath.Join(dir, "ttisd.toml")
	conf := fmt.Sprintf("reset_command = [\"/bin/sh\", \"-c\", \"echo reset <ids> >> %s\"]\nlog_level = \"debug\"\n", resets)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	unit := simUnit(freePort(t), "chips = [0]\n"+strings.Replace(fastRestart, "[restart]", "[restart]\nreset_device = true", 1))
	d := startDaemon(t, map[string]string{"a": unit}, "--config", cfg)
	if err := os.WriteFile(filepath.Join(d.devDir, "0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	u := d.waitUnit(t, "a", "active", active)
	if _, err := os.Stat(resets); err == nil {
		t.Fatal("chips reset before the first start")
	}
	if err := syscall.Kill(u.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.waitUnit(t, "a", "restarted", func(n api.UnitDetail) bool { return active(n) && n.PID != u.PID })
	b, err := os.ReadFile(resets)
	if err != nil || string(b) != "reset 0\n" {
		t.Fatalf("reset log %q, %v", b, err)
	}
}

func TestBadConfigFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ttisd.toml")
	if err := os.WriteFile(cfg, []byte("units_dir = \"/u\"\nsoket = \"/s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ttisdBin, "--config", cfg).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "ttisd.toml:2:1: unknown key \"soket\"") {
		t.Fatalf("bad config: %v\n%s", err, out)
	}
	out, err = exec.Command(ttisdBin, "--config", filepath.Join(t.TempDir(), "missing.toml")).CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "missing.toml") {
		t.Fatalf("missing named config: %v\n%s", err, out)
	}
}

func TestLogsFollowThroughCtl(t *testing.T) {
	d := startDaemon(t, map[string]string{"a": simUnit(freePort(t), "")})
	d.waitUnit(t, "a", "active", active)
	cmd := exec.Command(ttisctlBin, "--socket", d.socket, "logs", "-f", "-n", "1", "a")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	<-lines // the one recent line
	if out, code := d.ctl(t, "restart", "a"); code != 0 {
		t.Fatalf("restart: exit %d\n%s", code, out)
	}
	timeout := time.After(15 * time.Second)
	for seen := false; !seen; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("logs -f ended early")
			}
			seen = strings.Contains(l, "[ttisd] Started server")
		case <-timeout:
			t.Fatal("logs -f did not show the restart")
		}
	}
	// Ctrl-C ends following with status 0.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	drain := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-lines:
		case <-drain:
			_ = cmd.Process.Kill()
			t.Fatal("ttisctl logs -f did not end on SIGINT")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ttisctl logs -f after SIGINT: %v", err)
	}
}

// again starts a new ttisd on d's folders and socket, as after a crash or
// an upgrade of the daemon alone.
func (d *daemon) again(t *testing.T, logName string, args ...string) *daemon {
	t.Helper()
	next := &daemon{t: t, dir: d.dir, unitsDir: d.unitsDir, devDir: d.devDir, socket: d.socket, done: make(chan struct{})}
	next.cmd = next.command(args...)
	logf, err := os.Create(filepath.Join(d.dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	next.cmd.Stdout, next.cmd.Stderr = logf, logf
	if err := next.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		next.exitErr = next.cmd.Wait()
		logf.Close()
		close(next.done)
	}()
	t.Cleanup(func() {
		_ = next.cmd.Process.Signal(syscall.SIGTERM)
		<-next.done
		if next.exitErr != nil {
			t.Errorf("second ttisd exit: %v", next.exitErr)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(d.dir, logName))
			t.Logf("second ttisd log:\n%s", b)
		}
	})
	next.cl = client.New(next.socket)
	return next
}

// A unit's [[schedule]] entries show in its detail with their next firing,
// and a broken edit keeps the last good version's schedules.
func TestSchedulesInUnitDetail(t *testing.T) {
	listen := freePort(t)
	sched := "\n[[schedule]]\nworkflow = \"benchmarks\"\ncalendar = \"0 3 * * *\"\nlimit = \"smoke\"\n"
	d := startDaemon(t, map[string]string{"a": simUnit(listen, "") + sched})
	u := d.waitUnit(t, "a", "active", active)
	if len(u.Schedules) != 1 || u.Schedules[0].Workflow != "benchmarks" || !u.Schedules[0].Next.After(time.Now()) {
		t.Fatalf("schedules of an active unit: %+v", u.Schedules)
	}
	d.write(t, "a", simUnit(listen, "bogus = 1")+sched)
	u = d.waitUnit(t, "a", "stale", func(u api.UnitDetail) bool { return u.LoadState == api.LoadStale })
	if len(u.Schedules) != 1 || u.Schedules[0].Calendar != "0 3 * * *" {
		t.Fatalf("schedules after a broken edit: %+v", u.Schedules)
	}
	out, code := d.ctl(t, "status", "a")
	if code != 0 || !strings.Contains(out, "Schedules: benchmarks (0 3 * * *, limit smoke), next ") {
		t.Fatalf("status a: exit %d\n%s", code, out)
	}
}

// Hostile files in the units folder are reported per file and never stall
// the daemon: a named pipe present at start and one created later (open()
// on a pipe blocks until a writer comes), a device node reached through a
// symlink, and a symlink loop. Reload answers, the good unit keeps
// serving, status names each file with its error, and SIGTERM still stops
// the daemon (the cleanup checks that).
func TestHostileUnitFiles(t *testing.T) {
	listen := freePort(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "units"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "units", "early.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemonIn(t, dir, map[string]string{"good": simUnit(listen, "")})
	good := d.waitUnit(t, "good", "active", active)
	if err := syscall.Mkfifo(filepath.Join(d.unitsDir, "late.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(d.unitsDir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop.toml", filepath.Join(d.unitsDir, "loop.toml")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ttisctlBin, "--socket", d.socket, "reload")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("ttisctl reload did not answer within 15s: %s", out)
	}
	if err == nil {
		t.Errorf("reload with refused files exited 0:\n%s", out)
	}
	want := map[string]string{
		"early": "not a regular file (a named pipe)",
		"late":  "not a regular file (a named pipe)",
		"zero":  "not a regular file (a device node)",
		"loop":  "too many levels of symbolic links",
	}
	for name, msg := range want {
		u := d.waitUnit(t, name, "failed to load", func(u api.UnitDetail) bool { return u.LoadState == api.LoadError })
		if !strings.Contains(u.LastError, name+".toml") || !strings.Contains(u.LastError, msg) {
			t.Errorf("%s: error %q, want the path and %q", name, u.LastError, msg)
		}
		if _, code := d.ctl(t, "status", name); code != 3 {
			t.Errorf("status %s: exit %d, want 3", name, code)
		}
	}
	status, _ := d.ctl(t, "status")
	for name := range want {
		if !strings.Contains(status, name+" ") {
			t.Errorf("status table lacks %s:\n%s", name, status)
		}
	}
	if u := d.unit(t, "good"); u.PID != good.PID || !active(u) || !healthy(listen) {
		t.Fatalf("good unit disturbed: %+v", u)
	}
}

// A cpu unit whose model file is no GGUF shows the load error in its
// status at once (the server used to wait its 25 s shutdown grace, showing
// activating), and one naming a file outside the model folders (the state
// folder's models/ by default) is refused with an error that shows none of
// the file's bytes.
func TestModelLoadErrorsInStatus(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "state", "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	inside, outside := filepath.Join(models, "text.gguf"), filepath.Join(dir, "shadow")
	for _, p := range []string{inside, outside} {
		if err := os.WriteFile(p, []byte("root:$6$hash:19000:0:99999:7:::\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cpuUnit := func(model string) string {
		return fmt.Sprintf("model = %q\ndevice = \"cpu\"\nruntime = \"cpu\"\nlisten = %q\n[restart]\npolicy = \"no\"\n", model, freePort(t))
	}
	start := time.Now()
	d := startDaemonIn(t, dir, map[string]string{"text": cpuUnit(inside), "outside": cpuUnit(outside)})
	for name, msg := range map[string]string{"text": "not a GGUF file", "outside": "is outside the model folders (" + models + ", /var/lib/ttis/models, " + filepath.Join(filepath.Dir(models), "hub") + ")"} {
		u := d.waitUnit(t, name, "failed", func(u api.UnitDetail) bool { return u.State == api.StateFailed })
		if !strings.Contains(u.LastError, msg) || strings.Contains(u.LastError, "root") {
			t.Errorf("%s: last error %q, want %q and none of the file's bytes", name, u.LastError, msg)
		}
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("model load errors took %s to show", d)
	}
}
