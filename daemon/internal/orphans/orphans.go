// Package orphans remembers which server processes the daemon started and
// what each one runs, so that a daemon started after a crash, an upgrade or
// a SIGKILL can adopt the servers its predecessor left running, and stop
// those it cannot adopt before starting new ones on the same ports and
// chips.
package orphans

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

	"github.com/ttis-dev/ttis/daemon/internal/proc"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/hardened"
)

// Bounds on what the registry reads: a record holds a unit's text (at most
// units.MaxFileBytes, JSON-escaped), a legacy record two numbers, and the
// folder one record per unit.
const (
	maxRecordBytes       = 8 * units.MaxFileBytes
	maxLegacyRecordBytes = 4 << 10
	maxRecords           = 100_000
)

// readFile reads one of the registry's files, or the unit text a server
// runs, the hardened way: the state folder is writable by others than
// this daemon, and a pipe there must not stall the supervisor.
func readFile(path string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), units.ReadTimeout)
	defer cancel()
	return hardened.ReadFile(ctx, path, max)
}

// Registry keeps one file per unit, "<unit>.json", describing its server.
type Registry struct {
	Dir string
}

// Server is one recorded server process.
type Server struct {
	Unit string `json:"-"`
	PID  int    `json:"pid"`
	// Start is the process start time (clock ticks since boot), so a
	// recycled pid is never mistaken for it.
	Start  uint64 `json:"start_time"`
	Listen string `json:"listen"`
	// Text is the unit text the server loaded and Hash its SHA-256 (hex),
	// which the server reports on /health. Empty for records of a ttisd
	// too old to write them: such a server cannot be adopted.
	Hash string `json:"unit_hash,omitempty"`
	Text string `json:"unit_text,omitempty"`
}

// Record notes that unit's server runs as pid, listening on listen, with
// the text of unitFile (which it has just read, at start or on SIGHUP).
func (r Registry) Record(unit string, pid int, listen, unitFile string) error {
	start, err := proc.StartTime(pid)
	if err != nil {
		return err
	}
	text, err := readFile(unitFile, units.MaxFileBytes)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(text)
	s := Server{PID: pid, Start: start, Listen: listen, Hash: hex.EncodeToString(sum[:]), Text: string(text)}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.Dir, 0o750); err != nil {
		return err
	}
	// The text may name a secret file: keep the record private.
	return renameio.WriteFile(filepath.Join(r.Dir, unit+".json"), append(b, '\n'), 0o600, renameio.WithTempDir(r.Dir))
}

// Forget removes unit's record if it still names pid.
func (r Registry) Forget(unit string, pid int) {
	path := filepath.Join(r.Dir, unit+".json")
	if s, err := readRecord(path); err == nil && s.PID == pid {
		_ = os.Remove(path)
	}
}

// Servers returns the recorded servers that still run, each the leader of
// its own process group. Records of processes that are gone are removed.
func (r Registry) Servers() ([]Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), units.ReadTimeout)
	entries, err := hardened.ReadDir(ctx, r.Dir, maxRecords)
	cancel()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read server records: %w", err)
	}
	var out []Server
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(r.Dir, e.Name())
		var s Server
		var err error
		if unit, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			s, err = readRecord(path)
			s.Unit = unit
		} else if unit, ok := strings.CutSuffix(e.Name(), ".pid"); ok {
			// An older ttisd's "<pid> <start>" record: stop, never adopt.
			s, err = readLegacy(path)
			s.Unit = unit
			_ = os.Remove(path)
		} else {
			continue
		}
		if err != nil || !alive(s) {
			_ = os.Remove(path)
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// alive reports whether s still runs as the leader of its process group.
func alive(s Server) bool {
	if st, err := proc.StartTime(s.PID); err != nil || st != s.Start || !proc.Running(s.PID) {
		return false
	}
	pgid, err := syscall.Getpgid(s.PID)
	return err == nil && pgid == s.PID
}

// Stop stops servers (SIGTERM to each process group, SIGKILL after grace)
// and removes their records.
func (r Registry) Stop(servers []Server, grace time.Duration) {
	for _, s := range servers {
		_ = os.Remove(filepath.Join(r.Dir, s.Unit+".json"))
		if !alive(s) {
			continue
		}
		_ = syscall.Kill(-s.PID, syscall.SIGTERM)
		_ = syscall.Kill(-s.PID, syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	for _, s := range servers {
		for alive(s) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		// The group may hold grandchildren even when the leader is gone.
		_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	}
}

func readRecord(path string) (Server, error) {
	var s Server
	b, err := readFile(path, maxRecordBytes)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.PID <= 1 {
		return s, fmt.Errorf("%s: malformed pid", path)
	}
	return s, nil
}

func readLegacy(path string) (Server, error) {
	var s Server
	b, err := readFile(path, maxLegacyRecordBytes)
	if err != nil {
		return s, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return s, fmt.Errorf("%s: malformed record", path)
	}
	if s.PID, err = strconv.Atoi(f[0]); err != nil || s.PID <= 1 {
		return s, fmt.Errorf("%s: malformed pid", path)
	}
	if s.Start, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return s, fmt.Errorf("%s: malformed start time", path)
	}
	return s, nil
}
