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
	case "/tt-liveness":
		s.ttLiveness(ctx)
		return
	}
	if s.cfg.LegacyRoute != "" && path == s.cfg.LegacyRoute {
		s.legacy(ctx, reqID, start)
		return
	}
	c := &apiCall{ctx: ctx, path: path, id: reqID, arrival: start}
	if r, ok := lookupRoute(path); ok {
		s.serveRoute(r, c)
		return
	}
	s.unrouted(c)
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
	be := s.be.Load()
	if be == nil {
		s.unavailable(ctx)
		return
	}
	if !be.health(ctx) {
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
	if be := s.be.Load(); be != nil {
		be.describe(v)
	}
	writeJSON(ctx, v)
}

func (s *Server) metrics(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	ctx.SetBody(s.m.appendText(make([]byte, 0, 16<<10)))
}

// models answers GET /v1/models.
func (s *Server) models(c *apiCall) {
	writeJSON(c.ctx, struct {
		Object string `json:"object"`
		Data   []any  `json:"data"`
	}{"list", []any{s.card(c.be)}})
}

// model answers GET /v1/models/{id} (the OpenAI SDK's models.retrieve).
func (s *Server) model(c *apiCall) {
	id := strings.TrimPrefix(c.path, "/v1/models/")
	if id == "" || !c.be.names[id] {
		writeError(c.ctx, notFound("model", fmt.Sprintf("The model `%s` does not exist; this unit serves `%s`.", id, s.cfg.Model)))
		return
	}
	writeJSON(c.ctx, s.card(c.be))
}

func (s *Server) checkModel(st *engineState, model string) *apiError {
	if model == "" || st.names[model] {
		return nil
	}
	return notFound("model", fmt.Sprintf("The model `%s` does not exist; this unit serves `%s`.", model, s.cfg.Model))
}

func (s *Server) tokenize(ctx *fasthttp.RequestCtx, st *engineState) {
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

func (s *Server) detokenize(ctx *fasthttp.RequestCtx, st *engineState) {
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

func (s *Server) tokenizerInfo(ctx *fasthttp.RequestCtx, st *engineState) {
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
