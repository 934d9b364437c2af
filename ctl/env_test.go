package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/cmd/testbin"
	daemonclient "github.com/ttis-dev/ttis/daemon/api/client"
)

// leafCommands lists the path of every command of the live tree that runs
// (one without subcommands).
func leafCommands(cmds []*cli.Command, prefix []string) [][]string {
	var out [][]string
	for _, c := range cmds {
		p := append(slices.Clone(prefix), c.Name)
		if len(c.Subcommands) > 0 {
			out = append(out, leafCommands(c.Subcommands, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// findPath finds a command of app by its path.
func findPath(app *cli.App, path []string) *cli.Command {
	cmds := app.Commands
	var c *cli.Command
	for _, name := range path {
		if c = findCommand(cmds, name); c == nil {
			return nil
		}
		cmds = c.Subcommands
	}
	return c
}

// envCase is how the test sets a flag with an environment variable: the
// variable's value, the flag as written, and what each must read as.
func envCase(t *testing.T, f cli.Flag) (env, fromEnv string, flag []string, fromFlag string) {
	name := "--" + f.Names()[0]
	switch f.(type) {
	case *cli.StringFlag:
		return "from-env", "from-env", []string{name, "from-flag"}, "from-flag"
	case *cli.BoolFlag:
		return "true", "true", []string{name + "=false"}, "false"
	case *cli.IntFlag:
		return "123", "123", []string{name, "456"}, "456"
	case *cli.DurationFlag:
		return "3s", "3s", []string{name, "5s"}, "5s"
	}
	t.Fatalf("flag %s (%T) has an environment variable: give its type a case here", name, f)
	return
}

// seen runs ttisctl's command at path with args and returns what the
// command read for the flag name (the command's action is replaced by one
// that records it; everything before it, the argument reordering and
// urfave/cli's parsing, is ttisctl's own).
func seen(t *testing.T, path []string, name string, args []string) string {
	t.Helper()
	app := App("test")
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	leaf := findPath(app, path)
	var got string
	leaf.Action = func(c *cli.Context) error {
		if isGlobal(name) {
			got = global(c, name)
		} else {
			got = fmt.Sprint(c.Value(name))
		}
		return nil
	}
	// Required flags get a value, so that the action runs.
	for _, f := range leaf.Flags {
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			args = append(args, "--"+f.Names()[0], "x")
		}
	}
	full, _ := reorder(app, append([]string{"ttisctl"}, args...))
	if err := app.RunContext(context.Background(), full); err != nil {
		t.Fatalf("ttisctl %s: %v", strings.Join(args, " "), err)
	}
	return got
}

// An explicit flag beats its environment variable wherever it stands:
// before the command (a global flag), between a command and its
// subcommand, after the command, after its arguments. Every command of the
// live tree and every flag with an environment variable is tried, so a new
// one is covered without editing this test; each is also run without the
// flag, to show the variable is read at all.
func TestFlagBeatsEnvironment(t *testing.T) {
	app := App("test")
	n := 0
	for _, path := range leafCommands(app.Commands, nil) {
		leaf := findPath(app, path)
		for _, f := range leaf.Flags {
			ef, ok := f.(interface{ GetEnvVars() []string })
			if !ok || len(ef.GetEnvVars()) == 0 {
				continue
			}
			name := f.Names()[0]
			env, fromEnv, flag, fromFlag := envCase(t, f)
			for _, v := range ef.GetEnvVars() {
				t.Run(strings.Join(path, "_")+"/"+name+"/"+v, func(t *testing.T) {
					t.Setenv(v, env)
					arg := []string{"ARG"}
					if got := seen(t, path, name, append(slices.Clone(path), arg...)); got != fromEnv {
						t.Fatalf("%s=%s without --%s: the command read %q, want %q", v, env, name, got, fromEnv)
					}
					positions := map[string][]string{
						"after the command":   slices.Concat(path, flag, arg),
						"after the arguments": slices.Concat(path, arg, flag),
					}
					if isGlobal(name) {
						positions["before the command"] = slices.Concat(flag, path, arg)
						if len(path) > 1 {
							positions["between command and subcommand"] = slices.Concat(path[:1], flag, path[1:], arg)
						}
					}
					for where, args := range positions {
						if got := seen(t, path, name, args); got != fromFlag {
							t.Errorf("%s=%s ttisctl %s (flag %s): the command read %q, want %q", v, env, strings.Join(args, " "), where, got, fromFlag)
						}
					}
				})
				n++
			}
		}
	}
	// The global --socket alone is on every command; the Hub and API-key
	// flags on the workflow and dataset commands.
	if n < len(leafCommands(app.Commands, nil)) {
		t.Fatalf("only %d (command, variable) pairs tried", n)
	}
}

// startDaemon runs a real ttisd in dir whose only unit, unit, is disabled
// (listed, never started), and returns its control socket.
func startDaemon(t *testing.T, dir, unit string) string {
	t.Helper()
	text := "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:1\"\ndisabled = true\n"
	return runDaemon(t, dir, map[string]string{unit: text})
}

// runDaemon runs a real ttisd in dir on the unit files given (name →
// text) with extra flags, and returns its control socket once it lists
// them.
func runDaemon(t *testing.T, dir string, files map[string]string, extra ...string) string {
	t.Helper()
	bin := testbin.Path(t, "ttisd", false)
	units := filepath.Join(dir, "units")
	if err := os.MkdirAll(units, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(units, name+".toml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "s.sock")
	logPath := filepath.Join(dir, "ttisd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	args := append([]string{"--units-dir", units, "--state-dir", filepath.Join(dir, "state"), "--socket", sock, "--socket-group", "",
		"--device-root", filepath.Join(dir, "dev"), "--log-format", "json"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	dc := daemonclient.New(sock)
	for deadline := time.Now().Add(30 * time.Second); ; {
		list, err := dc.Units(context.Background())
		if err == nil && len(list.Units) == len(files) {
			return sock
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("ttisd did not list its %d units within 30s; log:\n%s", len(files), b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With two real daemons, the real ttisctl talks to the one --socket names
// whatever TTIS_SOCKET says, before or after the command; without the
// flag, to TTIS_SOCKET's.
func TestSocketFlagBeatsEnvironmentTwoDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts two ttisd; TestFlagBeatsEnvironment covers the parsing")
	}
	ctl := testbin.Path(t, "ttisctl", false)
	sockA := startDaemon(t, t.TempDir(), "only-on-a")
	sockB := startDaemon(t, t.TempDir(), "only-on-b")
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(ctl, args...)
		cmd.Env = append(os.Environ(), "TTIS_SOCKET="+sockA)
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
	for _, args := range [][]string{
		{"--socket", sockB, "status"},
		{"status", "--socket", sockB},
		{"--socket", sockB, "status", "-o", "json"},
	} {
		out, code := run(args...)
		if code != 0 || !strings.Contains(out, "only-on-b") || strings.Contains(out, "only-on-a") {
			t.Errorf("TTIS_SOCKET=A ttisctl %s: exit %d, want daemon B's unit only:\n%s", strings.Join(args, " "), code, out)
		}
	}
	// A command that acts: stopping B's unit through B succeeds; through A
	// it would be an unknown unit (exit 4).
	if out, code := run("--socket", sockB, "stop", "only-on-b"); code != 0 {
		t.Errorf("TTIS_SOCKET=A ttisctl --socket B stop only-on-b: exit %d:\n%s", code, out)
	}
	if out, code := run("status"); code != 0 || !strings.Contains(out, "only-on-a") || strings.Contains(out, "only-on-b") {
		t.Errorf("TTIS_SOCKET=A ttisctl status (no flag): exit %d, want daemon A's unit:\n%s", code, out)
	}
}
