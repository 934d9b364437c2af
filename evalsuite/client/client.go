// Package client talks to an OpenAI-compatible server (vLLM's shapes) for
// the eval runner: text generation through /v1/completions or
// /v1/chat/completions, and continuation log-likelihoods through
// /v1/completions with echo and logprobs. It retries transient failures
// with exponential back-off and bounds every attempt with a timeout.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/evalsuite"
)

// API selects the endpoint used for generation.
type API string

// The supported APIs (lm-eval's local-completions and
// local-chat-completions).
const (
	Completions API = "completions"
	Chat        API = "chat"
)

// ErrorKind classifies a failed request in results and sample files.
type ErrorKind string

// The error kinds.
const (
	KindHTTP        ErrorKind = "http_status"
	KindTransport   ErrorKind = "transport"
	KindTimeout     ErrorKind = "timeout"
	KindBadResponse ErrorKind = "bad_response"
	KindEmpty       ErrorKind = "empty_response"
	KindUnsupported ErrorKind = "unsupported"
)

// Error is a request that failed after its retries.
type Error struct {
	Kind     ErrorKind
	Status   int
	Attempts int
	Msg      string
}

func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" %d", e.Status)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s + ": " + e.Msg
}

// Config configures a Client.
type Config struct {
	// BaseURL is the server root ("http://127.0.0.1:8000"); a trailing
	// "/v1" or endpoint path is accepted and trimmed.
	BaseURL string
	Model   string
	API     API
	// APIKey is sent as a bearer token when set.
	APIKey string
	// MaxRetries is the number of attempts per request (lm-eval's
	// max_retries; at least 1).
	MaxRetries int
	// Timeout bounds one attempt (lm-eval's timeout, 300 s by default).
	Timeout time.Duration
	// Seed is sent with every request.
	Seed int
	// HTTP is the transport (a default client when nil).
	HTTP *http.Client
	// Backoff returns the wait before retry n (1-based); lm-eval's
	// tenacity schedule when nil. A server's Retry-After wins when longer.
	Backoff func(n int) time.Duration
}

// Client is an eval backend for one server and model.
type Client struct {
	cfg  Config
	root string
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	root := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	for _, suffix := range []string{"/chat/completions", "/completions", "/v1"} {
		root = strings.TrimSuffix(root, suffix)
	}
	if !strings.HasPrefix(root, "http://") && !strings.HasPrefix(root, "https://") {
		return nil, fmt.Errorf("server URL %q: want http:// or https://", cfg.BaseURL)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("no model name to send")
	}
	switch cfg.API {
	case "":
		cfg.API = Completions
	case Completions, Chat:
	default:
		return nil, fmt.Errorf("unknown API %q (want completions or chat)", cfg.API)
	}
	if cfg.MaxRetries < 1 {
		cfg.MaxRetries = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 300 * time.Second
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	if cfg.Backoff == nil {
		cfg.Backoff = TenacityBackoff
	}
	return &Client{cfg: cfg, root: root}, nil
}

// API reports the generation endpoint in use.
func (c *Client) API() API { return c.cfg.API }

// Model reports the model name sent.
func (c *Client) Model() string { return c.cfg.Model }

// BaseURL reports the server root.
func (c *Client) BaseURL() string { return c.root }

// TenacityBackoff is lm-eval's wait_exponential(multiplier=0.5, min=1,
// max=10) after attempt n: 0.5·2ⁿ⁻¹ seconds clamped to [1 s, 10 s].
func TenacityBackoff(n int) time.Duration {
	s := 0.5 * math.Pow(2, float64(n-1))
	s = min(max(s, 1), 10)
	return time.Duration(s * float64(time.Second))
}

// Do answers one request; raw is the server's final response body.
func (c *Client) Do(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	switch inst.Kind {
	case evalsuite.KindGenerate:
		if c.cfg.API == Chat {
			return c.chat(ctx, inst)
		}
		return c.complete(ctx, inst)
	case evalsuite.KindLoglikelihood:
		if c.cfg.API == Chat {
			return evalsuite.Response{}, nil, &Error{Kind: KindUnsupported, Msg: "log-likelihood needs the completions API (chat endpoints return no prompt logprobs); use a generative task variant"}
		}
		return c.loglikelihood(ctx, inst)
	}
	return evalsuite.Response{}, nil, &Error{Kind: KindUnsupported, Msg: fmt.Sprintf("request kind %q", inst.Kind)}
}

func (c *Client) genPayload(g *evalsuite.GenKwargs) map[string]any {
	p := map[string]any{"model": c.cfg.Model, "seed": c.cfg.Seed, "stream": false}
	if g == nil {
		return p
	}
	p["temperature"] = g.Temperature
	if g.MaxGenToks > 0 {
		p["max_tokens"] = g.MaxGenToks
	}
	if len(g.Until) > 0 {
		p["stop"] = g.Until
	}
	return p
}

func (c *Client) complete(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	p := c.genPayload(inst.Gen)
	p["prompt"] = inst.Context
	raw, err := c.post(ctx, "/v1/completions", p)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	resp, perr := ParseCompletion(raw)
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return resp, raw, nil
}

// ParseCompletion reads choices[0].text of a completions response. An
// empty text is an error of kind KindEmpty, so that it is reported rather
// than scored silently.
func ParseCompletion(raw []byte) (evalsuite.Response, *Error) {
	var body struct {
		Choices []struct {
			Text *string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: "decode completions response: " + err.Error()}
	}
	if len(body.Choices) == 0 || body.Choices[0].Text == nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: "completions response has no choices[0].text"}
	}
	if *body.Choices[0].Text == "" {
		return evalsuite.Response{}, &Error{Kind: KindEmpty, Msg: "the server generated no text"}
	}
	return evalsuite.Response{Text: *body.Choices[0].Text}, nil
}

