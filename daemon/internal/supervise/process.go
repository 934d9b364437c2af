package supervise

import (
	"fmt"
	"io"
	"syscall"
)

// Process is one running server process and its process group.
type Process interface {
	// Pid is the process id; it is also the process group id.
	Pid() int
	// Signal sends sig to the whole process group.
	Signal(sig syscall.Signal) error
	// SignalMain sends sig to the server process alone (SIGHUP: re-read
	// the unit file), not to the runtimes it started.
	SignalMain(sig syscall.Signal) error
	// Wait blocks until the process has exited and its output is drained.
	Wait() Exit
}

// Starter starts a unit's server process, writing its output to stdout and
// stderr. The daemon starts "ttisd serve UNIT_FILE"; tests start a fake.
type Starter interface {
	Start(spec Spec, stdout, stderr io.Writer) (Process, error)
}

// Adopter attaches to a server process of spec that an earlier daemon
// started: pid, started at start (clock ticks since boot, see
// proc.StartTime). Its output continues to stdout and stderr.
type Adopter interface {
	Adopt(spec Spec, pid int, start uint64, stdout, stderr io.Writer) (Process, error)
}

// Exit describes how a process ended.
type Exit struct {
	// Code is the exit status when the process exited by itself.
	Code int
	// Signal is the signal that killed the process, 0 if it exited.
	Signal syscall.Signal
	// Err is set when waiting failed for another reason.
	Err error
	// Unknown: the process ended but its status cannot be known (an
	// adopted process, whose parent was the daemon before).
	Unknown bool
}

// Clean reports whether systemd would call the exit clean: status 0, or
// death by SIGHUP, SIGINT, SIGTERM or SIGPIPE.
func (e Exit) Clean() bool {
	if e.Err != nil || e.Unknown {
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
	case e.Unknown:
		return "code=unknown (adopted process)"
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
