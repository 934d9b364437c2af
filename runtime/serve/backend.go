package serve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// The serving contract's one place in the server: a unit's backend (a
// runtime.Backend, see runtime/backend.go) is asked what it can do once,
// when it is installed, and every request is served from that answer by
// the route table (routes.go). No handler looks at which kind of backend
// it has; each is handed the capability it serves from.

// Forwarder is the passthrough capability: a backend whose requests the
// front door forwards to another OpenAI-compatible server (the vllm
// runtime's *vllm.Server, for vLLM and tt-media-server). The front door
// keeps auth, admission (one slot per generation or media request), the
// request log and the queue and latency metrics; the server it forwards
// to does the rest, including every route the front door does not know
// (passthrough.go). A Forwarder is usually a runtime.Exiter too.
type Forwarder interface {
	// Forward sends ctx's request on and writes the answer to ctx;
	// onChunk sees each body chunk, done is called once at the end. It is
	// done with ctx's request when it returns (the server then drops the
	// request body).
	Forward(ctx *fasthttp.RequestCtx, onChunk func(n int), done func(error))
}

// WorkerReporter is a backend that knows its device workers (a
// tt-media-server restarts them inside its process): Workers is one line
// such as "4 workers: 4 alive, 4 ready, 1 restarts, 2 errors", or "".
// GET /health reports it in runtime.HeaderWorkers, for the daemon's status.
type WorkerReporter interface {
	Workers() string
}

// backendState is an installed backend and what it can do. Exactly one
// of fwd, media and text is set: a Forwarder serves every route by
// forwarding it; a media model serves its task's routes; a text engine
// serves the text routes (and /v1/embeddings when it is an Embedder).
type backendState struct {
	b     runtime.Backend
	info  runtime.Info
	names map[string]bool
	fwd   Forwarder
	media *mediaState
	text  *engineState
	// emb is the backend's Embedder: a media embedding model's or a text
	// engine's.
	emb  runtime.Embedder
	exit runtime.Exiter
}

// engineState is a text backend, ready to generate.
type engineState struct {
	eng        runtime.TextGenerator
	info       runtime.Info
	tok        runtime.Tokenizer
	names      map[string]bool
	maxContext int
	eos        map[int]bool
	grammars   *grammarCache
}

// mediaState is a media backend.
type mediaState struct {
	eng   runtime.MediaModel
	info  runtime.Info
	mi    runtime.MediaInfo
	names map[string]bool
}

// errNoCapability is an installed backend that serves nothing.
var errNoCapability = errors.New("the backend serves no capability the front door knows (text generation, a media model or forwarding)")

// newBackendState asks b what it can do.
func (s *Server) newBackendState(b runtime.Backend) (*backendState, error) {
	info := b.Info()
	be := &backendState{b: b, info: info, names: map[string]bool{s.cfg.Model: true, info.Model: true}}
	for _, a := range s.cfg.Aliases {
		be.names[a] = true
	}
	be.exit, _ = b.(runtime.Exiter)
	if f, ok := b.(Forwarder); ok {
		be.fwd = f
		return be, nil
	}
	emb, isEmb := b.(runtime.Embedder)
	if m, ok := b.(runtime.MediaModel); ok {
		be.media = &mediaState{eng: m, info: info, mi: m.Media(), names: be.names}
		if isEmb && be.media.mi.Task == runtime.TaskEmbedding {
			be.emb = emb
		}
		return be, nil
	}
	g, ok := b.(runtime.TextGenerator)
	if !ok {
		return nil, errNoCapability
	}
	st := &engineState{eng: g, info: info, tok: g.Tokenizer(), names: be.names, eos: map[int]bool{}}
	st.grammars = newGrammarCache(st.tok)
	st.maxContext = info.MaxContext
	if s.cfg.MaxContext > 0 && (st.maxContext <= 0 || s.cfg.MaxContext < st.maxContext) {
		st.maxContext = s.cfg.MaxContext
	}
	for _, id := range st.tok.EOS() {
		st.eos[id] = true
	}
	be.text = st
	if isEmb {
		be.emb = emb
	}
	return be, nil
}

// SetBackend makes the server ready with b: /health answers 200 from now
// on. It fails, leaving the server as it was, when b serves nothing.
func (s *Server) SetBackend(b runtime.Backend) error {
	be, err := s.newBackendState(b)
	if err != nil {
		return err
	}
	s.be.Store(be)
	return nil
}

// logReady logs what the server now serves.
func (be *backendState) logReady(s *Server) {
	i := be.info
	switch {
	case be.fwd != nil:
		s.log.Info("ready", "model", i.Model, "runtime", "upstream")
	case be.media != nil:
		m := be.media.mi
		s.log.Info("ready", "model", i.Model, "runtime", i.Runtime, "simulated", i.Simulated, "task", m.Task, "runner", m.Runner, "workers", len(m.Workers))
	default:
		s.log.Info("ready", "model", i.Model, "runtime", i.Runtime, "simulated", i.Simulated)
	}
}

// alive reports whether the backend is still running (a backend that
// cannot end on its own always is).
func (be *backendState) alive() bool {
	if be.exit == nil {
		return true
	}
	select {
	case <-be.exit.Done():
		return false
	default:
		return true
	}
}

// ended is closed when the backend has ended on its own (nil: it never
// does).
func (be *backendState) ended() <-chan struct{} {
	if be.exit == nil {
		return nil
	}
	return be.exit.Done()
}

// exited is the answer while a backend that ended on its own is still
// installed (the server is about to stop, and the supervisor to restart
// it).
func (be *backendState) exited() *apiError {
	return &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: fmt.Sprintf("the upstream server exited: %v", be.exit.Err())}
}

