package watch

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// script is a folder whose state the test sets: which of two real folders
// (their FileInfos tell them apart, as inodes do) the path names, or none.
type script struct {
	infos   [2]os.FileInfo
	current int // index into infos, -1 when the path names nothing
	watches int
}

func (s *script) stat() (os.FileInfo, error) {
	if s.current < 0 {
		return nil, os.ErrNotExist
	}
	return s.infos[s.current], nil
}

func (s *script) watch() (os.FileInfo, error) {
	fi, err := s.stat()
	if err == nil {
		s.watches++
	}
	return fi, err
}

func (s *script) unwatch() {}

// replay drives a machine on a virtual clock: no timers, no sleeping.
type replay struct {
	t   *testing.T
	m   *machine
	f   *script
	now time.Time
	got []string
}

func newReplay(t *testing.T, w Watcher, present bool) *replay {
	t.Helper()
	r := &replay{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var infos [2]os.FileInfo
	for i := range infos {
		fi, err := os.Stat(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		infos[i] = fi
	}
	r.f = &script{infos: infos}
	if !present {
		r.f.current = -1
	}
	w.Dir = "/units"
	r.m = w.machine(r.f, func(reason string) { r.got = append(r.got, reason) })
	r.m.start(r.now)
	return r
}

// advance moves the clock by d, firing every deadline on the way.
func (r *replay) advance(d time.Duration) {
	end := r.now.Add(d)
	for !r.m.next().After(end) {
		r.now = r.m.next()
		r.m.tick(r.now)
	}
	r.now = end
}

func (r *replay) event(name string, op fsnotify.Op) {
	r.m.event(r.now, fsnotify.Event{Name: name, Op: op})
}

// expect checks the changes reported since the last expect.
func (r *replay) expect(want ...string) {
	r.t.Helper()
	if !slices.Equal(r.got, want) {
		r.t.Fatalf("at %s: changes %q, want %q", r.now.Format("15:04:05.000"), r.got, want)
	}
	r.got = nil
}

var quiet = Watcher{Debounce: 150 * time.Millisecond, MaxWait: time.Second, Rescan: time.Hour, Retry: 500 * time.Millisecond}

func TestReplayDebounce(t *testing.T) {
	r := newReplay(t, quiet, true)
	r.expect(ReasonStart)
	// An editor's save: several events close together, one change.
	r.event("/units/.a.toml.swp", fsnotify.Create)
	r.advance(100 * time.Millisecond)
	r.event("/units/a.toml", fsnotify.Rename)
	r.advance(149 * time.Millisecond)
	r.expect()
	r.advance(time.Millisecond)
	r.expect(ReasonEvent)
	r.advance(10 * time.Second)
	r.expect()
}

func TestReplaySteadyEventsAreCapped(t *testing.T) {
	r := newReplay(t, quiet, true)
	r.expect(ReasonStart)
	// A write every 100ms never leaves 150ms of quiet: MaxWait reports.
	for range 25 {
		r.event("/units/a.toml", fsnotify.Write)
		r.advance(100 * time.Millisecond)
	}
	r.expect(ReasonEvent, ReasonEvent)
	r.advance(150 * time.Millisecond)
	r.expect(ReasonEvent)
}

func TestReplayChmodAndNamelessEventsAreIgnored(t *testing.T) {
	r := newReplay(t, quiet, true)
	r.expect(ReasonStart)
	r.event("/units/a.toml", fsnotify.Chmod)
	r.event("", fsnotify.Create)
	r.advance(5 * time.Second)
	r.expect()
}

func TestReplayRescanAndWatchError(t *testing.T) {
	w := quiet
	w.Rescan = 30 * time.Second
	r := newReplay(t, w, true)
	r.expect(ReasonStart)
	r.advance(61 * time.Second)
	r.expect(ReasonRescan, ReasonRescan)
	r.event("/units/a.toml", fsnotify.Write)
	r.m.watchError(errors.New("queue overflow"))
	r.expect(ReasonError)
	// The overflow re-read covers the pending event.
	r.advance(time.Second)
	r.expect()
}

func TestReplayFolderRemovedAndBack(t *testing.T) {
	r := newReplay(t, quiet, true)
	r.expect(ReasonStart)
	r.f.current = -1
	r.event("/units", fsnotify.Remove)
	r.expect(ReasonGone)
	r.advance(2 * time.Second)
	r.expect()
	r.f.current = 1
	r.advance(500 * time.Millisecond)
	r.expect(ReasonReturned)
	if r.f.watches != 2 {
		t.Fatalf("watches %d, want the new folder watched", r.f.watches)
	}
}

// A folder held open sends no event when deleted, and a new folder at the
// same path is another inode: the retry check finds both.
func TestReplayHeldFolderReplaced(t *testing.T) {
	r := newReplay(t, quiet, true)
	r.expect(ReasonStart)
	r.f.current = -1
	r.advance(500 * time.Millisecond)
	r.expect(ReasonGone)
	r.f.current = 1
	r.advance(500 * time.Millisecond)
	r.expect(ReasonReturned)
	// Swapped by rename with no event at all.
	r.f.current = 0
	r.advance(500 * time.Millisecond)
	r.expect(ReasonReturned)
	r.advance(5 * time.Second)
	r.expect()
}

func TestReplayMissingAtStart(t *testing.T) {
	r := newReplay(t, quiet, false)
	r.expect(ReasonStart)
	r.advance(3 * time.Second)
	r.expect()
	r.f.current = 0
	r.advance(500 * time.Millisecond)
	r.expect(ReasonReturned)
}
