// Package watch tells the daemon when its units folder may have changed.
//
// It watches the folder, not the files: editors replace files by rename,
// and a Kubernetes ConfigMap update only swaps a "..data" symlink, so no
// event names the unit file at all. Any event (except a bare chmod) arms a
// debounce timer; when it fires the daemon re-reads the whole folder and
// diffs by content hash. A periodic rescan covers file systems without
// inotify and lost watches, and a folder that is deleted is watched again
// once it comes back.
package watch

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ttis-dev/ttis/daemon/internal/clock"
)

// Watcher watches one folder. Set the fields, then call Run.
type Watcher struct {
	// Dir is the folder to watch.
	Dir string
	// Debounce is the quiet time after the last event before a change is
	// reported; zero means 150ms.
	Debounce time.Duration
	// MaxWait caps the delay of a change under a steady stream of events;
	// zero means 1s.
	MaxWait time.Duration
	// Rescan reports a change this often even without events; zero means
	// 30s.
	Rescan time.Duration
	// Retry is how often the folder is checked: looked for when missing,
	// and compared with the watched one otherwise; zero means 500ms.
	Retry time.Duration
	// Clock drives the debounce, rescan and retry timers; nil means the
	// wall clock.
	Clock clock.Clock
	// Logger receives watch problems; nil discards them.
	Logger *slog.Logger
}

// Reasons passed with a change.
const (
	ReasonEvent    = "event"
	ReasonRescan   = "rescan"
	ReasonError    = "watch-error"
	ReasonReturned = "folder-returned"
	ReasonGone     = "folder-gone"
	ReasonStart    = "start"
)

