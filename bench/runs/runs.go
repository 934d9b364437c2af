// Package runs is ttis's results store: one folder per workflow run under
// <state_dir>/runs/<unit>/<run-id>/, described by a run.json manifest. Every
// file is written through a temporary file in the same folder, fsync and
// rename (bench/result.WriteFileAtomic), so a crash never leaves a half file
// under its final name. A run stopped by a signal says interrupted; one whose
// manifest still says "running" after its process has gone (killed, host
// crash) is reported as interrupted too.
package runs

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/bench/result"
)

// ManifestFile is the name of a run's manifest.
const ManifestFile = "run.json"

// Run statuses.
const (
	StatusRunning    = "running"
	StatusComplete   = "complete"
	StatusFailed     = "failed"
	StatusIncomplete = "incomplete"
	// StatusInterrupted is written for a run stopped by a signal (its
	// finished parts are kept), and reported by List and Open for a run
	// whose manifest says running but whose process is gone.
	StatusInterrupted = "interrupted"
)

// Manifest is run.json.
type Manifest struct {
	ID        string `json:"id"`
	Unit      string `json:"unit"`
	Model     string `json:"model"`
	Device    string `json:"device,omitempty"`
	Runtime   string `json:"runtime,omitempty"`
	Simulated bool   `json:"simulated"`
	// Workflow is benchmarks, evals, tests or release.
	Workflow string `json:"workflow"`
	// Limit is the run size (units/limit).
	Limit    string     `json:"limit,omitempty"`
	BaseURL  string     `json:"base_url,omitempty"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished,omitempty"`
	// Status is running, complete, failed, incomplete or interrupted.
	Status string `json:"status"`
	// Verdict is the report's verdict once it is written (PASS, FAIL,
	// INCOMPLETE, UNGRADED; see bench/release).
	Verdict string `json:"verdict,omitempty"`
	// Conditions is what shaped the numbers: runtime, simulated, time
	// scale, device, chips, model file hash, versions (bench/target).
	Conditions map[string]string `json:"conditions,omitempty"`
	// Error says why a failed run stopped.
	Error string `json:"error,omitempty"`
	// Files are the run's files, relative to its folder.
	Files []string `json:"files"`
	// PID and Host identify the process writing the run, to tell a
	// running run from an interrupted one.
	PID  int    `json:"pid,omitempty"`
	Host string `json:"host,omitempty"`
	// Trigger says who started the run ("ttisctl", "schedule").
	Trigger string `json:"trigger,omitempty"`
}

// Duration is how long the run took (so far, for a running one).
func (m *Manifest) Duration(now time.Time) time.Duration {
	if m.Finished != nil {
		return m.Finished.Sub(m.Started)
	}
	return now.Sub(m.Started)
}

// Store is a results folder (<state_dir>/runs).
type Store struct {
	// Root is the folder holding one sub-folder per unit.
	Root string
	// Alive tells whether a process id is running on this host; nil uses
	// kill(pid, 0).
	Alive func(pid int) bool
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
	// Rand supplies the random part of run ids; nil uses crypto/rand.
	Rand io.Reader
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) alive(pid int) bool {
	if s.Alive != nil {
		return s.Alive(pid)
	}
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// idPattern matches run ids: UTC time, workflow, 6 hex digits.
var idPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[a-z0-9-]+-[0-9a-f]{6}$`)

// namePattern is what a unit or workflow name may contain in a path.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]*$`)

// NewID returns a run id "<YYYYMMDDTHHMMSSZ>-<workflow>-<6 hex>": ids sort
// by start time, and the random tail keeps two runs started in the same
// second apart.
func NewID(now time.Time, workflow string, rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [3]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	wf := strings.ToLower(workflow)
	if !namePattern.MatchString(wf) || strings.ContainsAny(wf, "._@+") {
		return "", fmt.Errorf("run id: workflow %q must be letters, digits and dashes", workflow)
	}
	return now.UTC().Format("20060102T150405Z") + "-" + wf + "-" + hex.EncodeToString(b[:]), nil
}

// CheckUnitName refuses a unit name that cannot be a folder name.
func CheckUnitName(unit string) error {
	if !namePattern.MatchString(unit) || unit == "." || unit == ".." {
		return fmt.Errorf("unit name %q: want letters, digits, '.', '_', '-', '@' or '+' (no leading dot)", unit)
	}
	return nil
}

// Run is a run being written.
type Run struct {
	store *Store
	// Dir is the run's folder.
	Dir string
	mu  sync.Mutex
	m   Manifest
}