func (c *Client) chat(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	p := c.genPayload(inst.Gen)
	if stop, ok := p["stop"].([]string); ok && len(stop) > 4 {
		p["stop"] = stop[:4] // OpenAI's limit, as lm-eval truncates
	}
	msgs := inst.Messages
	if len(msgs) == 0 {
		msgs = []evalsuite.Message{{Role: "user", Content: inst.Context}}
	}
	p["messages"] = msgs
	raw, err := c.post(ctx, "/v1/chat/completions", p)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	resp, perr := ParseChat(raw)
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return resp, raw, nil
}

// ParseChat reads choices[0].message.content of a chat response.
func ParseChat(raw []byte) (evalsuite.Response, *Error) {
	var body struct {
		Choices []struct {
			Message *struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: "decode chat response: " + err.Error()}
	}
	if len(body.Choices) == 0 || body.Choices[0].Message == nil || body.Choices[0].Message.Content == nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: "chat response has no choices[0].message.content"}
	}
	if *body.Choices[0].Message.Content == "" {
		return evalsuite.Response{}, &Error{Kind: KindEmpty, Msg: "the server generated no text"}
	}
	return evalsuite.Response{Text: *body.Choices[0].Message.Content}, nil
}

// Logprobs is the legacy OpenAI completions logprobs object.
type Logprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func (c *Client) loglikelihood(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	prompt := inst.Context + inst.Continuation
	p := map[string]any{
		"model": c.cfg.Model, "prompt": prompt, "temperature": 0, "max_tokens": 1,
		"logprobs": 1, "echo": true, "seed": c.cfg.Seed, "stream": false,
	}
	raw, err := c.post(ctx, "/v1/completions", p)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	resp, perr := ParseLoglikelihood(raw, utf8.RuneCountInString(inst.Context), utf8.RuneCountInString(prompt))
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return resp, raw, nil
}

