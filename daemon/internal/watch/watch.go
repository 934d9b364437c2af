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
	debounce := orDefault(w.Debounce, 150*time.Millisecond)
	maxWait := orDefault(w.MaxWait, time.Second)
	rescan := orDefault(w.Rescan, 30*time.Second)
	retry := orDefault(w.Retry, 500*time.Millisecond)
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Clean(w.Dir)

	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()

	watching := false
	var watched os.FileInfo // the folder the watch is on
	add := func() error {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if err := fsw.Add(dir); err != nil {
			return err
		}
		watching, watched = true, fi
		return nil
	}
	// unwatch drops the watch after the folder went away or was replaced.
	unwatch := func() {
		_ = fsw.Remove(dir)
		watching, watched = false, nil
	}

	var (
		quiet, capTimer *time.Timer
		quietC, capC    <-chan time.Time
	)
	retryTicker := time.NewTicker(retry)
	defer retryTicker.Stop()
	rescanTicker := time.NewTicker(rescan)
	defer rescanTicker.Stop()
	flush := func(reason string) {
		if quiet != nil {
			quiet.Stop()
			quiet, quietC = nil, nil
		}
		if capTimer != nil {
			capTimer.Stop()
			capTimer, capC = nil, nil
		}
		changed(reason)
	}
	arm := func() {
		if quiet == nil {
			quiet = time.NewTimer(debounce)
			quietC = quiet.C
		} else {
			quiet.Reset(debounce)
		}
		if capTimer == nil {
			capTimer = time.NewTimer(maxWait)
			capC = capTimer.C
		}
	}

	if err := add(); err != nil {
		log.Error("cannot watch units folder; will retry", "dir", dir, "err", err)
	}
	changed(ReasonStart)

	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			log.Debug("watch event", "name", ev.Name, "op", ev.Op.String())
			if ev.Name == "" || ev.Op == fsnotify.Chmod {
				continue
			}
			if filepath.Clean(ev.Name) == dir && ev.Op.Has(fsnotify.Remove|fsnotify.Rename) {
				// The folder itself went away (or was moved): its watch
				// is gone. Look for it until it is back.
				unwatch()
				log.Warn("units folder removed; running units keep running", "dir", dir)
				flush(ReasonGone)
				continue
			}
			arm()
		case err, ok := <-fsw.Errors:
			if !ok {
				return errors.New("watcher closed")
			}
			// ErrEventOverflow and friends: events were lost, re-read.
			log.Warn("units folder watch error; rescanning", "dir", dir, "err", err)
			flush(ReasonError)
		case <-quietC:
			flush(ReasonEvent)
		case <-capC:
			flush(ReasonEvent)
		case <-retryTicker.C:
			if !watching {
				if add() == nil {
					log.Info("units folder is back; watching again", "dir", dir)
					flush(ReasonReturned)
				}
				continue
			}
			// inotify reports a deleted folder only once nothing holds it
			// open, and never reports a new folder at the same path: check
			// that the path still names the watched folder.
			fi, err := os.Stat(dir)
			switch {
			case err != nil:
				unwatch()
				log.Warn("units folder gone; running units keep running", "dir", dir, "err", err)
				flush(ReasonGone)
			case !os.SameFile(fi, watched):
				unwatch()
				if add() != nil {
					continue
				}
				log.Info("units folder replaced; watching the new one", "dir", dir)
				flush(ReasonReturned)
			}
		case <-rescanTicker.C:
			flush(ReasonRescan)
		}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
