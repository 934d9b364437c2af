package serve

import (
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// On an upstream runtime (vllm), a route the front door does not implement
// is passed to the upstream rather than refused, so that everything vLLM
// serves (/v1/embeddings, /v1/responses, /v1/audio/transcriptions,
// /v1/score, /v1/rerank, /pooling, /classify, ...) reaches it. Auth,
// draining and admission stay in front: a POST takes an engine slot like a
// completion (the upstream's work is the chips' work), and is counted in
// the queue and latency metrics. Engine runtimes keep answering 404.

// passthroughPrefixes are the path families passed through: the versioned
// OpenAI-style APIs and vLLM's unversioned pooling routes.
var passthroughPrefixes = []string{"/v1/", "/v2/"}

var passthroughExact = []string{"/pooling", "/classify", "/score", "/rerank", "/invocations"}

// adminRoutes change the upstream's state for every client (LoRA adapters,
// caches, sleep, profiling): a unit's API clients must not reach them.
var adminRoutes = []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter"}

// passthroughRoute reports whether path is one the upstream may serve.
func passthroughRoute(path string) bool {
	for _, a := range adminRoutes {
		if path == a {
			return false
		}
	}
	for _, p := range passthroughExact {
		if path == p {
			return true
		}
	}
	for _, p := range passthroughPrefixes {
		if strings.HasPrefix(path, p) && len(path) > len(p) {
			return true
		}
	}
	return false
}

// passthrough forwards a request for an unimplemented route to the
// upstream, after auth. It reports false, having written nothing, when
// the server has no upstream or the route is not one to pass.
func (s *Server) passthrough(ctx *fasthttp.RequestCtx, path, reqID string, start time.Time) bool {
	up := s.upstream.Load()
	if up == nil || !passthroughRoute(path) {
		return false
	}
	if _, err := s.cfg.Auth.Verify(ctx.Request.Header.Peek("Authorization")); err != nil {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="ttis"`)
		writeError(ctx, &apiError{Status: fasthttp.StatusUnauthorized, Type: "AuthenticationError", Message: err.Error()})
		return true
	}
	if s.draining.Load() {
		ctx.Response.Header.Set("Retry-After", "5")
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the server is shutting down"})
		return true
	}
	if e := s.admitRead(ctx, start); e != nil {
		writeError(ctx, e)
		return true
	}
	s.forward(ctx, up, path, reqID, start)
	return true
}

// admitted reports whether a forwarded request takes an engine slot: the
// generation routes, and any POST passed through.
func admitted(ctx *fasthttp.RequestCtx, path string) bool {
	switch path {
	case "/v1/completions", "/v1/chat/completions":
		return true
	}
	return passthroughRoute(path) && ctx.IsPost() && !implemented(path)
}

// implemented lists the routes the front door answers itself.
func implemented(path string) bool {
	switch path {
	case "/v1/models", "/tokenize", "/detokenize", "/tokenizer_info":
		return true
	}
	return strings.HasPrefix(path, "/v1/models/")
}

// adminRouteError explains why an administrative route is refused.
func adminRouteError(path string) *apiError {
	return &apiError{Status: fasthttp.StatusForbidden, Type: "PermissionDeniedError",
		Message: fmt.Sprintf("%s changes the upstream server for every client; ttis does not pass it through", path)}
}

// unknownRoute is the answer for a route neither served here nor passed.
func unknownRoute(s *Server, method, path string) *apiError {
	if s.upstream.Load() != nil {
		for _, a := range adminRoutes {
			if path == a {
				return adminRouteError(path)
			}
		}
	}
	return notFound("", fmt.Sprintf("no route for %s %s", method, path))
}
