package serve

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Upstream is an OpenAI-compatible server a unit forwards its API to (the
// vllm runtime's *vllm.Server satisfies it). The front door keeps auth,
// admission (one slot per generation request), the request log and the
// queue and latency metrics; the upstream does the rest.
type Upstream interface {
	// Forward sends ctx's request upstream and writes the answer to ctx;
	// onChunk sees each body chunk, done is called once at the end. It is
	// done with ctx's request when it returns (the server then drops the
	// request body).
	Forward(ctx *fasthttp.RequestCtx, onChunk func(n int), done func(error))
	// Model is the name the upstream serves.
	Model() string
	// Done is closed when the upstream exits; Err says why.
	Done() <-chan struct{}
	Err() error
	Close() error
}

type upstreamState struct{ u Upstream }

// SetUpstream makes the server ready, forwarding to u.
func (s *Server) SetUpstream(u Upstream) {
	s.upstream.Store(&upstreamState{u: u})
}

// upstreamAlive reports whether an upstream is set and still running.
func (st *upstreamState) alive() bool {
	select {
	case <-st.u.Done():
		return false
	default:
		return true
	}
}

// forward serves an authenticated API request from the upstream.
func (s *Server) forward(ctx *fasthttp.RequestCtx, st *upstreamState, path, reqID string, start time.Time) {
	if !st.alive() {
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: fmt.Sprintf("the upstream server exited: %v", st.u.Err())})
		return
	}
	if !admitted(ctx, path) {
		st.u.Forward(ctx, nil, nil)
		return
	}
	queued, lv, ok := s.takeSlots(1)
	if !ok {
		s.refuseBusy(ctx, lv)
		return
	}
	if queued {
		wctx, cancel := s.requestContext(start, lv.RequestTimeout)
		err := s.awaitSlots(wctx, 1)
		cancel()
		if err != nil {
			writeError(ctx, waitError(err, lv.RequestTimeout))
			return
		}
	}
	// The upstream tokenizes what it is sent; its work is bounded by the
	// slot from here on.
	s.endRead(ctx)
	s.m.queue.observe(time.Since(start).Seconds())
	var first atomic.Bool
	var released atomic.Bool
	st.u.Forward(ctx, func(int) {
		if first.CompareAndSwap(false, true) {
			s.m.ttft.observe(time.Since(start).Seconds())
		}
	}, func(err error) {
		if !released.CompareAndSwap(false, true) {
			return
		}
		s.releaseSlots(1)
		s.m.e2e.observe(time.Since(start).Seconds())
		if err != nil {
			s.m.finished("abort")
		}
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("request", "request_id", reqID, "path", path, "upstream", true, "err", err, "duration", time.Since(start))
		}
	})
	// The upstream has the request: its body need not stay in memory
	// while the answer streams back.
	ctx.Request.ResetBody()
}
