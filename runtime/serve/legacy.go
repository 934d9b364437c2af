package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/auth"
	"github.com/ttis-dev/ttis/runtime/toolcall"
)

// The older Tenstorrent inference API (tt-inference-server's and
// tt-studio's Flask inference_api_server.py, behind a JWT proxy), served
// at a unit's [api] legacy_route on every runtime:
//
//	POST <route>  {"text": "…", "temperature": 1.0, "top_k": 10, "top_p": 0.9,
//	               "max_tokens": 128, "stop_sequence": ".", "return_prompt": false}
//
// The answer is the generated text, raw, streamed with HTTP/1.1 chunked
// encoding as it is produced and ended by "<|endoftext|>", as the
// original's backend wrote it. Numbers may be given as strings
// ("temperature": "1"), converted as Python's float() and int() do; the
// parameter ranges and the messages of a bad request are the original's,
// in its error shape {"status_code": 400, "message": "…"}. The unit's auth
// applies, with the messages of the original's JWT check; its jwt mode
// accepts the original's tokens (team_id and token_id claims).

// legacyEnd ends every answer.
const legacyEnd = "<|endoftext|>"

// legacyParam is a parameter of the legacy API: its Python type, default
// and bounds.
type legacyParam struct {
	key    string
	kind   string // "float", "int", "str" or "bool"
	def    any
	lo, hi float64 // bounds, when lo < hi
}

// legacyParams are get_user_parameters' and apply_parameter_bounds', in
// their order (the first error is reported).
var legacyParams = []legacyParam{
	{"temperature", "float", 1.0, 0.01, 100.0},
	{"top_p", "float", 0.9, 0.01, 1.0},
	{"top_k", "int", int64(10), 1, 1000},
	{"max_tokens", "int", int64(128), 1, 2048},
	{"stop_sequence", "str", nil, 0, 0},
	{"return_prompt", "bool", false, 0, 0},
}

// legacyError is an error in the legacy shape.
type legacyError struct {
	status int
	msg    string
}

func writeLegacyError(ctx *fasthttp.RequestCtx, e *legacyError) {
	b := []byte(`{"status_code":`)
	b = strconv.AppendInt(b, int64(e.status), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.msg)
	b = append(b, '}')
	ctx.Response.ResetBody()
	ctx.SetStatusCode(e.status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// pyType is Python's type() of a JSON value, as the original's messages
// print it.
func pyType(v any) string {
	name := "NoneType"
	switch x := v.(type) {
	case string:
		name = "str"
	case bool:
		name = "bool"
	case json.Number:
		name = "int"
		if strings.ContainsAny(x.String(), ".eE") {
			name = "float"
		}
	case []any:
		name = "list"
	case map[string]any:
		name = "dict"
	}
	return "<class '" + name + "'>"
}

// pyStr is Python's str() of a number for the bounds message.
func pyStr(v any) string {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return "nan"
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		}
		return toolcall.PyFloat(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// convert is safe_convert_type: Python's float(), int(), str() or bool()
// of a JSON value.
func (p legacyParam) convert(v any) (any, bool) {
	switch p.kind {
	case "float":
		switch x := v.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(x.String(), 64)
			return f, err == nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			return f, err == nil
		case bool:
			if x {
				return 1.0, true
			}
			return 0.0, true
		}
	case "int":
		switch x := v.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i, true
			}
			f, err := strconv.ParseFloat(x.String(), 64)
			if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1<<62 {
				return nil, false
			}
			return int64(f), true // int() truncates a float
		case string:
			i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			return i, err == nil
		case bool:
			if x {
				return int64(1), true
			}
			return int64(0), true
		}
	case "str":
		switch x := v.(type) {
		case string:
			return x, true
		case json.Number:
			return x.String(), true
		case bool:
			if x {
				return "True", true
			}
			return "False", true
		}
	case "bool":
		switch x := v.(type) {
		case nil:
			return false, true
		case bool:
			return x, true
		case string:
			return x != "", true
		case json.Number:
			f, _ := strconv.ParseFloat(x.String(), 64)
			return f != 0, true
		case []any:
			return len(x) > 0, true
		case map[string]any:
			return len(x) > 0, true
		}
	}
	return nil, false
}

// legacyRequest is a validated legacy request.
type legacyRequest struct {
	text         string
	temperature  float64
	topP         float64
	topK         int64
	maxTokens    int64
	stop         string
	returnPrompt bool
}

