//go:build soak

package soak_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/api/client"
)

var (
	duration = flag.Duration("soak.duration", 10*time.Minute, "how long faults are injected (make soak-short: 60s)")
	maxRSS   = flag.Int64("soak.max-rss-mib", 256, "the daemon's resident memory may not exceed this")
)

// soak is one run: the daemon under test, its folders, the load and the
// record of faults.
type soak struct {
	t                         *testing.T
	dir, units, state, socket string
	dev                       string
	ttisd, ttisctl            string
	daemon                    *exec.Cmd
	daemonDone                chan struct{}
	cl                        *client.Client
	texts                     map[string]string
	logs                      int
	faults                    []faultRow
	peakRSS                   int64
	load                      *load
}

type faultRow struct {
	name, outcome string
	ok            bool
	took          time.Duration
	// lost is how many requests to the untouched units (steady, cpu) went
	// unanswered during the fault, restarts how many of their servers it
	// replaced: the goal of both is 0.
	lost, restarts int
}

// Units: steady and cpu are never touched by a fault (their requests must
// all be answered); victim is killed, broken, deleted and collided with.
const (
	steady = "steady"
	victim = "victim"
	cpuU   = "cpu"
)

func TestSoak(t *testing.T) {
	s := &soak{t: t, ttisd: testbin.Path(t, "ttisd", false), ttisctl: testbin.Path(t, "ttisctl", false), texts: map[string]string{}}
	// A short folder: the socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ttis-soak-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s.dir, s.units, s.state, s.dev, s.socket = dir, filepath.Join(dir, "units"), filepath.Join(dir, "state"), filepath.Join(dir, "dev"), filepath.Join(dir, "s.sock")
	for _, d := range []string{s.units, filepath.Join(s.state, "models"), s.dev} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, chip := range []string{"0", "1"} {
		if err := os.WriteFile(filepath.Join(s.dev, chip), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	model := filepath.Join(s.state, "models", "tiny.gguf")
	if out, err := exec.Command(s.ttisctl, "model", "create", "--preset", "tiny", "--seed", "1", model).CombinedOutput(); err != nil {
		t.Fatalf("model create: %v\n%s", err, out)
	}
	restart := "[restart]\npolicy = \"always\"\ndelay = \"100ms\"\nmax_delay = \"1s\"\nburst = 1000\ninterval = \"1m\"\nstop_timeout = \"6s\"\n"
	sim := func(chips string) string {
		return fmt.Sprintf("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = %q\n%s\n[sim]\ntime_scale = 0.02\n%s", freePort(t), chips, restart)
	}
	s.texts[steady] = sim("")
	s.texts[victim] = sim("chips = [0]")
	s.texts[cpuU] = fmt.Sprintf("model = %q\ndevice = \"cpu\"\nruntime = \"cpu\"\nlisten = %q\n[cpu]\nthreads = 1\n[limits]\nmax_concurrency = 2\n%s", model, freePort(t), restart)
	for name, text := range s.texts {
		s.write(name, text)
	}
	s.startDaemon()
	for name := range s.texts {
		s.waitActive(name, time.Minute)
	}

	ctx, stopLoad := context.WithCancel(context.Background())
	load := newLoad()
	s.load = load
	var wg sync.WaitGroup
	for name, text := range s.texts {
		addr := listenOf(text)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				load.run(ctx, name, addr, w%2 == 0)
			}()
		}
	}

	faults := []struct {
		name string
		do   func() (string, error)
	}{
		{"kill -9 of a server", s.killServer},
		{"kill -9 of the daemon", s.killDaemon},
		{"broken edit, then fixed", s.brokenEdit},
		{"unit file deleted, then re-created", s.deleteRecreate},
		{"named pipe in the units folder", s.fifo},
		{"device claim collision", s.collision},
		{"disk full on the state folder", s.diskFull},
		{"ttisctl bench, then again on a full disk", s.benchRuns},
		{"24,000 log followers (logs -f flood)", s.followerFlood}, // followers_test.go
		{"named pipe and 400 MB run.json in the store", s.storeFIFO},
		{"40 concurrent 7.9 MB prompts to a server", s.bigPromptBurst},
	}
	deadline := time.Now().Add(*duration)
	for i := 0; time.Now().Before(deadline) || i < len(faults); i++ {
		f := faults[i%len(faults)]
		start := time.Now()
		lostBefore, pidsBefore := load.lostUntouched(), s.untouchedPIDs()
		outcome, err := f.do()
		row := faultRow{name: f.name, outcome: outcome, ok: err == nil, took: time.Since(start)}
		if err != nil {
			row.outcome = err.Error()
		}
		row.lost = load.lostUntouched() - lostBefore
		for unit, pid := range s.untouchedPIDs() {
			if before, ok := pidsBefore[unit]; ok && pid != before {
				row.restarts++
			}
		}
		s.faults = append(s.faults, row)
		s.sampleRSS()
		time.Sleep(time.Second)
	}
	stopLoad()
	wg.Wait()

	// Every request on a unit no fault touched was answered; on the
	// victim, every answer was well-formed.
	problems := s.check(load)
	s.stopDaemon()
	problems = append(problems, s.leaks()...)
	s.report(load)
	for _, p := range problems {
		t.Error(p)
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func listenOf(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "listen = "); ok {
			s, _ := strconv.Unquote(v)
			return s
		}
	}
	return ""
}

