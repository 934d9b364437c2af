// Package logring keeps the recent output lines of a unit's server in memory
// for "ttisctl logs" and "ttisctl status", and lets readers follow new lines.
package logring

import (
	"context"
	"sync"

	"github.com/ttis-dev/ttis/daemon/api"
)

// Ring is a bounded buffer of log lines that readers can follow. The zero
// value is not usable; call New.
//
// Followers hold no buffer of their own: each keeps a position (the
// sequence number of the next line it wants) and copies lines out of the
// ring when woken. A follower therefore costs a few words however many
// lines it lags, and thousands of them cost the daemon nothing per line but
// one wake-up each (which need not be a goroutine: see Follower.Read). A
// follower that falls behind by more than the ring
// holds loses the oldest lines, and is told how many.
type Ring struct {
	mu    sync.Mutex
	size  int
	lines []api.LogLine // grows up to size, then wraps
	next  int           // index where the next line goes once the ring is full
	full  bool
	added uint64 // lines ever added: the sequence number of the next line
	// wake is cancelled by the next Add; nil while no follower waits, so
	// that a unit's output costs nothing extra when nobody follows it.
	wake       context.Context
	cancelWake context.CancelFunc
}

// New returns a ring holding up to size lines.
func New(size int) *Ring {
	if size < 1 {
		size = 1
	}
	// The slice grows on demand: most units print a few dozen lines, and a
	// daemon with many units should not pay for full rings up front.
	return &Ring{size: size}
}

// Add appends a line, evicting the oldest when the ring is full, and wakes
// the followers. It never waits for a follower.
func (r *Ring) Add(l api.LogLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		r.lines = append(r.lines, l)
		if len(r.lines) == r.size {
			r.full = true
		}
	} else {
		r.lines[r.next] = l
		r.next = (r.next + 1) % len(r.lines)
	}
	r.added++
	if r.wake != nil {
		r.cancelWake()
		r.wake, r.cancelWake = nil, nil
	}
}

// Tail returns the last n lines, oldest first; n <= 0 returns every line.
func (r *Ring) Tail(n int) []api.LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tailLocked(n)
}

func (r *Ring) tailLocked(n int) []api.LogLine {
	total := len(r.lines)
	if n <= 0 || n > total {
		n = total
	}
	out := make([]api.LogLine, 0, n)
	for i := total - n; i < total; i++ {
		out = append(out, r.atLocked(i))
	}
	return out
}

// atLocked returns the i-th oldest line held.
func (r *Ring) atLocked(i int) api.LogLine {
	// Oldest line sits at r.next once the ring has wrapped.
	start := 0
	if r.full {
		start = r.next
	}
	return r.lines[(start+i)%len(r.lines)]
}

// Follower reads the lines a ring receives after it started following.
// One goroutine uses it at a time.
type Follower struct {
	r    *Ring
	next uint64 // sequence number of the next line to read
}

// Follow returns the last n lines and a Follower positioned after them,
// atomically, so no line is lost or repeated between the two.
func (r *Ring) Follow(n int) ([]api.LogLine, *Follower) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tailLocked(n), &Follower{r: r, next: r.added}
}

// Read copies the lines added since the last read into buf (which must not
// be empty), oldest first, and returns how many it copied and how many
// were lost because the ring evicted them before this follower read them.
// When there is nothing new (n and lost both 0) it returns a context that
// the next Add cancels; wait for it, then read again. It is a context
// rather than a channel so that a waiter can also be woken by a callback
// (context.AfterFunc) instead of a goroutine of its own.
func (f *Follower) Read(buf []api.LogLine) (n int, lost uint64, wake context.Context) {
	r := f.r
	r.mu.Lock()
	defer r.mu.Unlock()
	held := uint64(len(r.lines))
	oldest := r.added - held // sequence number of the oldest line held
	if f.next < oldest {
		lost = oldest - f.next
		f.next = oldest
	}
	if f.next == r.added {
		if lost == 0 {
			if r.wake == nil {
				r.wake, r.cancelWake = context.WithCancel(context.Background())
			}
			wake = r.wake
		}
		return 0, lost, wake
	}
	for n < len(buf) && f.next < r.added {
		buf[n] = r.atLocked(int(f.next - oldest))
		n++
		f.next++
	}
	return n, lost, nil
}
