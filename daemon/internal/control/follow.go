package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/daemon/internal/logring"
)

// A log follower (`ttisctl logs -f`) may stay for hours, and thousands may
// come at once, so each costs as little as it can: after the request is
// read, the connection is taken from net/http (Hijack), whose per-request
// goroutines, read and write buffers and request state then go away, and
// one goroutine of our own pumps lines to it. That goroutine waits for the
// next line by reading the connection, which also tells it at once when
// the client leaves; a new line (or the daemon's stop) interrupts the read
// through a callback that sets a past read deadline, so no second
// goroutine waits beside it. The follower holds a position in the unit's
// ring rather than a queue of its own (see logring.Follower).
//
// Before, a follower cost ttisd about 31 KiB of resident memory, most of it
// a 256-line channel of its own (16 KiB) and net/http's read and write
// buffers (10 KiB), besides two goroutines. BenchmarkFollowerMemory
// measures what it costs now.

// followWriteTimeout is how long one write to a follower may block: a
// client that stops reading is dropped instead of holding its slot,
// connection and goroutine for ever.
const followWriteTimeout = 10 * time.Second

// followBatch is how many lines a follower copies out of the ring at once.
const followBatch = 8

// followHeader starts every follow stream. The body is delimited by the
// connection's close (HTTP/1.1 allows it), which is how a stream ends.
var followHeader = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nCache-Control: no-store\r\n" +
	api.HeaderAPI + ": " + api.Version + "\r\nConnection: close\r\n\r\n")

// aLongTimeAgo is a read deadline in the past: it interrupts a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// encodeBufs holds the buffers lines are encoded into, shared by every
// follower: an idle follower holds none.
var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// follow takes the connection from net/http and hands it, with the slot
// the request holds, to a goroutine that streams the ring's last lines
// lines and then every new one until the client goes away or the daemon
// stops.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, ring *logring.Ring, lines int) {
	sl, _ := r.Context().Value(slotKey{}).(*slot)
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, http.StatusInternalServerError, api.CodeInternal, "cannot stream logs on this connection: "+err.Error())
		return
	}
	// The read deadline net/http set for the request head must not end
	// the stream; bytes it buffered beyond the head are a client's
	// mistake and are dropped.
	_ = c.SetDeadline(time.Time{})
	tail, f := ring.Follow(lines)
	release := func() {}
	if sl != nil {
		release = sl.keep()
	}
	go s.pump(c, f, tail, release)
}

// pump writes to c until it fails, the client leaves or the daemon stops.
func (s *Server) pump(c net.Conn, f *logring.Follower, tail []api.LogLine, release func()) {
	defer release()
	defer c.Close()
	poke := func() { _ = c.SetReadDeadline(aLongTimeAgo) }
	// The daemon's stop interrupts the wait like a new line does.
	stopPoke := context.AfterFunc(s.stop, poke)
	defer stopPoke()
	if write(c, followHeader, tail, 0) != nil {
		return
	}
	tail = nil
	var buf [followBatch]api.LogLine
	var probe [1]byte
	for s.stop.Err() == nil {
		n, lost, wake := f.Read(buf[:])
		if n > 0 || lost > 0 {
			err := write(c, nil, buf[:n], lost)
			clear(buf[:n]) // let the ring's strings go
			if err != nil {
				return
			}
			continue
		}
		wakePoke := context.AfterFunc(wake, poke)
		_, err := c.Read(probe[:])
		wakePoke()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			// The client left (EOF, reset) or sent bytes, which no
			// follower has cause to: either way the stream ends.
			return
		}
		// A poke that ran late could set the deadline again after this;
		// the read then ends at once and the loop finds nothing new,
		// which costs one turn and loses nothing.
		_ = c.SetReadDeadline(time.Time{})
	}
}

// write sends head (if any), a note of lost lines (if any) and lines as
// JSON lines, within followWriteTimeout.
func write(c net.Conn, head []byte, lines []api.LogLine, lost uint64) error {
	b := encodeBufs.Get().(*bytes.Buffer)
	defer func() {
		// A huge batch (long lines) does not stay pooled.
		if b.Cap() <= 64<<10 {
			b.Reset()
			encodeBufs.Put(b)
		}
	}()
	b.Write(head)
	enc := json.NewEncoder(b)
	if lost > 0 {
		note := api.LogLine{Time: time.Now(), Stream: "ttisd", Text: fmt.Sprintf("%d lines skipped: this reader fell behind the unit's log", lost)}
		if err := enc.Encode(note); err != nil {
			return err
		}
	}
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	if err := c.SetWriteDeadline(time.Now().Add(followWriteTimeout)); err != nil {
		return err
	}
	_, err := c.Write(b.Bytes())
	return err
}
