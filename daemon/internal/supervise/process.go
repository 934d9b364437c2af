package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is one running server process and its process group.
type Process interface {
	// Pid is the process id; it is also the process group id.
	Pid() int
	// Signal sends sig to the whole process group.
	Signal(sig syscall.Signal) error
	// Wait blocks until the process has exited and its output is drained.
	Wait() Exit
}

// Starter starts a unit's server process, writing its output to stdout and
// stderr. The daemon starts "ttisd serve UNIT_FILE"; tests start a fake.
type Starter interface {
	Start(spec Spec, stdout, stderr io.Writer) (Process, error)
}

// Exit describes how a process ended.
type Exit struct {
	// Code is the exit status when the process exited by itself.
	Code int
	// Signal is the signal that killed the process, 0 if it exited.
	Signal syscall.Signal
	// Err is set when waiting failed for another reason.
	Err error
}

// Clean reports whether systemd would call the exit clean: status 0, or
// death by SIGHUP, SIGINT, SIGTERM or SIGPIPE.
func (e Exit) Clean() bool {
	if e.Err != nil {
		return false
	}
	switch e.Signal {
	case 0:
		return e.Code == 0
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE:
		return true
	}
	return false
}

// String formats the exit like systemctl's "Main PID" line.
func (e Exit) String() string {
	switch {
	case e.Err != nil:
		return "wait failed: " + e.Err.Error()
	case e.Signal != 0:
		return "code=killed, signal=" + signalName(e.Signal)
	default:
		return fmt.Sprintf("code=exited, status=%d", e.Code)
	}
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "HUP", syscall.SIGINT: "INT", syscall.SIGQUIT: "QUIT", syscall.SIGILL: "ILL",
		syscall.SIGABRT: "ABRT", syscall.SIGBUS: "BUS", syscall.SIGFPE: "FPE", syscall.SIGKILL: "KILL",
		syscall.SIGSEGV: "SEGV", syscall.SIGPIPE: "PIPE", syscall.SIGTERM: "TERM",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprint(int(s))
}

// ExecStarter runs Path with Args followed by the unit file, in its own
// process group, with an environment scrubbed of systemd's per-service
// variables so the child cannot talk to systemd as if it were ttisd.
type ExecStarter struct {
	// Path is the executable, normally ttisd itself (os.Executable()).
	Path string
	// Args come before the unit file path; the daemon uses ["serve"].
	Args []string
	// Env is the child's environment; nil means os.Environ().
	Env []string
	// WaitDelay bounds how long Wait waits for output pipes held open by
	// grandchildren after the process itself exited. Zero means 2s.
	WaitDelay time.Duration
}

// scrubbedEnv lists the variables systemd hands to ttisd alone.
var scrubbedEnv = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"}

// Start implements Starter.
func (e ExecStarter) Start(spec Spec, stdout, stderr io.Writer) (Process, error) {
	if e.Path == "" {
		return nil, errors.New("no server executable configured")
	}
	args := append(append([]string(nil), e.Args...), spec.UnitFile)
	cmd := exec.Command(e.Path, args...)
	env := e.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = scrub(env)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = e.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", e.Path, err)
	}
	return &execProcess{cmd: cmd}, nil
}

func scrub(env []string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		for _, name := range scrubbedEnv {
			if strings.HasPrefix(kv, name+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

type execProcess struct{ cmd *exec.Cmd }

func (p *execProcess) Pid() int { return p.cmd.Process.Pid }

func (p *execProcess) Signal(sig syscall.Signal) error {
	// Negative pid: the whole process group the child leads (Setpgid).
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.cmd.Process.Pid, err)
	}
	return nil
}

func (p *execProcess) Wait() Exit {
	err := p.cmd.Wait()
	ps := p.cmd.ProcessState
	if ps == nil {
		return Exit{Err: err}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Signal: ws.Signal()}
	}
	// exec.ErrWaitDelay only says a grandchild kept the pipes open; the
	// exit status itself is valid.
	return Exit{Code: ps.ExitCode()}
}
