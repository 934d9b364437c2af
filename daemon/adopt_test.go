package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// streamOnce runs one streamed completion against listen and reports
// whether it ended with [DONE].
func streamOnce(ctx context.Context, c *http.Client, listen string, maxTokens int) error {
	body := fmt.Sprintf(`{"model":"Llama-3.1-8B-Instruct","prompt":"hello","max_tokens":%d,"stream":true,"ignore_eos":true}`, maxTokens)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			return nil
		}
	}
	return fmt.Errorf("stream ended without [DONE]: %v", sc.Err())
}

// load streams completions to each address until stop is closed, at most
// 20000 requests and 90s in all, and counts what failed.
type load struct {
	ok, failed atomic.Int64
	firstErr   atomic.Pointer[string]
	// healthFails counts failed /health checks per address: downtime.
	mu          sync.Mutex
	healthFails map[string]int
	stop        chan struct{}
	stopOnce    sync.Once
	wg          sync.WaitGroup
}

func startLoad(listens []string, workers int) *load {
	l := &load{stop: make(chan struct{}), healthFails: map[string]int{}}
	c := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	for _, listen := range listens {
		for range workers {
			l.wg.Go(func() {
				for l.ok.Load()+l.failed.Load() < 20000 && time.Now().Before(deadline) {
					select {
					case <-l.stop:
						return
					default:
					}
					if err := streamOnce(context.Background(), c, listen, 16); err != nil {
						l.failed.Add(1)
						msg := listen + ": " + err.Error()
						l.firstErr.CompareAndSwap(nil, &msg)
						continue
					}
					l.ok.Add(1)
				}
			})
		}
		l.wg.Go(func() {
			for time.Now().Before(deadline) {
				select {
				case <-l.stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				if !healthy(listen) {
					l.mu.Lock()
					l.healthFails[listen]++
					l.mu.Unlock()
				}
			}
		})
	}
	return l
}

func (l *load) end() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// waitRequests waits until n more requests have succeeded.
func (l *load) waitRequests(t *testing.T, n int64) {
	t.Helper()
	want := l.ok.Load() + n
	deadline := time.Now().Add(30 * time.Second)
	for l.ok.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("load stalled at %d ok, %d failed", l.ok.Load(), l.failed.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill -9 of ttisd under a load of streaming requests, then a new ttisd:
// the unchanged units' servers are adopted (same pids, no failed request,
// no failed health check), a unit edited while no daemon ran is reloaded
// live or replaced as the edit requires, and a unit whose file broke while
// its server died too runs its last good version and shows the error.
func TestKill9UnderLoadAdoptsServers(t *testing.T) {
	listens := map[string]string{"steady": freePort(t), "live": freePort(t), "moved": freePort(t), "broken": freePort(t)}
	units := map[string]string{}
	for name, listen := range listens {
		units[name] = simUnit(listen, "[limits]\nmax_queue = 64\n")
	}
	d := startDaemon(t, units)
	pids := map[string]int{}
	for name := range units {
		pids[name] = d.waitUnit(t, name, "active", active).PID
	}
	l := startLoad([]string{listens["steady"], listens["live"]}, 2)
	defer l.end()
	l.waitRequests(t, 50)

	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.done
	// While no daemon runs: a live edit, a server-shaping edit, and a
	// broken file whose server dies too.
	d.write(t, "live", simUnit(listens["live"], "[limits]\nmax_queue = 65\n"))
	d.write(t, "moved", strings.Replace(units["moved"], "time_scale = 0", "time_scale = 0\nseed = 9", 1))
	d.write(t, "broken", units["broken"]+"bogus = 1\n")
	if err := syscall.Kill(pids["broken"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.waitRequests(t, 50) // served with no daemon at all

	next := d.again(t, "ttisd2.log")
	start := time.Now()
	steady := next.waitUnit(t, "steady", "adopted", active)
	live := next.waitUnit(t, "live", "reloaded", func(u api.UnitDetail) bool {
		return active(u) && u.LastChange != nil && u.LastChange.Action == api.ChangeReload
	})
	moved := next.waitUnit(t, "moved", "replaced", func(u api.UnitDetail) bool { return active(u) && u.PID != pids["moved"] })
	broken := next.waitUnit(t, "broken", "running its last good version", func(u api.UnitDetail) bool { return active(u) && u.LoadState == api.LoadStale })
	t.Logf("all units settled %s after the new ttisd started", time.Since(start).Round(time.Millisecond))
	l.waitRequests(t, 50)
	l.end()

	if steady.PID != pids["steady"] || !steady.Adopted {
		t.Errorf("steady: pid %d -> %d, adopted %v", pids["steady"], steady.PID, steady.Adopted)
	}
	if live.PID != pids["live"] || !live.Adopted || strings.Join(live.LastChange.Fields, ",") != "limits.max_queue" {
		t.Errorf("live: pid %d -> %d, last change %+v", pids["live"], live.PID, live.LastChange)
	}
	waitGone(t, pids["moved"])
	if moved.Adopted || moved.LastChange == nil || moved.LastChange.Action != api.ChangeRestart {
		t.Errorf("moved: %+v", moved)
	}
	if !strings.Contains(broken.LastError, "bogus") || broken.PID == pids["broken"] {
		t.Errorf("broken: %+v", broken)
	}
	l.mu.Lock()
	downtime := map[string]time.Duration{}
	for name, listen := range listens {
		downtime[name] = time.Duration(l.healthFails[listen]) * 5 * time.Millisecond
	}
	l.mu.Unlock()
	t.Logf("requests: %d ok, %d failed; failed health checks (5ms apart): steady %d, live %d",
		l.ok.Load(), l.failed.Load(), l.healthFails[listens["steady"]], l.healthFails[listens["live"]])
	if n := l.failed.Load(); n != 0 {
		t.Errorf("%d requests to unchanged units failed; first: %s", n, *l.firstErr.Load())
	}
	if downtime["steady"] != 0 || downtime["live"] != 0 {
		t.Errorf("downtime of unchanged units: %v", downtime)
	}
	// The log of an adopted server still reaches ttisctl logs.
	out, code := next.ctl(t, "logs", "-n", "50", "live")
	if code != 0 || !strings.Contains(out, "SIGHUP: unit file re-read") || !strings.Contains(out, "live settings applied") {
		t.Errorf("logs live: exit %d\n%s", code, out)
	}
}

// A limits edit reaches the running server without a restart: the pid
// stays and the new limit is enforced at once.
func TestLiveLimitEdit(t *testing.T) {
	listen := freePort(t)
	unit := func(queue int) string {
		return strings.Replace(simUnit(listen, fmt.Sprintf("[limits]\nmax_concurrency = 1\nmax_queue = %d\n", queue)), "time_scale = 0", "time_scale = 1", 1)
	}
	d := startDaemon(t, map[string]string{"a": unit(1)})
	before := d.waitUnit(t, "a", "active", active)
	c := &http.Client{Timeout: 30 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two long streams: one holds the only slot, one the only queue place.
	holding := make(chan error, 2)
	for range 2 {
		go func() { holding <- streamOnce(ctx, c, listen, 60000) }()
	}
	waitGauges(t, listen, 1, 1)
	if err := streamOnce(ctx, c, listen, 1); err == nil || !strings.Contains(err.Error(), "status 429") || !strings.Contains(err.Error(), "max_queue = 1") {
		t.Fatalf("a third request with max_queue = 1: %v, want a 429", err)
	}
	d.write(t, "a", unit(2))
	after := d.waitUnit(t, "a", "reloaded", func(u api.UnitDetail) bool {
		if u.LastChange == nil || u.LastChange.Action != api.ChangeReload {
			return false
		}
		for _, l := range u.Logs {
			if strings.Contains(l.Text, "live settings applied") && strings.Contains(l.Text, "max_queue=2") {
				return true
			}
		}
		return false
	})
	if after.PID != before.PID {
		t.Fatalf("a limits edit restarted the server: pid %d -> %d", before.PID, after.PID)
	}
	// Now the third request waits in the queue (200, then heartbeats)
	// instead of a 429.
	body := `{"model":"Llama-3.1-8B-Instruct","prompt":"hello","max_tokens":1,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+"/v1/completions", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with max_queue = 2 the third request got %d", resp.StatusCode)
	}
	cancel()
	<-holding
	<-holding
}

// waitGauges waits until the server at listen has running sequences in
// slots and waiting ones in its queue.
func waitGauges(t *testing.T, listen string, running, waiting int) {
	t.Helper()
	want := []string{fmt.Sprintf("vllm:num_requests_running{model_name=\"Llama-3.1-8B-Instruct\",engine=\"0\"} %d\n", running),
		fmt.Sprintf("vllm:num_requests_waiting{model_name=\"Llama-3.1-8B-Instruct\",engine=\"0\"} %d\n", waiting)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + listen + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want[0]) && strings.Contains(string(b), want[1]) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never had %d running and %d waiting", running, waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With live_restore, SIGTERM ends ttisd but not its servers (an upgrade of
// the daemon alone); the next ttisd adopts them.
func TestLiveRestoreKeepsServersAcrossStop(t *testing.T) {
	listen := freePort(t)
	d := startDaemon(t, map[string]string{"a": simUnit(listen, "")}, "--live-restore")
	pid := d.waitUnit(t, "a", "active", active).PID
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-d.done
	if d.exitErr != nil {
		t.Fatalf("ttisd exit after SIGTERM: %v", d.exitErr)
	}
	if gone(pid) || !healthy(listen) {
		t.Fatal("live_restore: the server did not outlive ttisd")
	}
	// Without live_restore, this one's SIGTERM at cleanup stops it.
	next := d.again(t, "ttisd2.log")
	u := next.waitUnit(t, "a", "adopted", func(u api.UnitDetail) bool { return active(u) && u.Adopted })
	if u.PID != pid {
		t.Fatalf("pid %d -> %d", pid, u.PID)
	}
}