// Create makes a run folder for m.Unit and writes its manifest with
// status running. m.ID, Started, Status, PID and Host are filled in.
func (s *Store) Create(m Manifest) (*Run, error) {
	if err := CheckUnitName(m.Unit); err != nil {
		return nil, err
	}
	// Full precision: runs started in the same second still list in
	// order.
	m.Started = s.now()
	id, err := NewID(m.Started, m.Workflow, s.Rand)
	if err != nil {
		return nil, err
	}
	m.ID = id
	m.Status = StatusRunning
	m.PID = os.Getpid()
	m.Host, _ = os.Hostname()
	m.Files = []string{}
	dir := filepath.Join(s.Root, m.Unit, id)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("results store: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results store: %w", err)
	}
	r := &Run{store: s, Dir: dir, m: m}
	if err := r.save(); err != nil {
		// A full disk: leave no folder without a manifest behind, which
		// no listing could explain. Remove only fails if something else
		// wrote there meanwhile; then it stays.
		_ = os.Remove(dir)
		return nil, err
	}
	return r, nil
}

// Reopen continues an unfinished run (interrupted, failed, or incomplete)
// found by Open's reference: its manifest goes back to running under this
// process, and the files it has are kept.
func (s *Store) Reopen(ref string) (*Run, error) {
	m, dir, err := s.Open(ref)
	if err != nil {
		return nil, err
	}
	switch m.Status {
	case StatusComplete:
		return nil, fmt.Errorf("run %s is complete: nothing to resume", m.ID)
	case StatusRunning:
		return nil, fmt.Errorf("run %s is still running (pid %d on %s)", m.ID, m.PID, m.Host)
	}
	m.Status, m.Verdict, m.Error, m.Finished = StatusRunning, "", "", nil
	m.PID = os.Getpid()
	m.Host, _ = os.Hostname()
	r := &Run{store: s, Dir: dir, m: m}
	if err := r.save(); err != nil {
		return nil, err
	}
	return r, nil
}

// Manifest returns a copy of the run's manifest.
func (r *Run) Manifest() Manifest {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	m.Files = slices.Clone(r.m.Files)
	return m
}

// ID is the run id.
func (r *Run) ID() string { return r.m.ID }

func (r *Run) save() error {
	b, err := json.MarshalIndent(r.m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", ManifestFile, err)
	}
	return result.WriteFileAtomic(filepath.Join(r.Dir, ManifestFile), append(b, '\n'))
}

// WriteFile writes data atomically to name (a path relative to the run
// folder; sub-folders are created) and records it in the manifest.
func (r *Run) WriteFile(name string, data []byte) error {
	clean := filepath.Clean(name)
	if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "..") || clean == ManifestFile {
		return fmt.Errorf("run file %q: want a relative path inside the run folder", name)
	}
	path := filepath.Join(r.Dir, clean)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := result.WriteFileAtomic(path, data); err != nil {
		return err
	}
	return r.AddFiles(path)
}

// AddFiles records files written by others (bench, evalsuite) inside the
// run folder; paths may be absolute or relative to it.
func (r *Run) AddFiles(paths ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		rel := p
		if filepath.IsAbs(p) {
			var err error
			if rel, err = filepath.Rel(r.Dir, p); err != nil || strings.HasPrefix(rel, "..") {
				return fmt.Errorf("file %s is outside run folder %s", p, r.Dir)
			}
		}
		rel = filepath.ToSlash(rel)
		if !slices.Contains(r.m.Files, rel) {
			r.m.Files = append(r.m.Files, rel)
		}
	}
	slices.Sort(r.m.Files)
	return r.save()
}

// Finish records the end of the run: status complete, failed, incomplete
// or interrupted, the verdict ("" when there is no report) and an error
// for failed or interrupted runs.
func (r *Run) Finish(status, verdict, errMsg string) error {
	switch status {
	case StatusComplete, StatusFailed, StatusIncomplete, StatusInterrupted:
	default:
		return fmt.Errorf("finish run %s: status %q: want complete, failed, incomplete or interrupted", r.m.ID, status)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.store.now()
	r.m.Finished = &t
	r.m.Status, r.m.Verdict, r.m.Error = status, verdict, errMsg
	return r.save()
}

// ParseManifest decodes a run.json; name is used in errors. The id must be
// a run id and the unit a valid unit name.
func ParseManifest(name string, b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", name, err)
	}
	if !idPattern.MatchString(m.ID) {
		return Manifest{}, fmt.Errorf("%s: field id: %q is not a run id", name, m.ID)
	}
	if err := CheckUnitName(m.Unit); err != nil {
		return Manifest{}, fmt.Errorf("%s: field unit: %w", name, err)
	}
	switch m.Status {
	case StatusRunning, StatusComplete, StatusFailed, StatusIncomplete, StatusInterrupted:
	default:
		return Manifest{}, fmt.Errorf("%s: field status: %q is not running, complete, failed, incomplete or interrupted", name, m.Status)
	}
	return m, nil
}

