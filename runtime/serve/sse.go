package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Streaming: a generation's answer written as server-sent events straight
// to the connection (sseSink), or collected for one JSON body
// (collectSink); the legacy API's raw text (legacy.go) is written by the
// same sink.

// hijack takes the request's connection over for a streamed answer,
// which stream writes whole (headers included). The stream is written
// straight to the connection from the handler's goroutine: fasthttp's
// SetBodyStreamWriter would add a pipe and a goroutine hop per flush.
// Hijacking with no response makes fasthttp write nothing after it; the
// handler still counts as an open connection, so ShutdownWithContext
// waits for it. stream is offered to keep the connection (keep: HTTP/1.1
// without Connection: close, and the server not draining; chunked:
// HTTP/1.1) and reports whether it ended cleanly with that offer, so the
// connection may serve the client's next request (see keepConn).
func (s *Server) hijack(ctx *fasthttp.RequestCtx, stream func(conn net.Conn, keep, chunked bool) bool) {
	conn := ctx.Conn()
	http11 := ctx.Request.Header.IsHTTP11()
	keep := http11 && !ctx.Request.Header.ConnectionClose() && !s.draining.Load()
	ctx.HijackSetNoResponse(true)
	keep = stream(conn, keep, http11)
	ctx.Hijack(func(hc net.Conn) { s.keepConn(conn, hc, keep) })
}

// stream writes the whole SSE response, headers included, to conn. With
// keep (which needs chunked) it offers the client to keep the connection;
// it reports whether the response ended cleanly with that offer, so the
// connection may serve the client's next request. Without chunked (an
// HTTP/1.0 client) the body is bare, ended by closing the connection.
func (j *job) stream(conn net.Conn, keep, chunked bool) (kept bool) {
	k := j.s.sinks.Get().(*sseSink)
	k.conn, k.timeout, k.deadline, k.chunked = conn, j.s.cfg.WriteTimeout, time.Time{}, chunked
	k.acked, k.progressAt = 0, time.Time{}
	status := "ok"
	defer func() {
		k.conn = nil
		if cap(k.buf) <= 64<<10 && cap(k.frame) <= 64<<10 {
			k.buf, k.frame = k.buf[:0], k.frame[:0]
			j.s.sinks.Put(k)
		}
		if p := recover(); p != nil {
			j.s.log.Error("panic while streaming", "request_id", j.id, "panic", p)
			status = "panic"
		}
		j.end()
		if j.s.log.Enabled(context.Background(), slog.LevelDebug) {
			j.s.log.Debug("request", "request_id", j.id, "stream", true, "sequences", len(j.seqs), "result", status, "duration", time.Since(j.arrival))
		}
	}()
	// fail ends the response with an error event; the connection stays
	// usable if that is written.
	fail := func(e *apiError, why string) bool {
		k.error(e)
		status = why
		return k.end() == nil && keep
	}
	if err := k.header(j.id, keep); err != nil {
		status = "client gone"
		return false
	}
	if err := j.waitSlots(k.ping); err != nil {
		if errors.Is(err, errClientGone) {
			status = "client gone"
			return false
		}
		return fail(j.ctxError(err), err.Error())
	}
	if e := j.start(); e != nil {
		return fail(e, e.Message)
	}
	err := j.pump(k)
	switch {
	case errors.Is(err, errClientGone):
		status = "client gone"
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return fail(j.ctxError(err), "timeout")
	case err != nil:
		status = err.Error()
	}
	k.buf = j.f.appendDone(k.buf, j)
	if k.flush() != nil {
		return false
	}
	return k.end() == nil && keep
}

// sseSink writes server-sent events as HTTP/1.1 chunks straight to the
// connection.
type sseSink struct {
	conn     net.Conn
	timeout  time.Duration
	deadline time.Time
	chunked  bool   // HTTP/1.1 chunked framing; HTTP/1.0 gets the bare body
	buf      []byte // pending events
	frame    []byte // buf with its chunk framing
	// acked is the peer's acknowledged byte count when it last grew (or
	// nothing was pending), at progressAt; see stalled.
	acked      uint64
	progressAt time.Time
}

