package serve_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// TestMain runs the benchmark's server child when asked to, and
// otherwise the tests, failing them when a goroutine outlives them: a
// shut-down server must leave no accept loop, handler, stream or engine
// loop behind.
//
// Ignored, both fasthttp's: the clock of the Date header
// (updateServerDate), one per process, which the first server starts and
// nothing stops; and a worker pool's cleaner, which sees the pool stopped
// only after its idle sleep (MaxIdleWorkerDuration, 10 s). A server that
// did not stop is still caught: its accept loop is reported.
func TestMain(m *testing.M) {
	if path := os.Getenv(benchChildEnv); path != "" {
		os.Exit(benchServerChild(path))
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}

// ttisdBinary is ttisd built for this test run (once for all packages).
func ttisdBinary(t testing.TB) string { return testbin.Path(t, "ttisd", false) }

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// unit is a running `ttisd serve` process.
type unit struct {
	t    testing.TB
	url  string
	cmd  *exec.Cmd
	done chan error
	log  *logBuffer
}

// startUnit writes a sim unit file with extra TOML appended and runs
// `ttisd serve` on it until /health answers 200.
func startUnit(t testing.TB, timeScale float64, extra string) *unit {
	t.Helper()
	addr := freePort(t)
	dir := t.TempDir()
	text := fmt.Sprintf(`model = "Llama-3.1-8B-Instruct"
device = "n150"
runtime = "sim"
listen = %q
[sim]
time_scale = %g
seed = 7
%s`, addr, timeScale, extra)
	return startUnitFile(t, filepath.Join(dir, "sim-test.toml"), addr, text)
}

// startUnitFile writes a unit file listening on addr and runs `ttisd
// serve` on it until /health answers 200.
func startUnitFile(t testing.TB, path, addr, text string) *unit {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	u := &unit{t: t, url: "http://" + addr, done: make(chan error, 1), log: &logBuffer{}}
	u.cmd = exec.Command(ttisdBinary(t), append(append([]string{"serve", "--log-level", "debug"}, testbin.ModelDirArgs(text)...), path)...)
	u.cmd.Stdout, u.cmd.Stderr = u.log, u.log
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { u.done <- u.cmd.Wait() }()
	t.Cleanup(func() {
		if u.cmd.ProcessState == nil {
			_ = u.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-u.done:
			case <-time.After(10 * time.Second):
				_ = u.cmd.Process.Kill()
				<-u.done
			}
		}
		if t.Failed() {
			t.Logf("ttisd serve log:\n%s", u.log.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return u
			}
		}
		select {
		case err := <-u.done:
			t.Fatalf("ttisd serve exited early: %v\n%s", err, u.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("ttisd serve did not become healthy\n%s", u.log.String())
	return nil
}

// request sends a request and returns status, headers and body.
func (u *unit) request(method, path, body string, header ...string) (int, http.Header, []byte) {
	u.t.Helper()
	req, err := http.NewRequest(method, u.url+path, strings.NewReader(body))
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// post sends JSON and decodes a 200 answer into v.
func (u *unit) post(path, body string, v any, header ...string) {
	u.t.Helper()
	code, _, b := u.request("POST", path, body, header...)
	if code != 200 {
		u.t.Fatalf("POST %s %s: %d %s", path, body, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		u.t.Fatalf("POST %s: decode %s: %v", path, b, err)
	}
}

// sse reads a streaming response into its events (the text after "data: "),
// checking the framing as it goes.
func sse(t testing.TB, r io.Reader) []string {
	t.Helper()
	br := bufio.NewReader(r)
	var events []string
	for range 100000 {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return events
		}
		if err != nil {
			t.Fatalf("read SSE: %v (after %d events)", err, len(events))
		}
		if strings.HasPrefix(line, ":") {
			if blank, _ := br.ReadString('\n'); blank != "\n" {
				t.Fatalf("comment not followed by a blank line: %q", blank)
			}
			continue
		}
		if !strings.HasPrefix(line, "data: ") || !strings.HasSuffix(line, "\n") {
			t.Fatalf("bad SSE line %q", line)
		}
		if blank, _ := br.ReadString('\n'); blank != "\n" {
			t.Fatalf("event not followed by a blank line: %q", blank)
		}
		events = append(events, strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n"))
	}
	t.Fatal("too many SSE lines")
	return nil
}

// stream posts a streaming request and returns its events.
func (u *unit) stream(path, body string, header ...string) []string {
	u.t.Helper()
	req, _ := http.NewRequest("POST", u.url+path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		u.t.Fatalf("stream %s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return sse(u.t, resp.Body)
}

// metric reads one unlabelled-by-us sample from /metrics.
func (u *unit) metric(name string) float64 {
	u.t.Helper()
	_, _, b := u.request("GET", "/metrics", "")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				return v
			}
		}
	}
	u.t.Fatalf("metric %s not found in\n%s", name, b)
	return 0
}

// waitMetric polls until metric equals want or the time is up.
func (u *unit) waitMetric(name string, want float64, within time.Duration) {
	u.t.Helper()
	deadline := time.Now().Add(within)
	var got float64
	for time.Now().Before(deadline) {
		if got = u.metric(name); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	u.t.Fatalf("%s = %v after %v, want %v", name, got, within, want)
}

// logBuffer collects the child's output; the process writes it while the
// test may read it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
