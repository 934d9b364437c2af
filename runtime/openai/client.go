package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ttis-dev/ttis/runtime/retryafter"
)

// Config says where a Client sends requests and how.
type Config struct {
	// BaseURL is the server's root ("http://127.0.0.1:8000"); a trailing
	// "/", "/v1" or endpoint path is accepted and dropped.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Header is added to every request (custom headers; an Authorization
	// here wins over APIKey).
	Header http.Header
	// MaxConns bounds the connections kept open to the server (default 4;
	// set it to the concurrency a caller drives).
	MaxConns int
	// Timeout bounds one attempt of a non-streamed call (default 5 min);
	// streamed calls are bounded by their context alone.
	Timeout time.Duration
	// MaxAttempts is how many times a non-streamed call that failed in a
	// retryable way is sent (default 1: no retry; lm-eval sends 3).
	MaxAttempts int
	// Backoff is the wait before attempt n+1 (n is 1-based); a server's
	// Retry-After wins when longer. Default: TenacityBackoff.
	Backoff func(n int) time.Duration
	// Transport replaces the default transport (tests).
	Transport http.RoundTripper
}

// Client talks to one OpenAI-compatible server. It is safe for concurrent
// use.
type Client struct {
	cfg  Config
	base string
	hc   *http.Client
	// fresh never reuses a connection: a request whose kept-alive
	// connection the server had closed is sent again on it.
	fresh *http.Client
	// staleRetries counts those second sends.
	staleRetries atomic.Int64
}

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	base, err := NormalizeBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConns < 1 {
		cfg.MaxConns = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.MaxAttempts < 1 {
		cfg.MaxAttempts = 1
	}
	if cfg.Backoff == nil {
		cfg.Backoff = TenacityBackoff
	}
	c := &Client{cfg: cfg, base: base}
	if cfg.Transport != nil {
		c.hc = &http.Client{Transport: cfg.Transport}
		c.fresh = c.hc
		return c, nil
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		// A larger read buffer means fewer syscalls per streamed token.
		ReadBufferSize:  64 << 10,
		WriteBufferSize: 16 << 10,
	}
	c.hc = &http.Client{Transport: tr}
	fr := tr.Clone()
	fr.DisableKeepAlives = true
	c.fresh = &http.Client{Transport: fr}
	return c, nil
}

// Close drops idle connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// BaseURL is the normalised server root.
func (c *Client) BaseURL() string { return c.base }

// StaleRetries is how many requests were sent a second time because the
// server had closed their kept-alive connection before answering.
func (c *Client) StaleRetries() int64 { return c.staleRetries.Load() }

// NormalizeBaseURL checks a server URL and strips a trailing "/", "/v1" or
// endpoint path, so "http://h:8000/v1/" and "http://h:8000" name the same
// server.
func NormalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("server url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("server url %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("server url %q: no host", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/chat/completions", "/completions", "/v1"} {
		p = strings.TrimSuffix(p, suffix)
	}
	u.Path, u.RawQuery, u.Fragment = p, "", ""
	return strings.TrimRight(u.String(), "/"), nil
}

// TenacityBackoff is lm-eval's wait_exponential(multiplier=0.5, min=1,
// max=10) after attempt n: 0.5·2ⁿ⁻¹ seconds clamped to [1 s, 10 s].
func TenacityBackoff(n int) time.Duration {
	s := 0.5 * math.Pow(2, float64(n-1))
	s = min(max(s, 1), 10)
	return time.Duration(s * float64(time.Second))
}

// header is what every request of the client carries: its credentials
// and Config's extra headers.
func (c *Client) header() http.Header {
	h := http.Header{}
	if c.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	for k, vs := range c.cfg.Header {
		h[k] = vs
	}
	return h
}

// newRequest builds a request to path with the client's headers.
func (c *Client) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range c.header() {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// send sends req, and sends it once more on a new connection when it went
// out on a kept-alive connection that the server had already closed: the
// request never reached a live server (no response byte came back), so the
// second send is no duplicate. Without this, a benchmark counts the
// client's own connection reuse as a server failure (llama.cpp's server
// closes idle connections after a few seconds). retried reports the second
// send.
func (c *Client) send(req *http.Request) (resp *http.Response, retried bool, err error) {
	var reused, answered atomic.Bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { reused.Store(i.Reused) },
		GotFirstResponseByte: func() { answered.Store(true) },
	}
	first := req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err = c.hc.Do(first)
	if err == nil || req.Context().Err() != nil || !reused.Load() || answered.Load() || !closedByPeer(err) {
		return resp, false, err
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, false, err
		}
	}
	c.staleRetries.Add(1)
	resp, err = c.fresh.Do(again)
	return resp, true, err
}

// closedByPeer reports whether err is a connection the other side closed.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "server closed idle connection")
}

