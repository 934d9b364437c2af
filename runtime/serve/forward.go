package serve

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Forwarding: a backend that is a Forwarder (backend.go) serves every
// route by passing the request on. The front door keeps auth, admission,
// the request log and the queue and latency metrics.

// forwardKind is how a forwarded request is admitted and measured.
type forwardKind int

const (
	// fwdFree takes no slot: model lists, tokenizing, a video job's
	// state, and passed-through routes other than POSTs.
	fwdFree forwardKind = iota
	// fwdText takes a slot like a completion and is measured as one:
	// queue time, time to the first body chunk (TTFT), end to end, and
	// an abort when the forward fails.
	fwdText
	// fwdMedia takes a slot like a media request and is measured as one
	// (recordMedia).
	fwdMedia
)

// forward serves c's request from the backend's Forwarder. The upstream
// tokenizes and decodes what it is sent; with a slot its work is bounded
// by the slot, so the request leaves the reading budget once it holds
// one (admitOne).
func (s *Server) forward(c *apiCall, kind forwardKind) {
	ctx, be := c.ctx, c.be
	if !be.alive() {
		writeError(ctx, be.exited())
		return
	}
	if kind == fwdFree {
		be.fwd.Forward(ctx, nil, nil)
		return
	}
	_, done, ok := s.admitOne(ctx, c.arrival)
	if !ok {
		return
	}
	start := c.arrival
	var record func(error)
	var onChunk func(int)
	if kind == fwdMedia {
		record = s.recordMedia(time.Now(), c.arrival)
	} else {
		var first atomic.Bool
		onChunk = func(int) {
			if first.CompareAndSwap(false, true) {
				s.m.ttft.observe(time.Since(start).Seconds())
			}
		}
		record = func(err error) {
			s.m.e2e.observe(time.Since(start).Seconds())
			if err != nil {
				s.m.finished("abort")
			}
		}
	}
	var released atomic.Bool
	be.fwd.Forward(ctx, onChunk, func(err error) {
		if !released.CompareAndSwap(false, true) {
			return
		}
		done()
		record(err)
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("request", "request_id", c.id, "path", c.path, "upstream", true, "err", err, "duration", time.Since(start))
		}
	})
	// The upstream has the request: its body need not stay in memory
	// while the answer streams back.
	ctx.Request.ResetBody()
}
