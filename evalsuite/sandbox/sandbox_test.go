package sandbox

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newRunner(t *testing.T) *Runner {
	t.Helper()
	r, err := New(DefaultLimits())
	if err != nil {
		t.Skipf("no python3 on this host: %v", err)
	}
	return r
}

func run(t *testing.T, r *Runner, prog string) Result {
	t.Helper()
	res, err := r.Run(context.Background(), prog)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPassAndFail(t *testing.T) {
	r := newRunner(t)
	for _, c := range []struct {
		prog string
		want Status
	}{
		{"def add(a, b):\n    return a + b\nassert add(2, 3) == 5\n", Passed},
		{"def add(a, b):\n    return a * b\nassert add(2, 3) == 5\n", Failed},
		{"import sys\nsys.exit(0)\n", Failed}, // leaving early is not passing (code_eval: SystemExit fails)
		{"import os\nos._exit(0)\n", Failed},
		{"def f(:\n", Failed},
		{"import os\nassert 'SECRET_TOKEN' not in os.environ and os.environ.get('HOME') == os.getcwd()\n", Passed},
	} {
		if res := run(t, r, c.prog); res.Status != c.want {
			t.Errorf("%q: %s (exit %d), want %s\n%s", c.prog, res.Status, res.ExitCode, c.want, res.Output)
		}
	}
}

func TestSecretsAreNotInherited(t *testing.T) {
	t.Setenv("SECRET_TOKEN", "hunter2")
	r := newRunner(t)
	res := run(t, r, "import os\nprint(sorted(os.environ))\nassert 'SECRET_TOKEN' not in os.environ\n")
	if res.Status != Passed || strings.Contains(res.Output, "hunter2") {
		t.Errorf("%s: %s", res.Status, res.Output)
	}
}

// TestRunawayPrograms runs the programs a sandbox exists for; each must be
// stopped and scored as a failure, and the host must be fine afterwards.
func TestRunawayPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hostile programs for a few seconds")
	}
	// The runs' private folders go under this test's own TMPDIR, so that
	// the leftover check below sees only this test's processes, not the
	// sandboxes other packages' tests run at the same time.
	// The folder must be searchable by the unprivileged user the sandbox
	// runs programs as when the test runs as root (t.TempDir's are 0700).
	root, err := os.MkdirTemp("", "ttis-sandbox-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", root)
	r := newRunner(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connected atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cases := []struct {
		name string
		prog string
		want []Status
	}{
		{"infinite loop", "while True:\n    pass\n", []Status{Timeout, Failed}},
		{"sleep", "import time\ntime.sleep(60)\n", []Status{Timeout}},
		{"fork bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", []Status{Timeout, Failed}},
		{"10 GB allocation", "x = bytearray(10 * 1024**3)\nx[-1] = 1\n", []Status{Failed}},
		{"network call", "import socket\ns = socket.create_connection(('127.0.0.1', " + itoa(port) + "), timeout=2)\ns.close()\n", []Status{Failed}},
		{"big file", "with open('big', 'wb') as f:\n    f.write(b'x' * (64 << 20))\n", []Status{Failed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			res := run(t, r, c.prog)
			ok := false
			for _, w := range c.want {
				ok = ok || res.Status == w
			}
			if !ok {
				t.Errorf("%s: %s (exit %d, isolation %s), want one of %v\n%s", c.name, res.Status, res.ExitCode, res.Isolation, c.want, res.Output)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("%s took %s: the time limit did not hold", c.name, el)
			}
		})
	}
	if strings.HasPrefix(r.isolation(), "net") && connected.Load() != 0 {
		t.Errorf("the program reached the host's listener %d times despite its network namespace", connected.Load())
	}
	// The host can still start processes and nothing of the runs is left.
	if res := run(t, r, "pass\n"); res.Status != Passed {
		t.Errorf("after the runaway programs a trivial one %s: %s", res.Status, res.Output)
	}
	if left := leftovers(t, root); left != "" {
		t.Errorf("sandbox processes left running: %s", left)
	}
}

func (r *Runner) isolation() string {
	if r.nsOK {
		return "net,pid,ipc,uts"
	}
	return "none"
}

// leftovers lists running processes whose command line holds the
// sandbox's prologue and whose environment (fixed at exec, inherited by
// forks) puts TMPDIR under root: the processes of this test's runs.
func leftovers(t *testing.T, root string) string {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), "SANDBOX_NONCE") {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && !strings.Contains(string(env), "TMPDIR="+root+"/") {
			continue // another test's sandbox
		}
		out = append(out, e.Name())
	}
	return strings.Join(out, ",")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestMissingPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := New(DefaultLimits()); err == nil || !strings.Contains(err.Error(), "install python3") {
		t.Errorf("no python: %v", err)
	}
}