// Stream POSTs a JSON body to path and returns the open response, whatever
// its status (the caller reads the event stream of a 200 and the error body
// of anything else, and closes the body). extra headers are added to the
// client's. retried reports a second send after a stale connection.
func (c *Client) Stream(ctx context.Context, path string, body []byte, extra http.Header) (resp *http.Response, retried bool, err error) {
	req, err := c.newRequest(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, false, err
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "identity")
	return c.send(req)
}

// maxBody bounds a non-streamed answer read into memory.
const maxBody = 64 << 20

// PostJSON sends payload (encoded as JSON) to path and returns the answer's
// body, retrying as Config says. A failure is an *Error; its body (when
// the server sent JSON) comes back too, for the caller's records.
func (c *Client) PostJSON(ctx context.Context, path string, payload any) (json.RawMessage, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, &Error{Kind: KindBadResponse, Msg: "encode request: " + err.Error()}
	}
	return c.call(ctx, http.MethodPost, path, body)
}

// Get sends a GET to path and returns the answer's body, retrying as Config
// says.
func (c *Client) Get(ctx context.Context, path string) (json.RawMessage, error) {
	return c.call(ctx, http.MethodGet, path, nil)
}

func (c *Client) call(ctx context.Context, method, path string, body []byte) (json.RawMessage, error) {
	raw, e := retrying(ctx, c, func() (json.RawMessage, time.Duration, *Error) { return c.attempt(ctx, method, path, body) })
	if e != nil {
		// The last answer's body goes back with its error (a server's
		// error object, for callers that read it).
		return raw, e
	}
	return raw, nil
}

// retrying runs try until it succeeds, its error is not Retryable, ctx
// ends or Config's MaxAttempts are spent, waiting Config's back-off (or
// the server's Retry-After, when longer) between tries. It returns the
// last try's value and error, the error counting the attempts made.
func retrying[T any](ctx context.Context, c *Client, try func() (T, time.Duration, *Error)) (T, *Error) {
	var last *Error
	var lastVal T
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		v, retryAfter, e := try()
		if e == nil {
			return v, nil
		}
		e.Attempts = attempt
		last, lastVal = e, v
		if ctx.Err() != nil || !e.Retryable() || attempt == c.cfg.MaxAttempts {
			break
		}
		t := time.NewTimer(max(c.cfg.Backoff(attempt), retryAfter))
		select {
		case <-ctx.Done():
			t.Stop()
			return lastVal, last
		case <-t.C:
		}
	}
	return lastVal, last
}

func (c *Client) attempt(ctx context.Context, method, path string, body []byte) (json.RawMessage, time.Duration, *Error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	what := method + " " + path
	req, err := c.newRequest(actx, method, path, body)
	if err != nil {
		return nil, 0, &Error{Kind: KindTransport, Msg: err.Error()}
	}
	resp, _, err := c.send(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, 0, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("%s: no answer within %s", what, c.cfg.Timeout)}
		}
		return nil, 0, &Error{Kind: KindTransport, Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, 0, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("%s: body not read within %s", what, c.cfg.Timeout)}
		}
		return nil, 0, &Error{Kind: KindTransport, Msg: fmt.Sprintf("%s: read body: %v", what, err)}
	}
	if resp.StatusCode != http.StatusOK {
		wait, _ := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now(), maxRetryAfter)
		return validJSON(raw), wait, &Error{Kind: KindHTTP, Status: resp.StatusCode,
			Msg: fmt.Sprintf("%s: %s", what, ErrorMessage(raw))}
	}
	if !json.Valid(raw) {
		return nil, 0, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("%s: answer is not JSON (%d bytes)", what, len(raw))}
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && len(env.Error) > 0 && string(env.Error) != "null" {
		return raw, 0, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("%s: %s", what, ErrorMessage(raw))}
	}
	return raw, 0, nil
}

// maxRetryAfter caps the wait a server's Retry-After asks for between
// tries: a benchmark or an eval keeps going rather than sleep on a
// server's word.
const maxRetryAfter = time.Minute

// validJSON keeps a body for the caller's records only when it is JSON.
func validJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	return nil
}

// HTTPError describes a non-200 streamed answer with the server's own
// message, reading at most 8 KiB of its body.
func HTTPError(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	msg := strings.TrimSpace(string(b))
	if len(b) > 0 {
		msg = ErrorMessage(b)
	}
	if msg == "" {
		return fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
}

// Models lists the served models (GET /v1/models).
func (c *Client) Models(ctx context.Context) ([]ModelCard, error) {
	raw, err := c.Get(ctx, "/v1/models")
	if err != nil {
		return nil, fmt.Errorf("list models at %s: %w", c.base, err)
	}
	var list ModelList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("list models at %s: decode: %w", c.base, err)
	}
	return list.Data, nil
}
