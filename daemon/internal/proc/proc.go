// Package proc watches processes the daemon is not the parent of: server
// processes an earlier ttisd started and a new ttisd adopts. A process is
// named by its pid and its start time (so a recycled pid is never mistaken
// for it); exits are seen through a pidfd, or by polling /proc on kernels
// without pidfd (before Linux 5.3).
package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// StartTime reads field 22 of /proc/PID/stat: the process start time in
// clock ticks since boot.
func StartTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Running reports whether pid exists and has not exited (a zombie has).
func Running(pid int) bool {
	f, err := statFields(pid)
	return err == nil && len(f) > 0 && f[0] != "Z"
}

// statFields returns the fields of /proc/PID/stat after the command name.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// ErrGone is returned by Open for a process that is no longer the one
// named (exited, or its pid reused).
var ErrGone = errors.New("process is gone")

// Handle is an open process that is not our child. Its methods may be
// called from several goroutines.
type Handle struct {
	pid   int
	start uint64
	poll  time.Duration

	mu sync.Mutex
	fd int // pidfd, -1 when the kernel has none or after Close
}

// Open opens the process pid that started at start (clock ticks, see
// StartTime). It fails with ErrGone when no such process runs.
func Open(pid int, start uint64) (*Handle, error) {
	h := &Handle{pid: pid, start: start, fd: -1, poll: 200 * time.Millisecond}
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		h.fd = fd
	case errors.Is(err, unix.ESRCH):
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		// No pidfd here (old kernel, seccomp filter): poll /proc.
	default:
		return nil, fmt.Errorf("pidfd of %d: %w", pid, err)
	}
	// Checked after the pidfd exists, so the pidfd names this process
	// and not one that got its pid after it exited.
	if st, err := StartTime(pid); err != nil || st != start || !Running(pid) {
		h.Close()
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return h, nil
}

// Pid is the process id.
func (h *Handle) Pid() int { return h.pid }

// Wait blocks until the process has exited. Its exit status cannot be
// known: only a parent learns it.
func (h *Handle) Wait() {
	h.mu.Lock()
	fd := h.fd
	h.mu.Unlock()
	if fd >= 0 {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}
	for h.alive() {
		time.Sleep(h.poll)
	}
}

func (h *Handle) alive() bool {
	st, err := StartTime(h.pid)
	return err == nil && st == h.start && Running(h.pid)
}

// Signal sends sig to the process itself.
func (h *Handle) Signal(sig syscall.Signal) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		err := unix.PidfdSendSignal(h.fd, sig, nil, 0)
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return err
	}
	if !h.alive() {
		return nil
	}
	if err := syscall.Kill(h.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Close releases the pidfd; call it once Wait has returned.
func (h *Handle) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}