// header writes the response head; without keep it says the connection
// closes after the response.
func (k *sseSink) header(reqID string, keep bool) error {
	k.frame = append(k.frame[:0], "HTTP/1.1 200 OK\r\nServer: ttis\r\nDate: "...)
	k.frame = time.Now().UTC().AppendFormat(k.frame, "Mon, 02 Jan 2006 15:04:05 GMT")
	k.frame = append(k.frame, "\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nX-Request-Id: "...)
	k.frame = append(k.frame, reqID...)
	if !keep {
		k.frame = append(k.frame, "\r\nConnection: close"...)
	}
	if k.chunked {
		k.frame = append(k.frame, "\r\nTransfer-Encoding: chunked"...)
	}
	k.frame = append(k.frame, "\r\n\r\n"...)
	return k.write()
}

// end writes the last chunk.
func (k *sseSink) end() error {
	if !k.chunked {
		return nil
	}
	k.frame = append(k.frame[:0], "0\r\n\r\n"...)
	return k.write()
}

func (k *sseSink) write() error {
	if k.timeout > 0 {
		now := time.Now()
		if now.Add(k.timeout - time.Second).After(k.deadline) {
			// Once a second at most, like the deadline's renewal.
			if k.stalled(now) {
				return errClientStalled
			}
			k.deadline = now.Add(k.timeout)
			_ = k.conn.SetWriteDeadline(k.deadline)
		}
	}
	_, err := k.conn.Write(k.frame)
	return err
}

// stalled reports whether the client has acknowledged none of the output
// waiting for it for longer than the write timeout. A write deadline alone
// does not catch a client that stops reading: each write lands in the
// socket buffers (megabytes) and succeeds, so a slow stream would keep its
// slot until those filled.
func (k *sseSink) stalled(now time.Time) bool {
	acked, pending, ok := peerProgress(k.conn)
	if !ok {
		return false
	}
	if k.progressAt.IsZero() || acked != k.acked || !pending {
		k.acked, k.progressAt = acked, now
		return false
	}
	return now.Sub(k.progressAt) > k.timeout
}

func (k *sseSink) emit(j *job, q *seqState, final bool) {
	k.buf = j.f.appendChunks(k.buf, j, q, final)
}

// flush writes the buffered events as one chunk with one write. It renews
// the connection's write deadline at most once a second, so a client that
// stops reading fails the write within WriteTimeout.
func (k *sseSink) flush() error {
	if len(k.buf) == 0 {
		return nil
	}
	if !k.chunked {
		k.frame = append(k.frame[:0], k.buf...)
	} else {
		k.frame = strconv.AppendInt(k.frame[:0], int64(len(k.buf)), 16)
		k.frame = append(k.frame, '\r', '\n')
		k.frame = append(k.frame, k.buf...)
		k.frame = append(k.frame, '\r', '\n')
	}
	k.buf = k.buf[:0]
	return k.write()
}

func (k *sseSink) ping() error {
	k.buf = append(k.buf, ": ping\n\n"...)
	return k.flush()
}

// error sends an in-stream error event and [DONE].
func (k *sseSink) error(e *apiError) {
	k.buf = append(k.buf, "data: "...)
	k.buf = e.appendJSON(k.buf)
	k.buf = append(k.buf, "\n\ndata: [DONE]\n\n"...)
	_ = k.flush()
}

// collectSink accumulates a non-streaming response.
type collectSink struct{}

func (collectSink) emit(j *job, q *seqState, _ bool) {
	for _, e := range q.events {
		q.text = append(q.text, e.text...)
		if e.hasTok {
			q.lps = append(q.lps, e.tok)
		}
	}
}

func (collectSink) flush() error { return nil }

func (collectSink) ping() error { return nil }
