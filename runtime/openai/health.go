package openai

import (
	"context"
	"errors"
	"fmt"

	"github.com/ttis-dev/ttis/runtime"
)

// Health asks GET /health once (runtime.ProbeHealth), with the client's
// headers: nil when the server answers 200 (vLLM's and ttis's "ready").
// Otherwise an *Error: KindHTTP with the status (a ttis server answers 503
// while its model loads; 404 means the server has no /health),
// KindTransport when nothing answers (a vLLM server that is still loading
// does not listen yet), KindTimeout when the answer takes longer than the
// client's Timeout.
func (c *Client) Health(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	a, err := runtime.ProbeHealth(actx, c.hc, c.base, c.header())
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &Error{Kind: KindTimeout, Msg: fmt.Sprintf("GET /health: no answer within %s", c.cfg.Timeout)}
		}
		return &Error{Kind: KindTransport, Msg: fmt.Sprintf("GET /health: %v", err)}
	}
	if a.Ready() {
		return nil
	}
	msg := "GET /health"
	if len(a.Body) > 0 {
		msg += ": " + ErrorMessage(a.Body)
	}
	return &Error{Kind: KindHTTP, Status: a.Status, Msg: msg}
}
