package serve

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// Keep-alive after a stream: a streamed response takes its connection
// over from fasthttp (sse.go's hijack), and hands it back when the stream
// ended cleanly so that the client's next request is served on it.

// keepConn runs after a streamed response, with conn the connection the
// request came on and hc fasthttp's hijacked view of it. A clean stream
// with keep-alive goes on serving the client's next requests on conn (see
// serveKept); anything else closes it.
//
// Requests the client pipelined behind the stream sit in fasthttp's read
// buffer, which only hc reads: they are taken from it and replayed ahead
// of the socket. The next stream on the connection starts again from the
// socket itself, so wrappers never nest.
func (s *Server) keepConn(conn, hc net.Conn, keep bool) {
	raw := conn
	if p, ok := conn.(*replayConn); ok {
		raw = p.Conn
	}
	var ahead []byte
	var err error
	if keep {
		ahead, err = takeBuffered(raw, hc)
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if !keep || err != nil || s.draining.Load() {
		_ = raw.Close()
		return
	}
	if s.kept == nil {
		s.kept = map[*replayConn]struct{}{}
	}
	// Always a new wrapper: fasthttp tracks connections by value, and the
	// request's own serving loop is still to forget raw when this one
	// starts.
	next := &replayConn{Conn: raw, ahead: ahead}
	next.used.Store(len(ahead) > 0)
	s.kept[next] = struct{}{}
	// A goroutine of its own, so that fasthttp releases the finished
	// request's context now rather than when the connection ends.
	go s.serveKept(next)
}

// serveKept waits, up to IdleTimeout, for the first byte of the client's
// next request on a kept connection, then hands the connection back to
// fasthttp. The wait is ours because fasthttp serves a handed-back
// connection as a new one: it would bound the wait by ReadTimeout and
// never count the connection as idle, so its shutdown would wait on it.
func (s *Server) serveKept(c *replayConn) {
	defer func() {
		s.keptMu.Lock()
		delete(s.kept, c)
		s.keptMu.Unlock()
	}()
	if !c.used.Load() {
		var first [1]byte
		err := c.Conn.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if err == nil {
			var n int
			n, err = c.Conn.Read(first[:])
			if n == 1 {
				err = errors.Join(err, c.Conn.SetReadDeadline(time.Time{}))
			}
		}
		if err != nil {
			_ = c.Conn.Close()
			return
		}
		c.ahead = append(c.ahead, first[0])
		c.used.Store(true)
	}
	_ = s.srv.ServeConn(c)
}

// closeKept closes the kept connections: with idleOnly, those still
// waiting for a request to begin.
func (s *Server) closeKept(idleOnly bool) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	for c := range s.kept {
		if !idleOnly || !c.used.Load() {
			_ = c.Conn.Close()
		}
	}
}

// aLongTimeAgo is a read deadline that has passed: reads fail at once
// with os.ErrDeadlineExceeded instead of waiting for the socket.
var aLongTimeAgo = time.Unix(1, 0)

// takeBuffered returns what reading hc yields without waiting on raw, its
// socket: bytes fasthttp had read ahead (and, for a replayConn, the rest
// of its replay).
func takeBuffered(raw, hc net.Conn) ([]byte, error) {
	if err := raw.SetReadDeadline(aLongTimeAgo); err != nil {
		return nil, err
	}
	var ahead []byte
	var buf [512]byte
	for range 1 << 16 { // bounded: fasthttp's buffer and a replay are finite
		n, err := hc.Read(buf[:])
		ahead = append(ahead, buf[:n]...)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return ahead, raw.SetReadDeadline(time.Time{})
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, errors.New("read-ahead buffer does not end")
}

// replayConn is a connection whose first reads return ahead; keepConn
// hands connections back to fasthttp in one. used records that a request
// has begun to arrive on it.
type replayConn struct {
	net.Conn
	ahead []byte
	used  atomic.Bool
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