// readManifest reads a run folder's manifest and derives the interrupted
// status.
func (s *Store) readManifest(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, err
	}
	m, err := ParseManifest(path, b)
	if err != nil {
		return Manifest{}, err
	}
	if m.Status == StatusRunning {
		host, _ := os.Hostname()
		if (m.Host == "" || m.Host == host) && !s.alive(m.PID) {
			m.Status = StatusInterrupted
		}
	}
	return m, nil
}

// List returns the runs of unit (every unit when empty), newest first.
// Folders without a readable manifest (a run that crashed before its
// first write, a stray folder) are skipped; problems reading a manifest
// are returned next to the good runs.
func (s *Store) List(unit string) ([]Manifest, []error) {
	var unitsToRead []string
	if unit != "" {
		if err := CheckUnitName(unit); err != nil {
			return nil, []error{err}
		}
		unitsToRead = []string{unit}
	} else {
		ents, err := os.ReadDir(s.Root)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			return nil, []error{fmt.Errorf("results store: %w", err)}
		}
		for _, e := range ents {
			if e.IsDir() && CheckUnitName(e.Name()) == nil {
				unitsToRead = append(unitsToRead, e.Name())
			}
		}
	}
	var out []Manifest
	var errs []error
	for _, u := range unitsToRead {
		ents, err := os.ReadDir(filepath.Join(s.Root, u))
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("results store: %w", err))
			}
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !idPattern.MatchString(e.Name()) {
				continue
			}
			m, err := s.readManifest(filepath.Join(s.Root, u, e.Name()))
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
				continue
			}
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Manifest) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, errs
}

// Dir is the folder of a run.
func (s *Store) Dir(m Manifest) string { return filepath.Join(s.Root, m.Unit, m.ID) }

// Open finds a run by id, unique id prefix, or the path of its folder.
func (s *Store) Open(ref string) (Manifest, string, error) {
	if ref == "" {
		return Manifest{}, "", errors.New("no run given")
	}
	if st, err := os.Stat(ref); err == nil && st.IsDir() && strings.ContainsRune(ref, filepath.Separator) {
		m, err := s.readManifest(ref)
		if err != nil {
			return Manifest{}, "", fmt.Errorf("run %s: %w", ref, err)
		}
		return m, ref, nil
	}
	all, errs := s.List("")
	var hits []Manifest
	for _, m := range all {
		if m.ID == ref {
			return m, s.Dir(m), nil
		}
		if strings.HasPrefix(m.ID, ref) {
			hits = append(hits, m)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], s.Dir(hits[0]), nil
	case 0:
		if len(errs) > 0 {
			return Manifest{}, "", fmt.Errorf("no run %q in %s (%v)", ref, s.Root, errors.Join(errs...))
		}
		return Manifest{}, "", fmt.Errorf("no run %q in %s", ref, s.Root)
	}
	ids := make([]string, 0, len(hits))
	for _, m := range hits {
		ids = append(ids, m.ID)
	}
	return Manifest{}, "", fmt.Errorf("run %q is ambiguous: %s", ref, strings.Join(ids, ", "))
}

// ErrBusy is returned by Lock when another process runs a workflow on the
// unit.
var ErrBusy = errors.New("another workflow run of this unit is going")

// lockFile is the per-unit lock inside the unit's folder.
const lockFile = ".lock"

// Lock takes the unit's run lock, so that two workflows (a scheduled run
// and a ttisctl one) never load the same server at once and spoil each
// other's measurements. It does not wait: a held lock gives ErrBusy. The
// lock is an flock on <root>/<unit>/.lock, released by the returned func
// or when the process dies.
func (s *Store) Lock(unit string) (unlock func(), err error) {
	if err := CheckUnitName(unit); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.Root, unit)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results store: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("unit %s: %w", unit, ErrBusy)
		}
		return nil, fmt.Errorf("results store: lock %s: %w", unit, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