func (s *soak) write(name, text string) {
	tmp := filepath.Join(s.units, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.units, name+".toml")); err != nil {
		s.t.Fatal(err)
	}
}

func (s *soak) startDaemon() {
	s.logs++
	logf, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("ttisd-%d.log", s.logs)))
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(s.ttisd, "--units-dir", s.units, "--state-dir", s.state, "--socket", s.socket,
		"--device-root", s.dev, "--log-format", "json", "--socket-group", "", "--rescan-interval", "2s")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	s.daemon, s.daemonDone = cmd, done
	s.cl = client.New(s.socket)
	if err := until(15*time.Second, func() error { _, err := s.cl.Info(context.Background()); return err }); err != nil {
		s.t.Fatalf("ttisd did not answer: %v", err)
	}
}

func (s *soak) stopDaemon() {
	_ = s.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.daemonDone:
	case <-time.After(30 * time.Second):
		_ = s.daemon.Process.Kill()
		s.t.Error("ttisd did not stop within 30s of SIGTERM")
		<-s.daemonDone
	}
}

// until polls f every 50ms until it returns nil or d passes.
func until(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untouchedPIDs are the server pids of the units no fault touches (those
// the daemon answers for).
func (s *soak) untouchedPIDs() map[string]int {
	out := map[string]int{}
	for _, n := range []string{steady, cpuU} {
		if u, err := s.unit(n); err == nil && u.PID != 0 {
			out[n] = u.PID
		}
	}
	return out
}

func (s *soak) unit(name string) (api.UnitDetail, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.cl.Unit(ctx, name, 0)
}

func (s *soak) waitActive(name string, d time.Duration) api.UnitDetail {
	var u api.UnitDetail
	if err := until(d, func() error {
		var err error
		if u, err = s.unit(name); err != nil {
			return err
		}
		if u.State != api.StateActive || u.LoadError != "" {
			return fmt.Errorf("unit %s is %s/%s: %s", name, u.State, u.SubState, u.LastError)
		}
		return nil
	}); err != nil {
		s.t.Fatalf("%v", err)
	}
	return u
}

// waitFor polls the unit until ok holds.
func (s *soak) waitFor(name string, d time.Duration, what string, ok func(api.UnitDetail, error) bool) error {
	return until(d, func() error {
		u, err := s.unit(name)
		if ok(u, err) {
			return nil
		}
		return fmt.Errorf("unit %s not %s after %s: %+v %v", name, what, d, u.Unit, err)
	})
}

func (s *soak) killServer() (string, error) {
	before, err := s.unit(victim)
	if err != nil || before.PID == 0 {
		return "", fmt.Errorf("no victim server to kill: %v", err)
	}
	_ = syscall.Kill(before.PID, syscall.SIGKILL)
	err = s.waitFor(victim, 30*time.Second, "restarted", func(u api.UnitDetail, err error) bool {
		return err == nil && u.State == api.StateActive && u.PID != 0 && u.PID != before.PID
	})
	return "restarted by the daemon", err
}

func (s *soak) killDaemon() (string, error) {
	before := map[string]int{}
	for _, n := range []string{steady, cpuU} {
		u, err := s.unit(n)
		if err != nil {
			return "", err
		}
		before[n] = u.PID
	}
	_ = s.daemon.Process.Kill()
	<-s.daemonDone
	s.startDaemon()
	for n, pid := range before {
		if err := s.waitFor(n, 30*time.Second, "adopted", func(u api.UnitDetail, err error) bool {
			return err == nil && u.State == api.StateActive && u.PID == pid
		}); err != nil {
			return "", err
		}
	}
	if err := s.waitFor(victim, 30*time.Second, "active", func(u api.UnitDetail, err error) bool { return err == nil && u.State == api.StateActive }); err != nil {
		return "", err
	}
	return "new daemon adopted the untouched servers (same pids)", nil
}

func (s *soak) brokenEdit() (string, error) {
	before, err := s.unit(victim)
	if err != nil {
		return "", err
	}
	s.write(victim, s.texts[victim]+"\n[limits\n")
	if err := s.waitFor(victim, 20*time.Second, "showing the load error", func(u api.UnitDetail, err error) bool {
		return err == nil && strings.Contains(u.LoadError, "victim.toml:16:8: ") && u.PID == before.PID && u.State == api.StateActive
	}); err != nil {
		return "", err
	}
	s.write(victim, s.texts[victim])
	err = s.waitFor(victim, 20*time.Second, "fixed", func(u api.UnitDetail, err error) bool {
		return err == nil && u.LoadError == "" && u.State == api.StateActive
	})
	return "error shown with line:col, last good kept serving, fix applied", err
}

func (s *soak) deleteRecreate() (string, error) {
	if err := os.Remove(filepath.Join(s.units, victim+".toml")); err != nil {
		return "", err
	}
	if err := s.waitFor(victim, 20*time.Second, "removed", func(u api.UnitDetail, err error) bool { return err != nil || u.PID == 0 }); err != nil {
		return "", err
	}
	s.write(victim, s.texts[victim])
	err := s.waitFor(victim, 30*time.Second, "re-created", func(u api.UnitDetail, err error) bool { return err == nil && u.State == api.StateActive })
	return "stopped, then started again", err
}

func (s *soak) fifo() (string, error) {
	p := filepath.Join(s.units, "fifo.toml")
	if err := unix.Mkfifo(p, 0o644); err != nil {
		return "", err
	}
	defer func() {
		os.Remove(p)
		s.reload()
	}()
	if err := s.reload(); err != nil {
		return "", err
	}
	err := s.waitFor("fifo", 10*time.Second, "reported", func(u api.UnitDetail, err error) bool {
		return err == nil && strings.Contains(u.LastError, "named pipe")
	})
	return "reload answered; the pipe is reported, not opened", err
}

// reload runs `ttisctl reload`, which must answer within 10s.
func (s *soak) reload() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, s.ttisctl, "--socket", s.socket, "reload").CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("ttisctl reload did not answer within 10s: %s", out)
	}
	return nil
}

