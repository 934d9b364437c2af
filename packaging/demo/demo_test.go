// Package demo holds the test of make demo's script (demo.sh): the README
// promises it needs no network.
package demo

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// errorLine matches what reads as a failure in the demo's output: an error
// message, a network error, something that could not be done, ttisctl's
// "ttisctl COMMAND: message" form. The status table's "LAST ERROR" header
// and "nothing measured failed" are not errors.
var errorLine = regexp.MustCompile(`(?i)(\berror\b.*:|refused|dial tcp|no such host|could not|panic|^ttisctl [a-z -]+: )`)

// TestDemoOffline runs the demo as make demo does, with the Hub endpoint
// pointed at a listener of the test's that counts connections: the demo
// must make none, finish, and print no error line.
func TestDemoOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo (about two minutes)")
	}
	bin := t.TempDir()
	for _, name := range []string{"ttisd", "ttisctl"} {
		if err := os.Symlink(testbin.Path(t, name, false), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	hubL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hubL.Close()
	var attempts atomic.Int32
	go func() {
		for {
			c, err := hubL.Accept()
			if err != nil {
				return
			}
			attempts.Add(1)
			c.Close()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	script := filepath.Join(testbin.ModuleRoot(t), "packaging", "demo", "demo.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	// The whole group ends with the test: the script's trap stops ttisd.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var env []string
	for _, kv := range os.Environ() {
		// The demo's own flags decide; nothing from the caller's shell.
		if !strings.HasPrefix(kv, "HF_") && !strings.HasPrefix(kv, "TTIS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "BIN="+bin, "DEMO_DIR="+filepath.Join(t.TempDir(), "demo"), "HF_ENDPOINT=http://"+hubL.Addr().String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if n := attempts.Load(); n != 0 {
		t.Errorf("the demo connected to the Hub endpoint %d time(s)", n)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if errorLine.MatchString(line) {
			t.Errorf("error line in the demo's output: %s", line)
		}
	}
	// It ran the three releases, and says what the offline run lacks and
	// the command that fetches it.
	for _, want := range []string{"verdict UNGRADED", "verdict INCOMPLETE", "the run is offline and the Hub cache lacks the data", "fix: ttisctl dataset pull meta_ifeval", "== done."} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}
}