// health adds the backend's part of GET /health: its workers, and 503
// once it has ended. It reports false when it has answered.
func (be *backendState) health(ctx *fasthttp.RequestCtx) bool {
	if wr, ok := be.b.(WorkerReporter); ok {
		if w := wr.Workers(); w != "" {
			ctx.Response.Header.Set(runtime.HeaderWorkers, w)
		}
	}
	if !be.alive() {
		writeError(ctx, be.exited())
		return false
	}
	return true
}

// describe adds the backend's part of GET /version.
func (be *backendState) describe(v map[string]any) {
	switch {
	case be.fwd != nil:
		v["upstream_model"] = be.info.Model
	case be.media != nil:
		v["runtime"], v["engine"], v["simulated"], v["task"] = be.info.Runtime, be.info.Version, be.info.Simulated, be.media.mi.Task
	default:
		v["runtime"], v["engine"], v["simulated"] = be.info.Runtime, be.info.Version, be.info.Simulated
	}
}

// card is the model card of GET /v1/models.
func (s *Server) card(be *backendState) any {
	owner := "ttis"
	if be.info.Simulated {
		owner = "ttis-sim"
	}
	if ms := be.media; ms != nil {
		return map[string]any{"id": s.cfg.Model, "object": "model", "created": s.started.Unix(), "owned_by": owner, "root": be.info.Model,
			"runtime": be.info.Runtime, "simulated": be.info.Simulated, "task": ms.mi.Task, "runner": ms.mi.Runner}
	}
	return openai.ModelCard{ID: s.cfg.Model, Object: "model", Created: s.started.Unix(), OwnedBy: owner, Root: be.info.Model,
		MaxModelLen: be.text.maxContext, Permission: []string{}, Runtime: be.info.Runtime, Simulated: be.info.Simulated}
}

// refuse says why the backend does not serve r (nil when it does): a
// Forwarder serves every route, a media model its task's routes and the
// model list, a text engine the text routes (and the embeddings route
// when it is an Embedder).
func (s *Server) refuse(be *backendState, r route, path string) *apiError {
	if be.fwd != nil || r.needs == needBackend {
		return nil
	}
	if ms := be.media; ms != nil {
		switch {
		case r.needs == needText:
			return notFound("", fmt.Sprintf("this unit serves %s, a %s model; %s is for text models (its routes: %s)", s.cfg.Model, ms.mi.Task, path, strings.Join(routesOf(ms.mi.Task), ", ")))
		case ms.mi.Task != r.task:
			return notFound("", fmt.Sprintf("this unit serves %s, a %s model; it does not serve %s (its routes: %s)", s.cfg.Model, ms.mi.Task, path, strings.Join(routesOf(ms.mi.Task), ", ")))
		}
		return nil
	}
	if r.needs == needTask && (r.task != runtime.TaskEmbedding || be.emb == nil) {
		return notFound("", fmt.Sprintf("this unit serves %s, a text model on runtime %s; it does not serve %s", s.cfg.Model, be.info.Runtime, path))
	}
	return nil
}

// mediaHandler is the handler of a media request the backend serves in
// this process (refuse has let it through).
func (be *backendState) mediaHandler(s *Server, c *apiCall) *mediaHandler {
	h := &mediaHandler{s: s, ctx: c.ctx, reqID: c.id, arrival: c.arrival, path: c.path, names: be.names}
	if ms := be.media; ms != nil {
		h.impl, h.mi = ms.eng, ms.mi
		return h
	}
	// Embeddings from a text engine: inputs are judged by their length
	// against its context window before admission.
	h.impl, h.tok, h.window = be.emb, be.text.tok, be.info.MaxContext
	h.mi.Task = runtime.TaskEmbedding
	h.mi.Dimensions, h.mi.Matryoshka = be.emb.EmbeddingInfo()
	return h
}

// serveText serves a text request from the backend: with its text engine
// (local) or through its Forwarder. It reports false, having done
// nothing, when the backend serves no text.
func (be *backendState) serveText(local func(*engineState), forward func()) bool {
	switch {
	case be.fwd != nil:
		forward()
	case be.text != nil:
		local(be.text)
	default:
		return false
	}
	return true
}

// ttLiveness answers tt-media-server's GET /tt-liveness: a live
// Forwarder's own answer (its workers, restarts and canary), else the
// server's (liveness).
func (s *Server) ttLiveness(ctx *fasthttp.RequestCtx) {
	if be := s.be.Load(); be != nil && be.fwd != nil && be.alive() {
		be.fwd.Forward(ctx, nil, nil)
		return
	}
	s.liveness(ctx)
}

// liveness answers tt-media-server's GET /tt-liveness: 200 with the
// model's readiness, the queue and the workers.
func (s *Server) liveness(ctx *fasthttp.RequestCtx) {
	be := s.be.Load()
	v := map[string]any{"status": "alive", "model_ready": be != nil && !s.draining.Load(),
		"queue_size": s.m.waiting.Load(), "max_queue_size": s.live.Load().MaxQueue}
	if be != nil && be.media != nil {
		ms := be.media
		v["device_mesh_shape"] = []int{ms.mi.Mesh[0], ms.mi.Mesh[1]}
		v["device"] = ms.mi.Device
		v["runner_in_use"] = ms.mi.Runner
		v["simulated"] = ms.info.Simulated
		workers := map[string]any{}
		for i, g := range ms.mi.Workers {
			workers[fmt.Sprint(i)] = map[string]any{"device_ids": g, "is_alive": true, "is_ready": true, "restart_count": 0, "error_count": 0}
		}
		v["worker_info"] = workers
	}
	writeJSON(ctx, v)
}