// ParseLoglikelihood reads an echo+logprobs completions response and sums
// the continuation's log-probabilities (see ContinuationLogprob).
func ParseLoglikelihood(raw []byte, ctxChars, promptChars int) (evalsuite.Response, *Error) {
	var body struct {
		Choices []struct {
			Logprobs *Logprobs `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: "decode completions response: " + err.Error()}
	}
	if len(body.Choices) == 0 || body.Choices[0].Logprobs == nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: "completions response has no choices[0].logprobs (does the server support echo with logprobs?)"}
	}
	ll, greedy, err := ContinuationLogprob(*body.Choices[0].Logprobs, ctxChars, promptChars)
	if err != nil {
		return evalsuite.Response{}, &Error{Kind: KindBadResponse, Msg: err.Error()}
	}
	return evalsuite.Response{LogLikelihood: ll, IsGreedy: greedy}, nil
}

// ContinuationLogprob sums the log-probabilities of the echoed prompt
// tokens that belong to the continuation: those whose text offset (in
// characters) lies in [ctxChars, promptChars). Tokens at or past
// promptChars were generated and are ignored. A token that starts inside
// the context but ends inside the continuation is counted with the
// continuation, since it carries continuation text. isGreedy reports whether
// each counted token was its position's top token.
func ContinuationLogprob(lp Logprobs, ctxChars, promptChars int) (ll float64, isGreedy bool, err error) {
	n := len(lp.Tokens)
	if len(lp.TokenLogprobs) != n || len(lp.TextOffset) != n {
		return 0, false, fmt.Errorf("logprobs: %d tokens, %d token_logprobs, %d text_offset", n, len(lp.TokenLogprobs), len(lp.TextOffset))
	}
	if len(lp.TopLogprobs) != 0 && len(lp.TopLogprobs) != n {
		return 0, false, fmt.Errorf("logprobs: %d tokens but %d top_logprobs", n, len(lp.TopLogprobs))
	}
	isGreedy = true
	counted := 0
	for i := range n {
		off := lp.TextOffset[i]
		end := off + utf8.RuneCountInString(lp.Tokens[i])
		if off >= promptChars || end <= ctxChars {
			continue
		}
		if lp.TokenLogprobs[i] == nil {
			return 0, false, fmt.Errorf("logprobs: continuation token %d (%q) has no logprob", i, lp.Tokens[i])
		}
		v := *lp.TokenLogprobs[i]
		if math.IsNaN(v) || v > 1e-9 {
			return 0, false, fmt.Errorf("logprobs: token %d has log-probability %v", i, v)
		}
		ll += v
		counted++
		if len(lp.TopLogprobs) == n && lp.TopLogprobs[i] != nil {
			for tok, tv := range lp.TopLogprobs[i] {
				if tok != lp.Tokens[i] && tv > v {
					isGreedy = false
				}
			}
		}
	}
	if counted == 0 {
		return 0, false, fmt.Errorf("logprobs: no echoed token covers the continuation (characters %d-%d of the prompt)", ctxChars, promptChars)
	}
	return ll, isGreedy, nil
}

// post sends one JSON request with retries and returns the response body.
func (c *Client) post(ctx context.Context, path string, payload any) (json.RawMessage, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, &Error{Kind: KindBadResponse, Msg: "encode request: " + err.Error()}
	}
	var last *Error
	var lastBody json.RawMessage
	for attempt := 1; attempt <= c.cfg.MaxRetries; attempt++ {
		raw, retryAfter, e := c.attempt(ctx, path, body)
		if e == nil {
			return raw, nil
		}
		e.Attempts = attempt
		last, lastBody = e, raw
		if ctx.Err() != nil || !retryable(e) || attempt == c.cfg.MaxRetries {
			break
		}
		wait := max(c.cfg.Backoff(attempt), retryAfter)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return lastBody, last
		case <-t.C:
		}
	}
	return lastBody, last
}

func retryable(e *Error) bool {
	switch e.Kind {
	case KindTransport, KindTimeout:
		return true
	case KindHTTP:
		return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
	}
	return false
}

// maxBody bounds a response body read into memory.
const maxBody = 64 << 20

func (c *Client) attempt(ctx context.Context, path string, body []byte) (json.RawMessage, time.Duration, *Error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.root+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, &Error{Kind: KindTransport, Msg: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, 0, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("POST %s: no answer within %s", path, c.cfg.Timeout)}
		}
		return nil, 0, &Error{Kind: KindTransport, Msg: fmt.Sprintf("POST %s: %v", path, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, 0, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("POST %s: body not read within %s", path, c.cfg.Timeout)}
		}
		return nil, 0, &Error{Kind: KindTransport, Msg: fmt.Sprintf("POST %s: read body: %v", path, err)}
	}
	if resp.StatusCode != http.StatusOK {
		var retryAfter time.Duration
		if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
			retryAfter = min(time.Duration(s)*time.Second, time.Minute)
		}
		return validJSON(raw), retryAfter, &Error{Kind: KindHTTP, Status: resp.StatusCode, Msg: fmt.Sprintf("POST %s: %s", path, errorMessage(raw))}
	}
	if !json.Valid(raw) {
		return nil, 0, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("POST %s: response is not JSON (%d bytes)", path, len(raw))}
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && len(env.Error) > 0 && string(env.Error) != "null" {
		return raw, 0, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("POST %s: %s", path, errorMessage(raw))}
	}
	return raw, 0, nil
}

// validJSON keeps a body for the samples file only when it is JSON.
func validJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	return nil
}

// errorMessage extracts OpenAI's error.message (or a flat message) from an
// error body, else a prefix of the body.
func errorMessage(raw []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &env) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(env.Error, &nested) == nil && nested.Message != "" {
			return nested.Message
		}
		var flat string
		if json.Unmarshal(env.Error, &flat) == nil && flat != "" {
			return flat
		}
		if env.Message != "" {
			return env.Message
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

// FirstModel asks GET /v1/models for the served model's id.
func (c *Client) FirstModel(ctx context.Context) (string, error) {
	return FirstModel(ctx, c.cfg.HTTP, c.root, c.cfg.APIKey)
}

// FirstModel asks a server root's GET /v1/models for the first model id.
func FirstModel(ctx context.Context, hc *http.Client, baseURL, apiKey string) (string, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	root := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	root = strings.TrimSuffix(root, "/v1")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/v1/models", nil)
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list models: HTTP %d: %s", resp.StatusCode, errorMessage(raw))
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Data) == 0 || body.Data[0].ID == "" {
		return "", fmt.Errorf("list models: no model id in the answer of GET /v1/models")
	}
	return body.Data[0].ID, nil
}
