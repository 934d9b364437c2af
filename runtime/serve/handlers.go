package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// handle routes a request. It never lets a panic escape: a panic becomes a
// 500 and an error log line.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	reqID := string(ctx.Request.Header.Peek("X-Request-Id"))
	if !validRequestID(reqID) {
		reqID = newID()
	}
	ctx.Response.Header.Set("X-Request-Id", reqID)
	defer s.endRead(ctx)
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic while handling request", "request_id", reqID, "path", string(ctx.Path()), "panic", p)
			writeError(ctx, &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: "internal error"})
			ctx.Response.Header.Set("X-Request-Id", reqID)
		}
		if !ctx.Hijacked() && s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.logRequest(ctx, reqID, ctx.Response.StatusCode(), start)
		}
	}()
	path := string(ctx.Path())
	method := string(ctx.Method())
	switch path {
	case "/health":
		s.health(ctx)
		return
	case "/version":
		s.version(ctx)
		return
	case "/metrics":
		s.metrics(ctx)
		return
	}
	if s.cfg.LegacyRoute != "" && path == s.cfg.LegacyRoute {
		s.legacy(ctx, reqID, start)
		return
	}
	if s.routeMedia(ctx, path, method, reqID, start) {
		return
	}
	type route struct {
		method string
		fn     func(*fasthttp.RequestCtx, *engineState, string)
	}
	var r route
	switch path {
	case "/v1/completions":
		r = route{"POST", func(c *fasthttp.RequestCtx, st *engineState, id string) { s.generate(c, st, id, false, start) }}
	case "/v1/chat/completions":
		r = route{"POST", func(c *fasthttp.RequestCtx, st *engineState, id string) { s.generate(c, st, id, true, start) }}
	case "/v1/models":
		r = route{"GET", s.models}
	case "/tokenize":
		r = route{"POST", s.tokenize}
	case "/detokenize":
		r = route{"POST", s.detokenize}
	case "/tokenizer_info":
		r = route{"GET", s.tokenizerInfo}
	default:
		if id, ok := strings.CutPrefix(path, "/v1/models/"); ok {
			r = route{"GET", func(c *fasthttp.RequestCtx, st *engineState, _ string) { s.model(c, st, id) }}
			break
		}
		if s.passthrough(ctx, path, reqID, start) {
			return
		}
		writeError(ctx, unknownRoute(s, method, path))
		return
	}
	if method != r.method {
		ctx.Response.Header.Set("Allow", r.method)
		writeError(ctx, &apiError{Status: fasthttp.StatusMethodNotAllowed, Type: "MethodNotAllowed", Message: fmt.Sprintf("%s needs %s, got %s", path, r.method, method)})
		return
	}
	if _, err := s.cfg.Auth.Verify(ctx.Request.Header.Peek("Authorization")); err != nil {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="ttis"`)
		writeError(ctx, &apiError{Status: fasthttp.StatusUnauthorized, Type: "AuthenticationError", Message: err.Error()})
		return
	}
	if s.draining.Load() {
		ctx.Response.Header.Set("Retry-After", "5")
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the server is shutting down"})
		return
	}
	if e := s.admitRead(ctx, start); e != nil {
		writeError(ctx, e)
		return
	}
	if up := s.upstream.Load(); up != nil {
		s.forward(ctx, up, path, reqID, start)
		return
	}
	st := s.state.Load()
	if st == nil {
		s.unavailable(ctx)
		return
	}
	r.fn(ctx, st, reqID)
}

func (s *Server) logRequest(ctx *fasthttp.RequestCtx, reqID string, status int, start time.Time) {
	s.log.Debug("request", "request_id", reqID, "method", string(ctx.Method()), "path", string(ctx.Path()),
		"status", status, "duration", time.Since(start), "remote", ctx.RemoteAddr().String())
}

func (s *Server) unavailable(ctx *fasthttp.RequestCtx) {
	msg := "the model is loading"
	if e := s.loadErr.Load(); e != nil {
		msg = "the runtime failed to load: " + *e
	}
	ctx.Response.Header.Set("Retry-After", "5")
	writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: msg})
}

func (s *Server) health(ctx *fasthttp.RequestCtx) {
	if h := s.live.Load().UnitHash; h != "" {
		ctx.Response.Header.Set(runtime.HeaderUnitHash, h)
		ctx.Response.Header.Set(runtime.HeaderPID, strconv.Itoa(os.Getpid()))
	}
	if up := s.upstream.Load(); up != nil {
		if wr, ok := up.u.(WorkerReporter); ok {
			if w := wr.Workers(); w != "" {
				ctx.Response.Header.Set(runtime.HeaderWorkers, w)
			}
		}
	}
	if up := s.upstream.Load(); up != nil && !up.alive() {
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: fmt.Sprintf("the upstream server exited: %v", up.u.Err())})
		return
	}
	if !s.Ready() {
		s.unavailable(ctx)
		return
	}
	if s.draining.Load() {
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the server is shutting down"})
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
}

func writeJSON(ctx *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(ctx, &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: "encode response: " + err.Error()})
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func (s *Server) version(ctx *fasthttp.RequestCtx) {
	v := map[string]any{"version": s.cfg.Version, "server": "ttis"}
	if c := s.cfg.Conditions.Map(); c != nil {
		v["conditions"] = c
	}
	if up := s.upstream.Load(); up != nil {
		v["upstream_model"] = up.u.Model()
	}
	if st := s.state.Load(); st != nil {
		v["runtime"] = st.info.Runtime
		v["engine"] = st.info.Version
		v["simulated"] = st.info.Simulated
	}
	if ms := s.media.Load(); ms != nil {
		v["runtime"], v["engine"], v["simulated"], v["task"] = ms.info.Runtime, ms.info.Version, ms.info.Simulated, ms.mi.Task
	}
	writeJSON(ctx, v)
}

func (s *Server) metrics(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	ctx.SetBody(s.m.appendText(make([]byte, 0, 16<<10)))
}

func (s *Server) card(st *engineState) openai.ModelCard {
	owner := "ttis"
	if st.info.Simulated {
		owner = "ttis-sim"
	}
	return openai.ModelCard{ID: s.cfg.Model, Object: "model", Created: s.started.Unix(), OwnedBy: owner, Root: st.info.Model,
		MaxModelLen: st.maxContext, Permission: []string{}, Runtime: st.info.Runtime, Simulated: st.info.Simulated}
}

func (s *Server) models(ctx *fasthttp.RequestCtx, st *engineState, _ string) {
	writeJSON(ctx, openai.ModelList{Object: "list", Data: []openai.ModelCard{s.card(st)}})
}

// model answers GET /v1/models/{id} (the OpenAI SDK's models.retrieve).
func (s *Server) model(ctx *fasthttp.RequestCtx, st *engineState, id string) {
	if id == "" || !st.names[id] {
		writeError(ctx, notFound("model", fmt.Sprintf("The model `%s` does not exist; this unit serves `%s`.", id, s.cfg.Model)))
		return
	}
	writeJSON(ctx, s.card(st))
}

func (s *Server) checkModel(st *engineState, model string) *apiError {
	if model == "" || st.names[model] {
		return nil
	}
	return notFound("model", fmt.Sprintf("The model `%s` does not exist; this unit serves `%s`.", model, s.cfg.Model))
}

func (s *Server) tokenize(ctx *fasthttp.RequestCtx, st *engineState, _ string) {
	var b struct {
		Model               string            `json:"model"`
		Prompt              *string           `json:"prompt"`
		Messages            []chatMessageBody `json:"messages"`
		AddSpecialTokens    *bool             `json:"add_special_tokens"`
		AddGenerationPrompt *bool             `json:"add_generation_prompt"`
		ReturnTokenStrs     bool              `json:"return_token_strs"`
	}
	if e := decodeJSON(ctx.PostBody(), &b); e != nil {
		writeError(ctx, e)
		return
	}
	if e := s.checkModel(st, b.Model); e != nil {
		writeError(ctx, e)
		return
	}
	var text string
	addSpecial := true
	switch {
	case b.Prompt != nil && b.Messages != nil:
		writeError(ctx, badRequest("messages", "give either prompt or messages, not both"))
		return
	case b.Prompt != nil:
		text = *b.Prompt
	case b.Messages != nil:
		msgs := make([]runtime.ChatMessage, 0, len(b.Messages))
		for i, m := range b.Messages {
			t, e := messageText(m.Content, fmt.Sprintf("messages[%d].content", i))
			if e != nil {
				writeError(ctx, e)
				return
			}
			msgs = append(msgs, runtime.ChatMessage{Role: m.Role, Content: t})
		}
		gen := b.AddGenerationPrompt == nil || *b.AddGenerationPrompt
		var err error
		if text, err = st.tok.ChatPrompt(msgs, gen); err != nil {
			writeError(ctx, badRequest("messages", "%v", err))
			return
		}
		addSpecial = false
	default:
		writeError(ctx, badRequest("prompt", "prompt or messages is required"))
		return
	}
	if b.AddSpecialTokens != nil {
		addSpecial = *b.AddSpecialTokens
	}
	ids, err := st.tok.Encode(text, addSpecial)
	if err != nil {
		writeError(ctx, badRequest("prompt", "tokenize: %v", err))
		return
	}
	resp := map[string]any{"count": len(ids), "max_model_len": st.maxContext, "tokens": ids}
	if b.ReturnTokenStrs {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = tokenString(st.tok, id)
		}
		resp["token_strs"] = strs
	}
	writeJSON(ctx, resp)
}

func (s *Server) detokenize(ctx *fasthttp.RequestCtx, st *engineState, _ string) {
	var b struct {
		Model  string `json:"model"`
		Tokens *[]int `json:"tokens"`
	}
	if e := decodeJSON(ctx.PostBody(), &b); e != nil {
		writeError(ctx, e)
		return
	}
	if e := s.checkModel(st, b.Model); e != nil {
		writeError(ctx, e)
		return
	}
	if b.Tokens == nil {
		writeError(ctx, badRequest("tokens", "tokens is required"))
		return
	}
	if e := checkIDs(*b.Tokens, st.tok.VocabSize(), "tokens"); e != nil {
		writeError(ctx, e)
		return
	}
	writeJSON(ctx, map[string]any{"prompt": st.tok.Decode(*b.Tokens, true)})
}

func (s *Server) tokenizerInfo(ctx *fasthttp.RequestCtx, st *engineState, _ string) {
	eos := ""
	if ids := st.tok.EOS(); len(ids) > 0 {
		eos = st.tok.Decode(ids[:1], false)
	}
	writeJSON(ctx, map[string]any{"eos_token": eos, "model_max_length": st.maxContext, "vocab_size": st.tok.VocabSize(), "tokenizer_class": st.info.Runtime})
}

func checkIDs(ids []int, vocab int, param string) *apiError {
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return badRequest(param, "%s[%d]: token id %d is outside the vocabulary (0..%d)", param, i, id, vocab-1)
		}
	}
	return nil
}

// tokenString is the text a logprobs entry shows for a token: its bytes,
// or its name for a special token.
func tokenString(tok runtime.Tokenizer, id int) string {
	if tok.IsSpecial(id) {
		return tok.Decode([]int{id}, false)
	}
	return string(tok.TokenBytes(id))
}

func retryAfter(ctx *fasthttp.RequestCtx, d time.Duration) {
	ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(1, int(d.Seconds()))))
}

// validRequestID accepts a client's X-Request-Id when it is short printable
// ASCII (it is echoed into response headers and logs).
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
