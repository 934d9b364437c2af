// Package orphans remembers which server processes the daemon started, so
// that a daemon started after a crash (or a SIGKILL outside systemd, whose
// cgroup would otherwise clean up) can stop the servers its predecessor
// left behind before starting new ones on the same ports and chips.
package orphans

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// Registry keeps one file per unit, "<unit>.pid", holding the server's pid
// and its start time (so a recycled pid is never mistaken for it).
type Registry struct {
	Dir string
}

// Record notes that unit's server runs as pid.
func (r Registry) Record(unit string, pid int) error {
	start, err := startTime(pid)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.Dir, 0o750); err != nil {
		return err
	}
	return renameio.WriteFile(filepath.Join(r.Dir, unit+".pid"), fmt.Appendf(nil, "%d %d\n", pid, start), 0o600, renameio.WithTempDir(r.Dir))
}

// Forget removes unit's record if it still names pid.
func (r Registry) Forget(unit string, pid int) {
	path := filepath.Join(r.Dir, unit+".pid")
	if p, _, err := readRecord(path); err == nil && p == pid {
		_ = os.Remove(path)
	}
}

// Reaped is a leftover server that Reap stopped.
type Reaped struct {
	Unit string
	PID  int
}

// Reap stops every recorded server that is still running (SIGTERM to its
// process group, SIGKILL after grace) and clears the records.
func (r Registry) Reap(grace time.Duration) ([]Reaped, error) {
	entries, err := os.ReadDir(r.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read server records: %w", err)
	}
	var alive []Reaped
	for _, e := range entries {
		unit, ok := strings.CutSuffix(e.Name(), ".pid")
		if !ok || strings.HasPrefix(unit, ".") {
			continue
		}
		path := filepath.Join(r.Dir, e.Name())
		pid, start, err := readRecord(path)
		_ = os.Remove(path)
		if err != nil {
			continue
		}
		// Only the same process (same start time) leading its own group.
		if st, err := startTime(pid); err != nil || st != start {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			continue
		}
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		_ = syscall.Kill(-pid, syscall.SIGCONT)
		alive = append(alive, Reaped{Unit: unit, PID: pid})
	}
	deadline := time.Now().Add(grace)
	for _, a := range alive {
		for running(a.PID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		// The group may hold grandchildren even when the leader is gone.
		_ = syscall.Kill(-a.PID, syscall.SIGKILL)
	}
	return alive, nil
}

func readRecord(path string) (pid int, start uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("%s: malformed record", path)
	}
	if pid, err = strconv.Atoi(f[0]); err != nil || pid <= 1 {
		return 0, 0, fmt.Errorf("%s: malformed pid", path)
	}
	if start, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%s: malformed start time", path)
	}
	return pid, start, nil
}

// startTime reads field 22 of /proc/PID/stat: the process start time in
// clock ticks since boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// running reports whether pid exists and has not exited (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
