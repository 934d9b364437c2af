package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// drainPeak is the least number of open connections whose closing counts
// as a burst worth handing memory back for (see Listener.OnDrain): a few
// hundred connections' buffers are a few MiB.
const drainPeak = 256

// Listener caps the open connections of the control socket, so that its
// clients can never take the descriptors the supervisor needs for its
// probes and servers. A connection past the cap is accepted only to be
// answered 503 (with a message naming the cap) and closed, by at most
// rejectSlots goroutines at once; past those it is closed unanswered. The
// socket therefore holds at most Connections+rejectSlots descriptors
// whatever its clients do.
type Listener struct {
	net.Listener
	max  int64 // <= 0: no cap
	busy []byte
	open atomic.Int64
	// rejecting holds a token per connection being answered 503.
	rejecting chan struct{}
	onDrain   func()
	// headWait bounds the wait for a refused client's request head.
	headWait time.Duration

	mu       sync.Mutex
	peak     int64 // most connections open since the last drain
	draining bool
}

// NewListener wraps ln with a cap of max open connections (<= 0: none).
// onDrain, when set, is called in its own goroutine each time a burst of
// connections has closed (open connections fell to a quarter of a peak of
// at least 256), never twice at once: the daemon hands the memory they
// used back to the system there.
func NewListener(ln net.Listener, max int, onDrain func()) *Listener {
	msg := fmt.Sprintf("ttisd is serving its limit of %d control connections at once (control.max_connections in ttisd.toml); try again later", max)
	body, _ := json.Marshal(api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeBusy, Message: msg}})
	busy := fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n%s: %s\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		api.HeaderAPI, api.Version, len(body), body)
	return &Listener{Listener: ln, max: int64(max), busy: busy, rejecting: make(chan struct{}, rejectSlots), onDrain: onDrain, headWait: time.Second}
}

// Open returns the number of connections open now.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Accept returns the next connection within the cap; connections past it
// are answered and closed here.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.open.Add(1)
		if l.max <= 0 || n <= l.max {
			l.mu.Lock()
			l.peak = max(l.peak, n)
			l.mu.Unlock()
			return &conn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		select {
		case l.rejecting <- struct{}{}:
			go l.reject(c)
		default:
			c.Close()
		}
	}
}

// reject answers a connection past the cap. It reads the request head
// first, within a second: a client still writing its request when the
// connection closes would see a reset instead of the answer.
func (l *Listener) reject(c net.Conn) {
	defer func() {
		c.Close()
		<-l.rejecting
	}()
	_ = c.SetDeadline(time.Now().Add(l.headWait))
	var head [2048]byte
	n := 0
	for n < len(head) && !bytes.Contains(head[:n], []byte("\r\n\r\n")) {
		m, err := c.Read(head[n:])
		n += m
		if err != nil {
			break
		}
	}
	_, _ = c.Write(l.busy)
}

// closed counts a connection gone, and starts a drain after a burst.
func (l *Listener) closed() {
	n := l.open.Add(-1)
	if l.onDrain == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.draining || l.peak < drainPeak || n > l.peak/4 {
		return
	}
	l.draining = true
	go l.drain()
}

// drain calls onDrain until a call ends with no more than a few dozen
// connections closed while it ran: the rest of the burst may still be
// closing when the first call starts, and their memory is the point.
func (l *Listener) drain() {
	for {
		before := l.open.Load()
		l.onDrain()
		if before-l.open.Load() < drainPeak/4 {
			break
		}
	}
	l.mu.Lock()
	l.peak = l.open.Load()
	l.draining = false
	l.mu.Unlock()
}

// conn tells its listener when it closes, once.
type conn struct {
	net.Conn
	l    *Listener
	done atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.done.CompareAndSwap(false, true) {
		c.l.closed()
	}
	return err
}

// NetConn returns the accepted connection (the peer's credentials are
// read from it).
func (c *conn) NetConn() net.Conn { return c.Conn }
