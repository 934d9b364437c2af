package serve

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"time"

	"github.com/valyala/fasthttp"
)

// Admission before work. A request is judged and bounded before anything
// is done for it that costs in proportion to its size; text, media and
// upstream requests share these steps:
//
//  1. Reading. Once it is authenticated, a request's body counts against
//     the server's reading budget (Config.MaxInflightBytes, the unit's
//     limits.max_inflight_bytes) while it is decoded and judged, until
//     its prompt is tokenized or it holds its slot (media and upstream
//     requests, whose work then counts against the slots). When the
//     budget is spent the request waits for it in the wait queue, as one
//     place of limits.max_queue; beyond that it is refused with 429.
//     fasthttp has already read the body (at most limits.max_body_bytes);
//     the budget bounds the decoding and tokenizing done with it, which
//     cost several times its size.
//  2. Size. A text prompt is judged by its length in bytes before it is
//     tokenized: with a tokenizer that bounds the text one token covers
//     (runtime.TextBounder), a prompt that cannot fit the context window
//     is refused (400) without tokenizing it, and one that could fit is
//     never refused on that ground.
//  3. Slots. A request takes its slots (one per sequence), or places in
//     the wait queue, before it is tokenized or handed to the engine or
//     the upstream; with the queue full it is refused with 429.

// readHoldKey is the fasthttp user value under which a request's reading
// hold is kept.
const readHoldKey = "ttis.reading"

// readHold is the part of the reading budget one request holds.
type readHold struct {
	n        int64
	released bool
}

// admitRead counts the request's body against the reading budget, waiting
// in the queue while the budget is spent. It returns the error to answer
// when the request is refused (queue full, or its deadline or the
// server's shutdown came while it waited). The hold ends with endRead,
// which handle also calls when the request ends.
func (s *Server) admitRead(ctx *fasthttp.RequestCtx, arrival time.Time) *apiError {
	n := int64(len(ctx.Request.Body()))
	if n == 0 {
		return nil
	}
	// A body over the budget (never more than limits.max_body_bytes, which
	// the unit checks against it) takes all of it.
	n = min(n, s.cfg.MaxInflightBytes)
	if !s.reading.TryAcquire(n) {
		lv := *s.live.Load()
		if s.m.waiting.Add(1) > int64(lv.MaxQueue) {
			s.m.waiting.Add(-1)
			retryAfter(ctx, time.Second)
			return &apiError{Status: fasthttp.StatusTooManyRequests, Type: "RateLimitError",
				Message: fmt.Sprintf("the server is busy: %d bytes of requests are being read (limits.max_inflight_bytes = %d) and the wait queue (limits.max_queue = %d) is full; retry later", s.m.readingBytes.Load(), s.cfg.MaxInflightBytes, lv.MaxQueue)}
		}
		wctx, cancel := s.requestContext(arrival, lv.RequestTimeout)
		err := s.reading.Acquire(wctx, n)
		cancel()
		s.m.waiting.Add(-1)
		if err != nil {
			return waitError(err, lv.RequestTimeout)
		}
	}
	s.m.readingBytes.Add(n)
	ctx.SetUserValue(readHoldKey, &readHold{n: n})
	return nil
}

// endRead gives back the request's part of the reading budget; later
// calls do nothing.
func (s *Server) endRead(ctx *fasthttp.RequestCtx) {
	h, ok := ctx.UserValue(readHoldKey).(*readHold)
	if !ok || h.released {
		return
	}
	h.released = true
	s.reading.Release(h.n)
	s.m.readingBytes.Add(-h.n)
	if s.readSinceFree.Add(h.n) >= freeAfterBytes && s.freeing.CompareAndSwap(false, true) {
		go s.freeAfterBurst()
	}
}

// After a burst of large bodies, the memory they and their decoding took
// is garbage that the Go runtime would hand back to the system only after
// its periodic collection (every two minutes) and a slow scavenge: a
// server that goes quiet after a burst would keep it all that time. So
// once at least freeAfterBytes were read, the server waits for a quiet
// spell (freeDelay in which less than quietBytes were read, so that the
// answers in flight are written and their bodies let go, while ordinary
// small requests go on) and then collects and returns the memory. Under
// a steady stream of large bodies it does so every maxFreeWait at most.
const (
	freeAfterBytes = 64 << 20
	quietBytes     = 1 << 20
	freeDelay      = time.Second
	maxFreeWait    = 10 * time.Minute
)

func (s *Server) freeAfterBurst() {
	defer s.freeing.Store(false)
	last := s.readSinceFree.Load()
	t := time.NewTicker(freeDelay)
	defer t.Stop()
	for range int(maxFreeWait / freeDelay) {
		select {
		case <-s.genCtx.Done():
			return
		case <-t.C:
		}
		now := s.readSinceFree.Load()
		if now-last < quietBytes && s.m.readingBytes.Load() < quietBytes {
			last = now
			break
		}
		last = now
	}
	s.readSinceFree.Add(-last)
	// Bodies go back to fasthttp's sync.Pool when their requests end; the
	// first collection moves them to the pool's victim cache, the second
	// (FreeOSMemory's) frees them.
	goruntime.GC()
	debug.FreeOSMemory()
}

// requestContext is a request's context: cancelled when the server stops
// generating (the end of the shutdown grace) and, with a timeout, at
// limits.request_timeout after the request's arrival.
func (s *Server) requestContext(arrival time.Time, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeout(s.genCtx, timeout-time.Since(arrival))
	}
	return context.WithCancel(s.genCtx)
}

// waitError maps a failed wait for admission to an API error.
func waitError(err error, timeout time.Duration) *apiError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: fasthttp.StatusRequestTimeout, Type: "TimeoutError", Message: fmt.Sprintf("the request did not finish within limits.request_timeout (%s)", timeout)}
	case errors.Is(err, context.Canceled):
		return &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the request was cancelled because the server is shutting down"}
	}
	return &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()}
}

// takeSlots takes n slots, or n places in the wait queue when the slots
// are busy (queued is then true: awaitSlots waits for them). It reports
// false, having taken nothing, when the queue is full. lv is the live
// settings it judged by.
func (s *Server) takeSlots(n int64) (queued bool, lv Live, ok bool) {
	lv = *s.live.Load()
	if s.sem.TryAcquire(n) {
		s.m.running.Add(n)
		return false, lv, true
	}
	if s.m.waiting.Add(n) > int64(lv.MaxQueue) {
		s.m.waiting.Add(-n)
		return false, lv, false
	}
	return true, lv, true
}

// awaitSlots waits for the n slots takeSlots queued for; the queue places
// are given back whatever the outcome.
func (s *Server) awaitSlots(ctx context.Context, n int64) error {
	err := s.sem.Acquire(ctx, n)
	s.m.waiting.Add(-n)
	if err == nil {
		s.m.running.Add(n)
	}
	return err
}

// releaseSlots gives back n slots.
func (s *Server) releaseSlots(n int64) {
	s.sem.Release(n)
	s.m.running.Add(-n)
}

// refuseBusy answers 429 with Retry-After: every slot is taken and the
// wait queue is full.
func (s *Server) refuseBusy(ctx *fasthttp.RequestCtx, lv Live) {
	retryAfter(ctx, time.Second)
	writeError(ctx, &apiError{Status: fasthttp.StatusTooManyRequests, Type: "RateLimitError",
		Message: fmt.Sprintf("the server is busy: all %d slots are in use and the wait queue (limits.max_queue = %d) is full; retry later", s.cfg.MaxConcurrency, lv.MaxQueue)})
}
