// Package runs is ttis's results store: one folder per workflow run under
// <state_dir>/runs/<unit>/<run-id>/, described by a run.json manifest. Every
// file is written through a temporary file in the same folder, fsync and
// rename (bench/result.WriteFileAtomic), so a crash never leaves a half file
// under its final name. A run stopped by a signal says interrupted; one whose
// manifest still says "running" after its process has gone (killed, host
// crash) is reported as interrupted too.
//
// Anyone who can write the state folder can put anything in the store, so
// every file of it is read the hardened way (units/hardened): a named pipe,
// a device node or a file over its kind's bound is reported as a bad entry
// with the reason, never opened or read whole. The bounds: a manifest
// (run.json) MaxManifestBytes, a folder MaxFolderEntries entries; readers
// of a run's other files name theirs (bench/release: reports and plans).
// Every read has a deadline, the caller's context or FileTimeout, whichever
// ends first.
package runs

import (
	"context"
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
	"github.com/ttis-dev/ttis/units/hardened"
)

// ManifestFile is the name of a run's manifest.
const ManifestFile = "run.json"

// Bounds on what the store reads: a manifest holds a few kilobytes (its
// file list grows with the run), a unit's folder one entry per run.
const (
	MaxManifestBytes = 1 << 20
	MaxFolderEntries = 100_000
)

// FileTimeout bounds each read of a file or folder of the store when the
// caller's context allows longer. Reads never block on a pipe or a device
// node; only a hung file system comes near it.
const FileTimeout = 10 * time.Second

// ReadFile reads the store's file at path the hardened way: a regular file
// of at most max bytes, within ctx and FileTimeout. The error names path
// and says what is wrong with it.
func ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, FileTimeout)
	defer cancel()
	return hardened.ReadFile(ctx, path, max)
}

// readDir lists a folder of the store the hardened way.
func readDir(ctx context.Context, path string) ([]os.DirEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, FileTimeout)
	defer cancel()
	return hardened.ReadDir(ctx, path, MaxFolderEntries)
}

// BadEntry is a run folder whose manifest cannot be read or does not
// parse: List reports it beside the good runs, with the reason.
type BadEntry struct {
	// Dir is the run folder.
	Dir string
	// Err says what is wrong; it names the file.
	Err error
}

func (b *BadEntry) Error() string { return "bad run entry: " + b.Err.Error() }

func (b *BadEntry) Unwrap() error { return b.Err }

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
func (s *Store) Reopen(ctx context.Context, ref string) (*Run, error) {
	m, dir, err := s.Open(ctx, ref)
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
func (s *Store) readManifest(ctx context.Context, dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := ReadFile(ctx, path, MaxManifestBytes)
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
// Folders without a manifest (a run that crashed before its first write, a
// stray folder) are skipped; a run folder whose manifest cannot be read or
// does not parse (a named pipe, a file over MaxManifestBytes, broken JSON)
// is returned as a *BadEntry error beside the good runs. When ctx ends, List
// returns what it read so far with an error that says so.
func (s *Store) List(ctx context.Context, unit string) ([]Manifest, []error) {
	var unitsToRead []string
	if unit != "" {
		if err := CheckUnitName(unit); err != nil {
			return nil, []error{err}
		}
		unitsToRead = []string{unit}
	} else {
		ents, err := readDir(ctx, s.Root)
		switch {
		case ctx.Err() != nil:
			return nil, []error{s.stopped(ctx, 0)}
		case errors.Is(err, os.ErrNotExist):
			return nil, nil
		case err != nil:
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
		ents, err := readDir(ctx, filepath.Join(s.Root, u))
		if ctx.Err() != nil {
			break
		}
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
			if ctx.Err() != nil {
				break
			}
			dir := filepath.Join(s.Root, u, e.Name())
			m, err := s.readManifest(ctx, dir)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) && ctx.Err() == nil {
					errs = append(errs, &BadEntry{Dir: dir, Err: err})
				}
				continue
			}
			out = append(out, m)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, s.stopped(ctx, len(out)))
	}
	slices.SortStableFunc(out, func(a, b Manifest) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, errs
}

// stopped says that a listing ended with ctx, after n runs.
func (s *Store) stopped(ctx context.Context, n int) error {
	return fmt.Errorf("results store %s: listing stopped after %d runs: %w", s.Root, n, ctx.Err())
}

// Dir is the folder of a run.
func (s *Store) Dir(m Manifest) string { return filepath.Join(s.Root, m.Unit, m.ID) }

// ErrNoRun is returned (wrapped) by Open when no run matches: the caller
// tells an unknown name from a store it could not read.
var ErrNoRun = errors.New("no run")

// Open finds a run by id, unique id prefix, or the path of its folder.
func (s *Store) Open(ctx context.Context, ref string) (Manifest, string, error) {
	if ref == "" {
		return Manifest{}, "", errors.New("no run given")
	}
	if st, err := os.Stat(ref); err == nil && st.IsDir() && strings.ContainsRune(ref, filepath.Separator) {
		m, err := s.readManifest(ctx, ref)
		if err != nil {
			return Manifest{}, "", fmt.Errorf("run %s: %w", ref, err)
		}
		return m, ref, nil
	}
	all, errs := s.List(ctx, "")
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
		for _, err := range errs {
			// The run is there but broken: say why, not that it is missing.
			var bad *BadEntry
			if errors.As(err, &bad) && strings.HasPrefix(filepath.Base(bad.Dir), ref) {
				return Manifest{}, "", bad
			}
		}
		if len(errs) > 0 {
			return Manifest{}, "", fmt.Errorf("%w %q in %s (%v)", ErrNoRun, ref, s.Root, errors.Join(errs...))
		}
		return Manifest{}, "", fmt.Errorf("%w %q in %s", ErrNoRun, ref, s.Root)
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
