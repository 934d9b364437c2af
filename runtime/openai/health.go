package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Health asks GET /health once, with the client's headers: nil when the
// server answers 200 (vLLM's and ttis's "ready"). Otherwise an *Error:
// KindHTTP with the status (a ttis server answers 503 while its model
// loads; 404 means the server has no /health), KindTransport when nothing
// answers (a vLLM server that is still loading does not listen yet),
// KindTimeout when the answer takes longer than the client's Timeout.
func (c *Client) Health(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := c.newRequest(actx, http.MethodGet, "/health", nil)
	if err != nil {
		return &Error{Kind: KindTransport, Msg: err.Error()}
	}
	resp, _, err := c.send(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &Error{Kind: KindTimeout, Msg: fmt.Sprintf("GET /health: no answer within %s", c.cfg.Timeout)}
		}
		return &Error{Kind: KindTransport, Msg: fmt.Sprintf("GET /health: %v", err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	msg := "GET /health"
	if len(body) > 0 {
		msg += ": " + ErrorMessage(body)
	}
	return &Error{Kind: KindHTTP, Status: resp.StatusCode, Msg: msg}
}
