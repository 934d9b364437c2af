package openai

import (
	"context"
	"net/http"
)

// Fetch GETs path and returns the open response, whatever its status and
// body (a liveness probe's empty 200, a server's own JSON shape): the
// caller reads and closes the body. It is sent once, with the client's
// headers, and again on a new connection when a kept-alive one had been
// closed, as every call is.
func (c *Client) Fetch(ctx context.Context, path string) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	resp, _, err := c.send(req)
	return resp, err
}