func (s *soak) collision() (string, error) {
	before, err := s.unit(victim)
	if err != nil {
		return "", err
	}
	text := fmt.Sprintf("model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = %q\nchips = [0]\n", freePort(s.t))
	s.write("clash", text)
	defer func() {
		os.Remove(filepath.Join(s.units, "clash.toml"))
		s.reload()
	}()
	if err := s.waitFor("clash", 20*time.Second, "refused", func(u api.UnitDetail, err error) bool {
		return err == nil && strings.Contains(u.LastError, "chip 0 already claimed by unit victim")
	}); err != nil {
		return "", err
	}
	if u, err := s.unit(victim); err != nil || u.PID != before.PID {
		return "", fmt.Errorf("victim disturbed by the collision: %+v %v", u.Unit, err)
	}
	return "second claim refused, the holder undisturbed", nil
}

// diskFull limits the daemon's file size (RLIMIT_FSIZE: unprivileged,
// where a small tmpfs would need root) so that every write that grows a
// file fails, edits a unit meanwhile, and lifts the limit.
func (s *soak) diskFull() (string, error) {
	pid := s.daemon.Process.Pid
	var old unix.Rlimit
	full := unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &full, &old); err != nil {
		return "", fmt.Errorf("prlimit: %w", err)
	}
	lifted := false
	lift := func() {
		if !lifted {
			lifted = true
			_ = unix.Prlimit(pid, unix.RLIMIT_FSIZE, &old, nil)
		}
	}
	defer lift()
	s.write(victim, s.texts[victim]+"\n# edited while the disk was full\n")
	time.Sleep(3 * time.Second)
	if _, err := s.unit(steady); err != nil {
		return "", fmt.Errorf("daemon not answering with a full disk: %w", err)
	}
	lift()
	s.write(victim, s.texts[victim])
	err := s.waitFor(victim, 30*time.Second, "active after the disk freed", func(u api.UnitDetail, err error) bool {
		return err == nil && u.State == api.StateActive && u.LoadError == ""
	})
	return "daemon kept answering; edits applied once space returned", err
}

