// Package client is the Go client of ttisd's control API. ttisctl uses it,
// and so do the bench and eval workflows to find a unit's address, model,
// device and credentials.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
)

// DefaultSocket is where a system-wide ttisd listens.
const DefaultSocket = "/run/ttis/ttisd.sock"

// Client talks to one ttisd over its unix socket. It is safe for
// concurrent use.
type Client struct {
	socket string
	hc     *http.Client
}

// New returns a client for the daemon listening on socket.
func New(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{socket: socket, hc: &http.Client{Transport: tr}}
}

// Socket returns the socket path the client dials.
func (c *Client) Socket() string { return c.socket }

// UnreachableError means no daemon answered on the socket.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach ttisd at %s: is it running? (%v)", e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Error is a non-2xx answer of the daemon.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// IsNotFound reports whether err says the unit does not exist.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == api.CodeNotFound
}

// IsUnreachable reports whether err says the daemon could not be reached.
func IsUnreachable(err error) bool {
	var e *UnreachableError
	return errors.As(err, &e)
}

// IsBusy reports whether err says the daemon is at a limit of its control
// socket (HTTP 503, code busy; the message names the limit): the same
// request may succeed a moment later.
func IsBusy(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == api.CodeBusy
}

// busyRetries is how often a query that found the daemon busy is sent
// again, after 100 ms and then twice as long each time up to 2 s: about
// 10 s in all, time for a flood of idle connections to time out.
const busyRetries = 8

// do sends a request. A query (GET, not a log stream) that finds the
// daemon busy is retried while ctx allows: it costs the daemon nothing
// and the answer is what the caller wants, whereas an action may not be
// sent twice unasked and a refused log stream must not add to the flood
// that filled its limit.
func (c *Client) do(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	retry := method == http.MethodGet && q.Get("follow") != "true"
	delay := 100 * time.Millisecond
	var busy error
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, method, path, q)
		if err != nil && busy != nil && ctx.Err() != nil {
			// The caller gave up during a retry: what it learnt is that
			// the daemon stayed busy, not that its own deadline passed.
			return nil, busy
		}
		if !retry || attempt == busyRetries || !IsBusy(err) {
			return resp, err
		}
		busy = err
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func (c *Client) once(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	u := "http://ttisd" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// A unix socket whose listen backlog is full refuses to connect
		// with EAGAIN: the daemon is there, but flooded.
		if ctx.Err() == nil && errors.Is(err, syscall.EAGAIN) {
			return nil, &Error{Status: http.StatusServiceUnavailable, Code: api.CodeBusy, Message: fmt.Sprintf("ttisd at %s is not accepting connections (its socket's backlog is full); try again later", c.socket)}
		}
		if ctx.Err() == nil && dialFailed(err) {
			return nil, &UnreachableError{Socket: c.socket, Err: err}
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var eb api.ErrorBody
		if json.Unmarshal(body, &eb) == nil && eb.Error.Message != "" {
			return nil, &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return nil, &Error{Status: resp.StatusCode, Code: api.CodeInternal, Message: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(body))}
	}
	return resp, nil
}

// dialFailed tells a daemon that is not there (no socket, nobody
// listening, no permission) from a failure in the middle of a request.
func dialFailed(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EACCES)
}

func (c *Client) getJSON(ctx context.Context, method, path string, q url.Values, v any) error {
	resp, err := c.do(ctx, method, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Info returns where the daemon keeps its state.
func (c *Client) Info(ctx context.Context) (api.Info, error) {
	var v api.Info
	return v, c.getJSON(ctx, http.MethodGet, "/v1/info", nil, &v)
}

// Units lists every unit.
func (c *Client) Units(ctx context.Context) (api.UnitList, error) {
	var v api.UnitList
	return v, c.getJSON(ctx, http.MethodGet, "/v1/units", nil, &v)
}

// Unit returns one unit with its last lines log lines.
func (c *Client) Unit(ctx context.Context, name string, lines int) (api.UnitDetail, error) {
	var v api.UnitDetail
	return v, c.getJSON(ctx, http.MethodGet, "/v1/units/"+url.PathEscape(name), url.Values{"lines": {strconv.Itoa(lines)}}, &v)
}

// Start starts a unit, clearing a failed state, and returns its state.
func (c *Client) Start(ctx context.Context, name string) (api.UnitDetail, error) {
	return c.action(ctx, name, "start")
}

// Stop stops a unit and returns once its server is gone.
func (c *Client) Stop(ctx context.Context, name string) (api.UnitDetail, error) {
	return c.action(ctx, name, "stop")
}

// Restart restarts a unit, clearing a failed state.
func (c *Client) Restart(ctx context.Context, name string) (api.UnitDetail, error) {
	return c.action(ctx, name, "restart")
}

func (c *Client) action(ctx context.Context, name, verb string) (api.UnitDetail, error) {
	var v api.UnitDetail
	return v, c.getJSON(ctx, http.MethodPost, "/v1/units/"+url.PathEscape(name)+"/"+verb, nil, &v)
}

// Reload re-reads the units folder and returns when the pass is done.
func (c *Client) Reload(ctx context.Context) (api.ReloadResult, error) {
	var v api.ReloadResult
	return v, c.getJSON(ctx, http.MethodPost, "/v1/reload", nil, &v)
}

// Devices lists the host's chips and their holders.
func (c *Client) Devices(ctx context.Context) (api.Devices, error) {
	var v api.Devices
	return v, c.getJSON(ctx, http.MethodGet, "/v1/devices", nil, &v)
}

// Logs calls fn with a unit's last lines log lines and, with follow, every
// later line until ctx ends or the daemon closes the stream. An error from
// fn ends the stream and is returned.
func (c *Client) Logs(ctx context.Context, name string, lines int, follow bool, fn func(api.LogLine) error) error {
	q := url.Values{"lines": {strconv.Itoa(lines)}, "follow": {strconv.FormatBool(follow)}}
	resp, err := c.do(ctx, http.MethodGet, "/v1/units/"+url.PathEscape(name)+"/logs", q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l api.LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("logs of %s: %w", name, err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("logs of %s: %w", name, err)
	}
	return nil
}
