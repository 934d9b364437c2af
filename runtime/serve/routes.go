package serve

import (
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// The route table. Every authenticated route is served the same way
// (serveRoute): a backend that does not serve the route refuses it at
// once (refuse, backend.go); then the method, auth, draining and the
// reading budget are checked (preamble); then the route is served from
// the backend in this process (local) or forwarded (forward.go), admitted
// as its fwd says. Routes nobody here knows are passed to a Forwarder or
// refused (passthrough.go).
//
// Adding a route: an entry in textRoutes (or mediaRoutes) naming its
// method, what it needs of the backend, how a forwarded request is
// admitted and its local handler. A generation route that reuses the
// chat path (an OpenAI /v1/responses, say) is
//
//	"/v1/responses": {method: "POST", needs: needText, fwd: fwdText,
//		local: func(s *Server, c *apiCall) { s.generate(c, decodeResponses, responsesFormat{}) }},
//
// with a decoder that fills a genRequest (its messages become a chat
// prompt, so templates, tools, structured outputs, admission, stop
// strings and n>1 come for free) and an output format (format.go).

// need is what a route needs of a backend that serves it in this
// process.
type need int

const (
	// needBackend: any backend (the model list).
	needBackend need = iota
	// needText: a text engine.
	needText
	// needTask: a media model of the route's task, or for the embeddings
	// route any Embedder.
	needTask
)

// route is one endpoint.
type route struct {
	// method is the one the route takes ("" takes any).
	method string
	needs  need
	task   runtime.MediaTask
	// local serves the route from a backend in this process (refuse has
	// let the request through).
	local func(s *Server, c *apiCall)
	// fwd is how the request is admitted when the backend forwards it.
	fwd forwardKind
}

// apiCall is one request being served by a route.
type apiCall struct {
	ctx     *fasthttp.RequestCtx
	be      *backendState
	path    string
	id      string // request id (logs, X-Request-Id)
	arrival time.Time
}

// textRoutes are the OpenAI and vLLM routes of text models.
var textRoutes = map[string]route{
	"/v1/completions": {method: "POST", needs: needText, fwd: fwdText,
		local: func(s *Server, c *apiCall) { s.generate(c, decodeCompletion, completionFormat{}) }},
	"/v1/chat/completions": {method: "POST", needs: needText, fwd: fwdText,
		local: func(s *Server, c *apiCall) { s.generate(c, decodeChat, chatFormat{}) }},
	"/v1/models":      {method: "GET", needs: needBackend, local: (*Server).models},
	"/tokenize":       {method: "POST", needs: needText, local: func(s *Server, c *apiCall) { s.tokenize(c.ctx, c.be.text) }},
	"/detokenize":     {method: "POST", needs: needText, local: func(s *Server, c *apiCall) { s.detokenize(c.ctx, c.be.text) }},
	"/tokenizer_info": {method: "GET", needs: needText, local: func(s *Server, c *apiCall) { s.tokenizerInfo(c.ctx, c.be.text) }},
}

// modelRoute is GET /v1/models/{id} (the OpenAI SDK's models.retrieve).
var modelRoute = route{method: "GET", needs: needBackend, local: (*Server).model}

// lookupRoute finds path's route.
func lookupRoute(path string) (route, bool) {
	if r, ok := textRoutes[path]; ok {
		return r, true
	}
	if strings.HasPrefix(path, "/v1/models/") {
		return modelRoute, true
	}
	if t, ok := mediaRoutes[path]; ok {
		return mediaRoute(t, "POST", fwdMedia), true
	}
	if m := videoMethod(path); m != "" {
		// A job's state, video or cancellation takes no slot.
		kind := fwdFree
		if path == "/v1/videos/generations" {
			kind = fwdMedia
		}
		return mediaRoute(runtime.TaskVideo, m, kind), true
	}
	return route{}, false
}

func mediaRoute(t runtime.MediaTask, method string, kind forwardKind) route {
	return route{method: method, needs: needTask, task: t, fwd: kind,
		local: func(s *Server, c *apiCall) { c.be.mediaHandler(s, c).serve(t) }}
}

// serveRoute serves a request for a known route.
func (s *Server) serveRoute(r route, c *apiCall) {
	ctx := c.ctx
	if be := s.be.Load(); be != nil {
		if e := s.refuse(be, r, c.path); e != nil {
			writeError(ctx, e)
			return
		}
	}
	if !s.preamble(ctx, c.path, r.method, c.arrival) {
		return
	}
	be := s.be.Load()
	if be == nil {
		s.unavailable(ctx)
		return
	}
	// The backend may have been installed while the request waited.
	if e := s.refuse(be, r, c.path); e != nil {
		writeError(ctx, e)
		return
	}
	c.be = be
	if be.fwd != nil {
		s.forward(c, r.fwd)
		return
	}
	r.local(s, c)
}

// unrouted serves a request for a route the front door does not know: a
// Forwarder's client may reach any route it serves but the administrative
// ones (passthrough.go); otherwise the answer is 404.
func (s *Server) unrouted(c *apiCall) {
	ctx, path := c.ctx, c.path
	if be := s.be.Load(); be != nil && be.fwd != nil {
		if isAdminRoute(path) {
			writeError(ctx, &apiError{Status: fasthttp.StatusForbidden, Type: "PermissionDeniedError",
				Message: fmt.Sprintf("%s changes the upstream server for every client; ttis does not pass it through", path)})
			return
		}
		if passthroughRoute(path) {
			if !s.preamble(ctx, path, "", c.arrival) {
				return
			}
			// A POST takes a slot like a completion: the upstream's work
			// is the chips' work.
			kind := fwdFree
			if ctx.IsPost() {
				kind = fwdText
			}
			c.be = be
			s.forward(c, kind)
			return
		}
	}
	writeError(ctx, notFound("", fmt.Sprintf("no route for %s %s", ctx.Method(), path)))
}

// preamble checks a request's method (want; "" takes any), its
// credentials and that the server is not draining, and admits its body to
// the reading budget (admit.go). It reports false when it has answered.
func (s *Server) preamble(ctx *fasthttp.RequestCtx, path, want string, arrival time.Time) bool {
	if method := string(ctx.Method()); want != "" && method != want {
		ctx.Response.Header.Set("Allow", want)
		writeError(ctx, &apiError{Status: fasthttp.StatusMethodNotAllowed, Type: "MethodNotAllowed", Message: fmt.Sprintf("%s needs %s, got %s", path, want, method)})
		return false
	}
	if _, err := s.cfg.Auth.Verify(ctx.Request.Header.Peek("Authorization")); err != nil {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="ttis"`)
		writeError(ctx, &apiError{Status: fasthttp.StatusUnauthorized, Type: "AuthenticationError", Message: err.Error()})
		return false
	}
	if s.draining.Load() {
		ctx.Response.Header.Set("Retry-After", "5")
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the server is shutting down"})
		return false
	}
	if e := s.admitRead(ctx, arrival); e != nil {
		writeError(ctx, e)
		return false
	}
	return true
}