func (s *soak) sampleRSS() {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.daemon.Process.Pid))
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			s.peakRSS = max(s.peakRSS, kb*1024)
		}
	}
}

// check lists the problems found after the faults: lost requests on
// untouched units, malformed answers anywhere, half-written files, a
// daemon that grew.
func (s *soak) check(l *load) []string {
	var out []string
	l.mu.Lock()
	defer l.mu.Unlock()
	for unit, c := range l.counts {
		if unit != victim && c["lost"] > 0 {
			out = append(out, fmt.Sprintf("unit %s, untouched by faults, lost %d requests (first: %s)", unit, c["lost"], l.firstLost[unit]))
		}
		if c["malformed"] > 0 {
			out = append(out, fmt.Sprintf("unit %s: %d answers were not well-formed (first: %s)", unit, c["malformed"], l.firstMalformed[unit]))
		}
		if c["ok"] == 0 {
			out = append(out, fmt.Sprintf("unit %s answered no request", unit))
		}
	}
	// renameio's temporary files start with "."; a half-written result
	// or snapshot would be one left behind, or a JSON file that does not
	// parse.
	_ = filepath.WalkDir(s.state, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") && !strings.HasSuffix(name, ".lock") {
			out = append(out, "temporary file left behind: "+p)
		}
		if strings.HasSuffix(name, ".json") {
			if b, err := os.ReadFile(p); err == nil && !json.Valid(b) {
				out = append(out, "half-written JSON file: "+p)
			}
		}
		return nil
	})
	if s.peakRSS > *maxRSS<<20 {
		out = append(out, fmt.Sprintf("ttisd's resident memory reached %d MiB (limit %d)", s.peakRSS>>20, *maxRSS))
	}
	for _, f := range s.faults {
		if !f.ok {
			out = append(out, fmt.Sprintf("fault %q: %s", f.name, f.outcome))
		}
		if f.restarts > 0 {
			out = append(out, fmt.Sprintf("fault %q replaced %d servers of untouched units", f.name, f.restarts))
		}
	}
	return out
}

