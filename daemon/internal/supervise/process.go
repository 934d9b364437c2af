package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
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
	// WaitDelay bounds how long Wait drains output pipes held open by
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The child writes into pipes the daemon reads with small buffers;
	// handing exec.Cmd plain io.Writers would cost two 32 KiB copy buffers
	// per unit, which adds up with many units.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	// The child has its copies; the parent's write ends must go, or the
	// readers never see the end of the output.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", e.Path, err)
	}
	p := &execProcess{cmd: cmd, pipes: []*os.File{outR, errR}, waitDelay: e.WaitDelay}
	if p.waitDelay == 0 {
		p.waitDelay = 2 * time.Second
	}
	p.readers.Add(2)
	go p.pump(outR, stdout)
	go p.pump(errR, stderr)
	return p, nil
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

type execProcess struct {
	cmd       *exec.Cmd
	pipes     []*os.File
	readers   sync.WaitGroup
	waitDelay time.Duration
}

// pump copies one output pipe to w until the last writer closes it.
func (p *execProcess) pump(r *os.File, w io.Writer) {
	defer p.readers.Done()
	defer r.Close()
	buf := make([]byte, 4<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

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
	// Drain the output, but do not wait forever for a grandchild that
	// keeps the pipes open.
	drained := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(drained)
	}()
	t := time.NewTimer(p.waitDelay)
	select {
	case <-drained:
	case <-t.C:
		for _, f := range p.pipes {
			f.Close()
		}
		<-drained
	}
	t.Stop()
	ps := p.cmd.ProcessState
	if ps == nil {
		return Exit{Err: err}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Signal: ws.Signal()}
	}
	return Exit{Code: ps.ExitCode()}
}
