package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/daemon/internal/proc"
)

// ExecStarter runs Path with Args followed by the unit file, in its own
// process group, with an environment scrubbed of systemd's per-service
// variables so the child cannot talk to systemd as if it were ttisd.
//
// The server's stdout and stderr are files in LogDir, not pipes to the
// daemon: a server must outlive the daemon that started it (a crashed or
// upgraded ttisd is replaced by one that adopts its servers), and a pipe
// whose reader died would kill it with SIGPIPE at its next log line, or
// block it once full. The daemon tails the files into the unit's log ring
// and its own log; lines written while no daemon runs wait in the file for
// the next one.
type ExecStarter struct {
	// Path is the executable, normally ttisd itself (os.Executable()).
	Path string
	// Args come before the unit file path; the daemon uses ["serve"].
	Args []string
	// Env is the child's environment; nil means os.Environ().
	Env []string
	// LogDir holds each unit's <name>.stdout and <name>.stderr files.
	LogDir string
	// Poll is how often the output files are read; zero means 100ms.
	Poll time.Duration
}

// scrubbedEnv lists the variables systemd hands to ttisd alone.
var scrubbedEnv = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"}

// OutputFiles returns the paths of a unit's stdout and stderr files.
func (e ExecStarter) OutputFiles(unit string) (stdout, stderr string) {
	return filepath.Join(e.LogDir, unit+".stdout"), filepath.Join(e.LogDir, unit+".stderr")
}

// Forget removes a unit's output files once the unit is gone.
func (e ExecStarter) Forget(unit string) {
	out, errPath := e.OutputFiles(unit)
	for _, p := range []string{out, errPath, out + ".offset", errPath + ".offset"} {
		_ = os.Remove(p)
	}
}

func (e ExecStarter) poll() time.Duration {
	if e.Poll > 0 {
		return e.Poll
	}
	return 100 * time.Millisecond
}

// Start implements Starter.
func (e ExecStarter) Start(spec Spec, stdout, stderr io.Writer) (Process, error) {
	if e.Path == "" {
		return nil, errors.New("no server executable configured")
	}
	if e.LogDir == "" {
		return nil, errors.New("no folder for server output configured")
	}
	if err := os.MkdirAll(e.LogDir, 0o750); err != nil {
		return nil, fmt.Errorf("server output folder: %w", err)
	}
	args := append(append([]string(nil), e.Args...), spec.UnitFile)
	cmd := exec.Command(e.Path, args...)
	env := e.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = scrub(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outPath, errPath := e.OutputFiles(spec.Name)
	// The previous process of the unit was drained when it ended: start
	// the files afresh.
	var writers []*os.File
	defer func() {
		for _, f := range writers {
			f.Close()
		}
	}()
	for _, p := range []string{outPath, errPath} {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o640)
		if err != nil {
			return nil, fmt.Errorf("server output: %w", err)
		}
		writers = append(writers, f)
	}
	cmd.Stdout, cmd.Stderr = writers[0], writers[1]
	tails, err := openTails([]string{outPath, errPath}, []io.Writer{stdout, stderr}, false)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		tails.close()
		return nil, fmt.Errorf("start %s: %w", e.Path, err)
	}
	go tails.follow(e.poll())
	return &execProcess{cmd: cmd, tails: tails}, nil
}

// Adopt implements Adopter: the process's output files are tailed from
// where the earlier daemon stopped reading, so lines printed while no
// daemon ran are not lost and none is shown twice.
func (e ExecStarter) Adopt(spec Spec, pid int, start uint64, stdout, stderr io.Writer) (Process, error) {
	h, err := proc.Open(pid, start)
	if err != nil {
		return nil, err
	}
	outPath, errPath := e.OutputFiles(spec.Name)
	tails, err := openTails([]string{outPath, errPath}, []io.Writer{stdout, stderr}, true)
	if err != nil {
		h.Close()
		return nil, err
	}
	go tails.follow(e.poll())
	return &adoptedProcess{h: h, tails: tails}, nil
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

// signalGroup sends sig to the process group pid leads (Setpgid).
func signalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}
	return nil
}

type execProcess struct {
	cmd   *exec.Cmd
	tails *tails
}

func (p *execProcess) Pid() int { return p.cmd.Process.Pid }

func (p *execProcess) Signal(sig syscall.Signal) error { return signalGroup(p.cmd.Process.Pid, sig) }

func (p *execProcess) SignalMain(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (p *execProcess) Wait() Exit {
	err := p.cmd.Wait()
	p.tails.stop()
	ps := p.cmd.ProcessState
	if ps == nil {
		return Exit{Err: err}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Signal: ws.Signal()}
	}
	return Exit{Code: ps.ExitCode()}
}

// adoptedProcess is a server an earlier daemon started; this one is not
// its parent.
type adoptedProcess struct {
	h     *proc.Handle
	tails *tails
}

func (p *adoptedProcess) Pid() int { return p.h.Pid() }

func (p *adoptedProcess) Signal(sig syscall.Signal) error { return signalGroup(p.h.Pid(), sig) }

func (p *adoptedProcess) SignalMain(sig syscall.Signal) error { return p.h.Signal(sig) }

func (p *adoptedProcess) Wait() Exit {
	p.h.Wait()
	p.h.Close()
	p.tails.stop()
	return Exit{Unknown: true}
}