// leaks finds processes still running from this soak's folder after the
// daemon stopped (servers run with their unit snapshots under it).
func (s *soak) leaks() []string {
	var out []string
	_ = until(10*time.Second, func() error {
		out = out[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil || !bytes.Contains(cmd, []byte(s.dir)) {
				continue
			}
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
				continue
			}
			out = append(out, fmt.Sprintf("process %d outlived the daemon: %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		}
		if len(out) > 0 {
			return errors.New("leaks")
		}
		return nil
	})
	return out
}

func (s *soak) report(l *load) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsoak: %s of faults against ttisd with sim and cpu units\n\n", *duration)
	fmt.Fprintf(&b, "%-44s %5s %6s %5s %8s  %s\n", "FAULT", "RUNS", "FAILED", "LOST", "RESTARTS", "OUTCOME (last)")
	type agg struct {
		runs, failed   int
		lost, restarts int
		last           string
		took           time.Duration
	}
	byName := map[string]*agg{}
	var order []string
	for _, f := range s.faults {
		a := byName[f.name]
		if a == nil {
			a = &agg{}
			byName[f.name] = a
			order = append(order, f.name)
		}
		a.runs++
		if !f.ok {
			a.failed++
		}
		a.lost += f.lost
		a.restarts += f.restarts
		a.last, a.took = f.outcome, max(a.took, f.took)
	}
	for _, n := range order {
		a := byName[n]
		fmt.Fprintf(&b, "%-44s %5d %6d %5d %8d  %s (slowest %s)\n", n, a.runs, a.failed, a.lost, a.restarts, a.last, a.took.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "\n%-8s %8s %8s %8s %10s  %s\n", "UNIT", "OK", "ERRORS", "LOST", "MALFORMED", "FIRST ERROR")
	l.mu.Lock()
	units := make([]string, 0, len(l.counts))
	for u := range l.counts {
		units = append(units, u)
	}
	sort.Strings(units)
	for _, u := range units {
		c := l.counts[u]
		fmt.Fprintf(&b, "%-8s %8d %8d %8d %10d  %s\n", u, c["ok"], c["error"], c["lost"], c["malformed"], l.firstError[u])
	}
	l.mu.Unlock()
	fmt.Fprintf(&b, "\nLOST and RESTARTS count, per fault, the unanswered requests to and the replaced servers of the units no fault touches (steady, cpu): the goal is 0.\n")
	fmt.Fprintf(&b, "ttisd peak RSS %d MiB (limit %d); ERRORS are well-formed error answers (e.g. 503 while a server starts); LOST are requests without an answer (expected only on the victim, whose server is killed)\n", s.peakRSS>>20, *maxRSS)
	fmt.Print(b.String())
}

// load sends requests to the units and counts what came back.
type load struct {
	mu             sync.Mutex
	counts         map[string]map[string]int
	firstLost      map[string]string
	firstMalformed map[string]string
	firstError     map[string]string
}

func newLoad() *load {
	return &load{counts: map[string]map[string]int{}, firstLost: map[string]string{}, firstMalformed: map[string]string{}, firstError: map[string]string{}}
}

// lostUntouched is how many requests to the units no fault touches went
// unanswered so far.
func (l *load) lostUntouched() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for unit, c := range l.counts {
		if unit != victim {
			n += c["lost"]
		}
	}
	return n
}

func (l *load) add(unit, kind, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[unit] == nil {
		l.counts[unit] = map[string]int{}
	}
	l.counts[unit][kind]++
	if kind == "lost" && l.firstLost[unit] == "" {
		l.firstLost[unit] = detail
	}
	if kind == "error" && l.firstError[unit] == "" {
		l.firstError[unit] = detail
	}
	if kind == "malformed" && l.firstMalformed[unit] == "" {
		l.firstMalformed[unit] = detail
	}
}

func (l *load) run(ctx context.Context, unit, addr string, stream bool) {
	hc := &http.Client{Timeout: 60 * time.Second}
	model := servedModel(hc, addr)
	for ctx.Err() == nil {
		kind, detail := request(hc, addr, model, stream)
		l.add(unit, kind, detail)
		if kind != "ok" {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// request sends one completion and classifies the outcome: ok, error (a
// well-formed error answer), lost (no answer, or a stream cut short) or
// malformed.
func request(hc *http.Client, addr, model string, stream bool) (string, string) {
	body := fmt.Sprintf(`{"model":%q,"prompt":"soak","max_tokens":4,"stream":%t}`, model, stream)
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "lost", err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Message == "" {
			return "malformed", fmt.Sprintf("%d %q", resp.StatusCode, b)
		}
		return "error", fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Message)
	}
	if !stream {
		var r struct {
			Choices []json.RawMessage `json:"choices"`
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "lost", err.Error()
		}
		if json.Unmarshal(b, &r) != nil || len(r.Choices) == 0 {
			return "malformed", string(b)
		}
		return "ok", ""
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "data: [DONE]" {
			return "ok", ""
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"error"`) {
			return "error", ""
		}
	}
	return "lost", fmt.Sprintf("stream ended without [DONE]: %v", sc.Err())
}

// servedModel is the first model the server lists.
func servedModel(hc *http.Client, addr string) string {
	resp, err := hc.Get("http://" + addr + "/v1/models")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var m struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&m) != nil || len(m.Data) == 0 {
		return ""
	}
	return m.Data[0].ID
}

// benchRuns runs a small `ttisctl bench` against the steady unit, which
// must finish with its results, then the same with ttisctl's file size
// limited to 2 KiB (`ulimit -f`, as a disk that fills during the run):
// it must fail with an error and leave its run folder with a readable
// manifest and no half-written file (check looks for those).
func (s *soak) benchRuns() (string, error) {
	args := "--socket " + s.socket + " bench " + steady + " --isl 16 --osl 8 --num-prompts 8 --max-concurrency 4 --no-progress"
	run := func(limit string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return exec.CommandContext(ctx, "bash", "-c", limit+"exec "+s.ttisctl+" "+args).CombinedOutput()
	}
	if out, err := run(""); err != nil {
		return "", fmt.Errorf("bench: %v\n%s%s", err, out, benchErrors(filepath.Join(s.state, "runs", steady)))
	}
	out, err := run("ulimit -f 2; ")
	if err == nil || !bytes.Contains(out, []byte("file too large")) {
		return "", fmt.Errorf("bench on a full disk: %v, want a failed write:\n%s", err, out)
	}
	// Every run folder keeps a manifest that parses.
	dirs, _ := filepath.Glob(filepath.Join(s.state, "runs", steady, "*"))
	n := 0
	for _, d := range dirs {
		if strings.HasPrefix(filepath.Base(d), ".") {
			continue // the store's lock
		}
		n++
		b, err := os.ReadFile(filepath.Join(d, "run.json"))
		if err != nil || !json.Valid(b) {
			return "", fmt.Errorf("run folder %s without a readable manifest: %v", d, err)
		}
	}
	return "finished with results; on a full disk failed cleanly (" + strconv.Itoa(n) + " run folders, each with a manifest)", nil
}

// benchErrors quotes the request errors recorded in the newest run's
// files, to explain a failed bench.
func benchErrors(dir string) string {
	runs, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(runs) == 0 {
		return ""
	}
	sort.Strings(runs)
	var b strings.Builder
	_ = filepath.WalkDir(runs[len(runs)-1], func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		data, _ := os.ReadFile(p)
		if i := bytes.Index(data, []byte(`"errors"`)); i >= 0 {
			fmt.Fprintf(&b, "%s: %s\n", filepath.Base(p), data[i:min(len(data), i+600)])
		}
		return nil
	})
	return b.String()
}

// storeFIFO puts among the victim's runs what hung every reader of the
// results store (issue 31): a named pipe as run.json, a 400 MB run.json
// (sparse) and a named pipe as report.md. `ttisctl runs` must answer and
// list both bad entries with their reasons without reading the big file,
// `ttisctl report` must name the pipe, a scheduled run of the unit (which
// reads the store for its regressions) must still run and finish, and no
// server may restart. The entries are removed afterwards: check reads
// every JSON file of the state folder.
func (s *soak) storeFIFO() (string, error) {
	pidsBefore := map[string]int{}
	for _, n := range []string{steady, victim, cpuU} {
		u, err := s.unit(n)
		if err != nil {
			return "", err
		}
		pidsBefore[n] = u.PID
	}
	runsDir := filepath.Join(s.state, "runs", victim)
	const pipeRun, bigRun, pipeMD = "20000101T000001Z-benchmarks-00f1f0", "20000101T000002Z-benchmarks-00b190", "20000101T000003Z-benchmarks-00f1f1"
	for _, id := range []string{pipeRun, bigRun, pipeMD} {
		if err := os.MkdirAll(filepath.Join(runsDir, id), 0o755); err != nil {
			return "", err
		}
		defer os.RemoveAll(filepath.Join(runsDir, id))
	}
	if err := unix.Mkfifo(filepath.Join(runsDir, pipeRun, "run.json"), 0o644); err != nil {
		return "", err
	}
	big, err := os.Create(filepath.Join(runsDir, bigRun, "run.json"))
	if err != nil {
		return "", err
	}
	err = big.Truncate(400 << 20)
	big.Close()
	if err != nil {
		return "", err
	}
	manifest := fmt.Sprintf(`{"id":%q,"unit":%q,"workflow":"benchmarks","status":"complete","started":"2000-01-01T00:00:03Z","files":["report.md"]}`, pipeMD, victim)
	if err := os.WriteFile(filepath.Join(runsDir, pipeMD, "run.json"), []byte(manifest), 0o644); err != nil {
		return "", err
	}
	if err := unix.Mkfifo(filepath.Join(runsDir, pipeMD, "report.md"), 0o644); err != nil {
		return "", err
	}

	start := time.Now()
	out, code, rss, err := s.ctlBounded("runs", victim)
	if err != nil {
		return "", err
	}
	took := time.Since(start)
	for _, want := range []string{
		"bad run entry: " + filepath.Join(runsDir, pipeRun, "run.json") + ": not a regular file (a named pipe)",
		"bad run entry: " + filepath.Join(runsDir, bigRun, "run.json") + ": 419430400 bytes, larger than the 1048576-byte limit",
		pipeMD,
	} {
		if !strings.Contains(out, want) {
			return "", fmt.Errorf("ttisctl runs (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	out, code, _, err = s.ctlBounded("report", pipeMD)
	if err != nil {
		return "", err
	}
	if code == 0 || !strings.Contains(out, filepath.Join(runsDir, pipeMD, "report.md")+": not a regular file (a named pipe)") {
		return "", fmt.Errorf("ttisctl report of a run whose report.md is a pipe: exit %d\n%s", code, out)
	}

	// A scheduled run of the victim reads the same store.
	since := time.Now()
	s.write(victim, s.texts[victim]+"\n[[schedule]]\nworkflow = \"benchmarks\"\ncalendar = \"@every 5s\"\nlimit = \"smoke\"\n")
	defer s.write(victim, s.texts[victim])
	var sched string
	err = until(2*time.Minute, func() error {
		list, _ := (&runs.Store{Root: filepath.Join(s.state, "runs")}).List(context.Background(), victim)
		for _, m := range list {
			if m.Trigger == "schedule" && m.Started.After(since) && m.Status != runs.StatusRunning {
				sched = m.ID + " " + m.Status
				return nil
			}
		}
		return errors.New("no scheduled run of the victim finished within 2m beside the pipes")
	})
	if err != nil {
		return "", err
	}
	for n, pid := range pidsBefore {
		if u, err := s.unit(n); err != nil || u.PID != pid {
			return "", fmt.Errorf("unit %s restarted during the store fault: pid %d, then %d (%v)", n, pid, u.PID, err)
		}
	}
	return fmt.Sprintf("runs answered in %s with both bad entries (ttisctl peak RSS %d MiB); report named the pipe; scheduled run %s",
		took.Round(10*time.Millisecond), rss>>20, sched), nil
}

// ctlBounded runs ttisctl with a 10s bound (issue 31's never answered),
// returning its output, exit status and peak resident memory.
func (s *soak) ctlBounded(args ...string) (string, int, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.ttisctl, append([]string{"--socket", s.socket}, args...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", 0, 0, fmt.Errorf("ttisctl %s did not answer within 10s", strings.Join(args, " "))
	}
	if err != nil && cmd.ProcessState == nil {
		return "", 0, 0, err
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10
	}
	return string(out), cmd.ProcessState.ExitCode(), rss, nil
}