// parseLegacy is sanitize_request.
func parseLegacy(ctx *fasthttp.RequestCtx) (*legacyRequest, *legacyError) {
	bad := func(format string, args ...any) *legacyError {
		return &legacyError{status: fasthttp.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
	}
	mt, _, err := mime.ParseMediaType(string(ctx.Request.Header.ContentType()))
	if err != nil || !(mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil, bad("Request was not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(ctx.PostBody()))
	dec.UseNumber()
	var data map[string]any
	if err := dec.Decode(&data); err != nil || data == nil || dec.More() {
		return nil, bad("Malformed JSON request body")
	}
	r := &legacyRequest{}
	if v, ok := data["text"]; ok && v != nil {
		s, ok := legacyParam{key: "text", kind: "str"}.convert(v)
		if !ok {
			return nil, bad("Parameter: text is type=%s, expected <class 'str'>", pyType(v))
		}
		r.text = s.(string)
	}
	vals := make([]any, len(legacyParams))
	for i, p := range legacyParams {
		v, present := data[p.key]
		if !present || (v == nil && p.kind == "str") {
			vals[i] = p.def
			continue
		}
		c, ok := p.convert(v)
		if !ok {
			return nil, bad("Parameter: %s is type=%s, expected <class '%s'>", p.key, pyType(v), p.kind)
		}
		vals[i] = c
	}
	if r.text == "" {
		return nil, bad("required 'text' parameter is either empty or not provided")
	}
	for i, p := range legacyParams {
		if p.lo >= p.hi {
			continue
		}
		var x float64
		switch v := vals[i].(type) {
		case float64:
			x = v
		case int64:
			x = float64(v)
		}
		if !(p.lo <= x && x <= p.hi) { // NaN is out of bounds, as in Python
			lo, hi := pyStr(p.lo), pyStr(p.hi)
			if p.kind == "int" {
				lo, hi = pyStr(int64(p.lo)), pyStr(int64(p.hi))
			}
			return nil, bad("Parameter: %s=%s is outside bounds, %s <= %s <= %s.", p.key, pyStr(vals[i]), lo, p.key, hi)
		}
	}
	r.temperature, r.topP = vals[0].(float64), vals[1].(float64)
	r.topK, r.maxTokens = vals[2].(int64), vals[3].(int64)
	if s, ok := vals[4].(string); ok {
		r.stop = s
	}
	r.returnPrompt = vals[5].(bool)
	return r, nil
}

// legacyAuth is the original's read_authorization with the unit's
// verifier: a missing header or another scheme than bearer, then a token
// the verifier refuses, answer 401, as the JWT proxy did.
func (s *Server) legacyAuth(ctx *fasthttp.RequestCtx) *legacyError {
	v := s.cfg.Auth
	if v == nil || v.Mode() == auth.ModeNone {
		return nil
	}
	h := ctx.Request.Header.Peek("Authorization")
	if len(h) == 0 {
		return &legacyError{fasthttp.StatusUnauthorized, "Must provide Authorization header."}
	}
	scheme, _, _ := strings.Cut(string(h), " ")
	if scheme = strings.ToLower(scheme); scheme != "bearer" {
		return &legacyError{fasthttp.StatusUnauthorized, fmt.Sprintf("Authorization scheme was '%s' instead of bearer", scheme)}
	}
	if _, err := v.Verify(h); err != nil {
		msg := strings.TrimPrefix(err.Error(), auth.ErrUnauthorized.Error()+": ")
		if rest, ok := strings.CutPrefix(msg, "invalid token: "); ok {
			msg = "JWT payload decode error: " + rest
		}
		return &legacyError{fasthttp.StatusUnauthorized, msg}
	}
	return nil
}

// legacy serves the legacy route.
func (s *Server) legacy(ctx *fasthttp.RequestCtx, reqID string, start time.Time) {
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", "POST")
		writeLegacyError(ctx, &legacyError{fasthttp.StatusMethodNotAllowed, "The method is not allowed for the requested URL."})
		return
	}
	if e := s.legacyAuth(ctx); e != nil {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="ttis"`)
		writeLegacyError(ctx, e)
		return
	}
	if s.draining.Load() {
		ctx.Response.Header.Set("Retry-After", "5")
		writeLegacyError(ctx, &legacyError{fasthttp.StatusServiceUnavailable, "the server is shutting down"})
		return
	}
	if ae := s.admitRead(ctx, start); ae != nil {
		writeLegacyError(ctx, &legacyError{ae.Status, ae.Message})
		return
	}
	r, e := parseLegacy(ctx)
	if e != nil {
		writeLegacyError(ctx, e)
		return
	}
	if up := s.upstream.Load(); up != nil {
		s.legacyUpstream(ctx, up, r, reqID, start)
		return
	}
	st := s.state.Load()
	if st == nil {
		ctx.Response.Header.Set("Retry-After", "5")
		writeLegacyError(ctx, &legacyError{fasthttp.StatusServiceUnavailable, "the model is loading"})
		return
	}
	gr := &genRequest{promptTexts: []string{r.text}, n: 1, maxTokens: int(r.maxTokens), maxTokensArg: "max_tokens", addSpecial: true, logprobs: -1,
		sampling: runtime.Sampling{Temperature: float32(r.temperature), TopP: float32(r.topP), TopK: int(r.topK), RepetitionPenalty: 1}}
	if r.stop != "" {
		gr.stop = []string{r.stop}
	}
	j, ae := s.newJob(st, gr, reqID, start)
	if ae != nil {
		writeLegacyError(ctx, &legacyError{ae.Status, ae.Message})
		return
	}
	if _, ok := s.admit(j, start); !ok {
		retryAfter(ctx, time.Second)
		writeLegacyError(ctx, &legacyError{fasthttp.StatusServiceUnavailable, "Service overloaded, try again later."})
		return
	}
	if ae := j.tokenize(); ae != nil {
		j.end()
		writeLegacyError(ctx, &legacyError{ae.Status, ae.Message})
		return
	}
	s.doneReading(ctx)
	prefix := ""
	if r.returnPrompt {
		prefix = r.text
	}
	conn := ctx.Conn()
	http11 := ctx.Request.Header.IsHTTP11()
	keep := http11 && !ctx.Request.Header.ConnectionClose() && !s.draining.Load()
	ctx.HijackSetNoResponse(true)
	keep = j.streamRaw(conn, keep, http11, prefix)
	ctx.Hijack(func(hc net.Conn) { s.keepConn(conn, hc, keep) })
}

// rawSink writes a sequence's text as it is, for the legacy API.
type rawSink struct{ *sseSink }

func (k rawSink) emit(_ *job, q *seqState, _ bool) {
	for _, e := range q.events {
		k.buf = append(k.buf, e.text...)
	}
}

// ping writes nothing: raw text has no room for heartbeats.
func (rawSink) ping() error { return nil }

// streamRaw is stream for the legacy API: the text, raw, then the end
// marker. It reports whether the connection may serve the client's next
// request.
func (j *job) streamRaw(conn net.Conn, keep, chunked bool, prefix string) (kept bool) {
	k := &sseSink{conn: conn, timeout: j.s.cfg.WriteTimeout, chunked: chunked}
	status := "ok"
	defer func() {
		if p := recover(); p != nil {
			j.s.log.Error("panic while streaming", "request_id", j.id, "panic", p)
			status = "panic"
			kept = false
		}
		j.end()
		if j.s.log.Enabled(context.Background(), slog.LevelDebug) {
			j.s.log.Debug("request", "request_id", j.id, "legacy", true, "result", status, "duration", time.Since(j.arrival))
		}
	}()
	if err := k.header(j.id, keep); err != nil {
		status = "client gone"
		return false
	}
	if j.queued > 0 {
		if err := j.waitSlots(nil); err != nil {
			status = err.Error()
			return k.end() == nil && keep
		}
	}
	if e := j.start(); e != nil {
		status = e.Message
		return k.end() == nil && keep
	}
	k.buf = append(k.buf, prefix...)
	err := j.pump(rawSink{k})
	switch {
	case errors.Is(err, errClientGone):
		status = "client gone"
		return false
	case err != nil:
		status = err.Error()
	default:
		k.buf = append(k.buf, legacyEnd...)
	}
	if k.flush() != nil {
		return false
	}
	return k.end() == nil && keep
}

// legacyUpstream serves a legacy request from the upstream server (the
// vllm runtime) as a streamed /v1/completions request, writing the text of
// its events raw.
func (s *Server) legacyUpstream(ctx *fasthttp.RequestCtx, up *upstreamState, r *legacyRequest, reqID string, start time.Time) {
	body := map[string]any{"model": up.u.Model(), "prompt": r.text, "max_tokens": r.maxTokens, "temperature": r.temperature,
		"top_p": r.topP, "top_k": r.topK, "stream": true}
	if r.stop != "" {
		body["stop"] = []string{r.stop}
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeLegacyError(ctx, &legacyError{fasthttp.StatusBadRequest, err.Error()})
		return
	}
	sub := &fasthttp.RequestCtx{}
	sub.Request.Header.SetMethod("POST")
	sub.Request.SetRequestURI("/v1/completions")
	sub.Request.Header.SetContentType("application/json")
	sub.Request.SetBody(b)
	s.forward(sub, up, "/v1/completions", reqID, start)
	s.endRead(ctx)
	if code := sub.Response.StatusCode(); code != fasthttp.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := string(sub.Response.Body())
		if json.Unmarshal(sub.Response.Body(), &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		writeLegacyError(ctx, &legacyError{code, msg})
		return
	}
	events := sub.Response.BodyStream()
	prefix := ""
	if r.returnPrompt {
		prefix = r.text
	}
	ctx.SetContentType("text/event-stream")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer sub.Response.CloseBodyStream()
		if prefix != "" {
			if _, err := w.WriteString(prefix); err != nil || w.Flush() != nil {
				return
			}
		}
		if events == nil {
			return
		}
		br := bufio.NewReader(events)
		for range 1 << 24 { // bounded: each round reads a line or ends
			line, err := br.ReadBytes('\n')
			data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: "))
			if ok && string(data) == "[DONE]" {
				_, _ = w.WriteString(legacyEnd)
				_ = w.Flush()
				return
			}
			if ok {
				var ev struct {
					Choices []struct {
						Text string `json:"text"`
					} `json:"choices"`
				}
				if json.Unmarshal(data, &ev) == nil && len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
					if _, werr := w.WriteString(ev.Choices[0].Text); werr != nil || w.Flush() != nil {
						return // the client went away; closing the body stream stops the upstream
					}
				}
			}
			if errors.Is(err, io.EOF) || err != nil {
				return
			}
		}
	})
}
