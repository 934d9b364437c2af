package testbin

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Served is a running `ttisd serve` process.
type Served struct {
	// URL is the server's root, e.g. http://127.0.0.1:40123.
	URL string
	// Cmd is the process (tests that signal it).
	Cmd *exec.Cmd

	mu   sync.Mutex
	logs bytes.Buffer
}

// Logs is what the server printed so far.
func (s *Served) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

func (s *Served) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.Write(p)
}

// Serve starts `ttisd serve` on a unit file made of unitTOML (every
// "LISTEN" in it replaced by a free loopback address, and a listen key
// added when it has none), waits until GET /health answers 200, and stops
// the process when the test ends. A server that exits or stays unhealthy
// for a minute fails the test with its output.
func Serve(tb testing.TB, unitTOML string) *Served {
	tb.Helper()
	s, err := serve(tb, unitTOML)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TryServe is Serve returning the start failure instead of failing the
// test (for tests that skip when a runtime is not built in).
func TryServe(tb testing.TB, unitTOML string) (*Served, error) {
	tb.Helper()
	return serve(tb, unitTOML)
}

func serve(tb testing.TB, unitTOML string) (*Served, error) {
	ttisd := Path(tb, "ttisd", false)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	body := strings.ReplaceAll(unitTOML, "LISTEN", addr)
	if !strings.Contains(body, addr) {
		// Top-level keys come before any table.
		body = fmt.Sprintf("listen = %q\n", addr) + body
	}
	unit := filepath.Join(tb.TempDir(), "unit.toml")
	if err := os.WriteFile(unit, []byte(body), 0o600); err != nil {
		return nil, err
	}
	s := &Served{URL: "http://" + addr}
	s.Cmd = exec.Command(ttisd, append(append([]string{"serve", "--log-level", "warn"}, ModelDirArgs(body)...), unit)...)
	s.Cmd.Stdout, s.Cmd.Stderr = s, s
	if err := s.Cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- s.Cmd.Wait() }()
	tb.Cleanup(func() {
		_ = s.Cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = s.Cmd.Process.Kill()
			<-exited
		}
	})
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("ttisd serve exited (%v):\n%s", err, s.Logs())
		default:
		}
		if resp, err := hc.Get(s.URL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return nil, fmt.Errorf("ttisd serve not healthy within a minute:\n%s", s.Logs())
}

var modelKey = regexp.MustCompile(`(?m)^\s*model\s*=\s*"([^"]+)"`)

// ModelDirArgs are the `ttisd serve` flags that allow the model file a
// unit text names (an absolute path): its folder as a --model-dir, since a
// server opens model files only inside its model folders. Nil when the
// unit names a catalog model.
func ModelDirArgs(unitTOML string) []string {
	m := modelKey.FindStringSubmatch(unitTOML)
	if m == nil || !filepath.IsAbs(m[1]) {
		return nil
	}
	return []string{"--model-dir", filepath.Dir(m[1])}
}
