// Package logring keeps the recent output lines of a unit's server in memory
// for "ttisctl logs" and "ttisctl status", and lets readers follow new lines.
package logring

import (
	"sync"

	"github.com/ttis-dev/ttis/daemon/api"
)

// Ring is a bounded buffer of log lines that also fans new lines out to
// followers. The zero value is not usable; call New.
type Ring struct {
	mu        sync.Mutex
	size      int
	lines     []api.LogLine // grows up to size, then wraps
	next      int           // index where the next line goes once the ring is full
	full      bool
	followers map[chan api.LogLine]struct{}
}

// New returns a ring holding up to size lines.
func New(size int) *Ring {
	if size < 1 {
		size = 1
	}
	// The slice grows on demand: most units print a few dozen lines, and a
	// daemon with many units should not pay for full rings up front.
	return &Ring{size: size, followers: map[chan api.LogLine]struct{}{}}
}

// Add appends a line, evicting the oldest when the ring is full, and hands
// it to every follower. A follower too slow to keep up loses the line rather
// than blocking the unit's output.
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
	for ch := range r.followers {
		select {
		case ch <- l:
		default:
		}
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
	// Oldest line sits at r.next once the ring has wrapped.
	start := 0
	if r.full {
		start = r.next
	}
	for i := total - n; i < total; i++ {
		out = append(out, r.lines[(start+i)%total])
	}
	return out
}

// Follow returns the last n lines and a channel receiving every later line,
// atomically so no line is lost or repeated between the two. Call the
// returned cancel func to stop following; it closes the channel.
func (r *Ring) Follow(n, buffer int) ([]api.LogLine, <-chan api.LogLine, func()) {
	ch := make(chan api.LogLine, buffer)
	r.mu.Lock()
	tail := r.tailLocked(n)
	r.followers[ch] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.followers, ch)
			r.mu.Unlock()
			close(ch)
		})
	}
	return tail, ch, cancel
}
