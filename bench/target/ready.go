package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ttis-dev/ttis/runtime/openai"
)

// Ready says how long Resolve waits for a server that is still starting:
// a Tenstorrent server builds its tensor cache and captures traces for
// minutes before it answers, and run.py's workflows wait for it (GET
// /health every few seconds, up to 30 minutes for benchmarks) instead of
// failing at once.
type Ready struct {
	// Timeout bounds the wait; 0 asks once and fails at once.
	Timeout time.Duration
	// Poll is the time between probes (default 5 s).
	Poll time.Duration
	// Report is how often a waiting line goes to Progress (default 30 s;
	// the first failed probe is always reported).
	Report time.Duration
	// Progress receives the waiting lines (nil: none).
	Progress func(line string)
	// Now and Sleep are the clock (tests inject them; nil: the real one).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultReadyTimeout is run.py's wait for a server before benchmarks
// (benchmarking/run_benchmarks.py: wait_for_healthy(timeout=30 * 60)).
const DefaultReadyTimeout = 30 * time.Minute

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WaitReady polls srv until it is ready: GET /health answers 200, or the
// server has no /health (404, 405, 501) and lists its models. A server that
// does not answer, answers 5xx (503 while loading) or times out is still
// starting; one that refuses the credentials (401, 403) or answers another
// 4xx will not become ready by waiting, and the error says so at once.
// When r.Timeout passes first, the error names the last answer and the
// flag that raises the bound.
func WaitReady(ctx context.Context, srv *openai.Client, r Ready) error {
	now, sleep := r.Now, r.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	poll, report := r.Poll, r.Report
	if poll <= 0 {
		poll = 5 * time.Second
	}
	if report <= 0 {
		report = 30 * time.Second
	}
	start := now()
	var lastReport time.Time
	for probes := 1; ; probes++ {
		err := probe(ctx, srv)
		if err == nil {
			if probes > 1 && r.Progress != nil {
				r.Progress(fmt.Sprintf("%s is ready after %s", srv.BaseURL(), now().Sub(start).Round(time.Second)))
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !starting(err) {
			return fmt.Errorf("server at %s: %w", srv.BaseURL(), err)
		}
		waited := now().Sub(start)
		if waited+poll > r.Timeout {
			if r.Timeout <= 0 {
				return fmt.Errorf("server at %s is not ready: %w (--wait-ready waits for a server that is still starting)", srv.BaseURL(), err)
			}
			return fmt.Errorf("server at %s was not ready after %s (%d probes): %w (raise --wait-ready, or see the server's log)",
				srv.BaseURL(), waited.Round(time.Second), probes, err)
		}
		if r.Progress != nil && (lastReport.IsZero() || now().Sub(lastReport) >= report) {
			lastReport = now()
			r.Progress(fmt.Sprintf("waiting for %s to be ready (%s of %s): %v", srv.BaseURL(), waited.Round(time.Second), r.Timeout, err))
		}
		if err := sleep(ctx, poll); err != nil {
			return err
		}
	}
}

// probe is one readiness check.
func probe(ctx context.Context, srv *openai.Client) error {
	err := srv.Health(ctx)
	var oe *openai.Error
	if err == nil || !errors.As(err, &oe) || oe.Kind != openai.KindHTTP {
		return err
	}
	switch oe.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		// No /health (an OpenAI-compatible server without vLLM's routes):
		// its model list answers when it is up, as run.py probes remote
		// endpoints.
		_, err := srv.Models(ctx)
		return err
	}
	return err
}

// starting reports whether err is what a server that is still starting
// answers.
func starting(err error) bool {
	var oe *openai.Error
	if !errors.As(err, &oe) {
		return false
	}
	switch oe.Kind {
	case openai.KindTransport, openai.KindTimeout:
		return true
	case openai.KindHTTP:
		return oe.Status >= 500 || oe.Status == http.StatusRequestTimeout || oe.Status == http.StatusTooManyRequests
	}
	return false
}