// Run watches until ctx is done, calling changed (from Run's goroutine)
// each time the folder should be re-read. The first call, with
// ReasonStart, comes once the watch is set up (or has failed), so that no
// change between the first read and the watch can be missed.
func (w *Watcher) Run(ctx context.Context, changed func(reason string)) error {
	clk := w.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()
	m := w.machine(&fsFolder{w: fsw, dir: filepath.Clean(w.Dir)}, changed)
	m.start(clk.Now())
	for {
		t := clk.NewTimer(m.next().Sub(clk.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case ev, ok := <-fsw.Events:
			t.Stop()
			if !ok {
				return errors.New("watcher closed")
			}
			m.event(clk.Now(), ev)
		case err, ok := <-fsw.Errors:
			t.Stop()
			if !ok {
				return errors.New("watcher closed")
			}
			m.watchError(err)
		case <-t.C():
			m.tick(clk.Now())
		}
	}
}

// folder is the watched folder as the machine sees it: fsnotify and
// os.Stat in Run, a script in tests.
type folder interface {
	// watch starts watching the folder and returns what its path names.
	watch() (os.FileInfo, error)
	// unwatch drops the watch after the folder went away or was replaced.
	unwatch()
	// stat says what the path names now.
	stat() (os.FileInfo, error)
}

type fsFolder struct {
	w   *fsnotify.Watcher
	dir string
}

func (f *fsFolder) watch() (os.FileInfo, error) {
	fi, err := os.Stat(f.dir)
	if err != nil {
		return nil, err
	}
	if err := f.w.Add(f.dir); err != nil {
		return nil, err
	}
	return fi, nil
}

func (f *fsFolder) unwatch()                   { _ = f.w.Remove(f.dir) }
func (f *fsFolder) stat() (os.FileInfo, error) { return os.Stat(f.dir) }

// machine is the watcher's logic without I/O or timers of its own: Run
// feeds it events and the time, tests replay sequences of both.
type machine struct {
	dir                              string
	debounce, maxWait, rescan, retry time.Duration
	log                              *slog.Logger
	f                                folder
	changed                          func(reason string)

	watched os.FileInfo // the folder the watch is on; nil when none
	// Deadlines; a zero quietAt or capAt is not armed.
	quietAt, capAt, retryAt, rescanAt time.Time
}

func (w *Watcher) machine(f folder, changed func(string)) *machine {
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &machine{
		dir:      filepath.Clean(w.Dir),
		debounce: orDefault(w.Debounce, 150*time.Millisecond),
		maxWait:  orDefault(w.MaxWait, time.Second),
		rescan:   orDefault(w.Rescan, 30*time.Second),
		retry:    orDefault(w.Retry, 500*time.Millisecond),
		log:      log, f: f, changed: changed,
	}
}

func (m *machine) start(now time.Time) {
	if err := m.add(); err != nil {
		m.log.Error("cannot watch units folder; will retry", "dir", m.dir, "err", err)
	}
	m.retryAt, m.rescanAt = now.Add(m.retry), now.Add(m.rescan)
	m.changed(ReasonStart)
}

func (m *machine) add() error {
	fi, err := m.f.watch()
	if err != nil {
		return err
	}
	m.watched = fi
	return nil
}

func (m *machine) unwatch() {
	m.f.unwatch()
	m.watched = nil
}

// next is the earliest deadline.
func (m *machine) next() time.Time {
	t := m.retryAt
	for _, d := range []time.Time{m.rescanAt, m.quietAt, m.capAt} {
		if !d.IsZero() && d.Before(t) {
			t = d
		}
	}
	return t
}

// flush reports a change and disarms the debounce.
func (m *machine) flush(reason string) {
	m.quietAt, m.capAt = time.Time{}, time.Time{}
	m.changed(reason)
}

func (m *machine) event(now time.Time, ev fsnotify.Event) {
	m.log.Debug("watch event", "name", ev.Name, "op", ev.Op.String())
	if ev.Name == "" || ev.Op == fsnotify.Chmod {
		return
	}
	if filepath.Clean(ev.Name) == m.dir && ev.Op.Has(fsnotify.Remove|fsnotify.Rename) {
		// The folder itself went away (or was moved): its watch is gone.
		// Look for it until it is back.
		m.unwatch()
		m.log.Warn("units folder removed; running units keep running", "dir", m.dir)
		m.flush(ReasonGone)
		return
	}
	m.quietAt = now.Add(m.debounce)
	if m.capAt.IsZero() {
		m.capAt = now.Add(m.maxWait)
	}
}

func (m *machine) watchError(err error) {
	// ErrEventOverflow and friends: events were lost, re-read.
	m.log.Warn("units folder watch error; rescanning", "dir", m.dir, "err", err)
	m.flush(ReasonError)
}

// tick handles every deadline that has passed at now.
func (m *machine) tick(now time.Time) {
	if (!m.quietAt.IsZero() && !now.Before(m.quietAt)) || (!m.capAt.IsZero() && !now.Before(m.capAt)) {
		m.flush(ReasonEvent)
	}
	if !now.Before(m.retryAt) {
		m.retryAt = now.Add(m.retry)
		m.check()
	}
	if !now.Before(m.rescanAt) {
		m.rescanAt = now.Add(m.rescan)
		m.flush(ReasonRescan)
	}
}

// check looks for a missing folder, and otherwise makes sure the path
// still names the watched one: inotify reports a deleted folder only once
// nothing holds it open, and never reports a new folder at the same path.
func (m *machine) check() {
	if m.watched == nil {
		if m.add() == nil {
			m.log.Info("units folder is back; watching again", "dir", m.dir)
			m.flush(ReasonReturned)
		}
		return
	}
	fi, err := m.f.stat()
	switch {
	case err != nil:
		m.unwatch()
		m.log.Warn("units folder gone; running units keep running", "dir", m.dir, "err", err)
		m.flush(ReasonGone)
	case !os.SameFile(fi, m.watched):
		m.unwatch()
		if m.add() != nil {
			return
		}
		m.log.Info("units folder replaced; watching the new one", "dir", m.dir)
		m.flush(ReasonReturned)
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
