package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// Media routes: tt-media-server's API beside OpenAI's, served from a
// runtime.MediaEngine (media units) or, for /v1/embeddings, from a text
// engine that implements runtime.Embedder (the cpu runtime). The routes
// share the text routes' auth, admission (one slot per request, the same
// bounded wait queue, 429 with Retry-After), request timeout, metrics and
// request log. Request bodies are bounded by limits.max_body_bytes (which
// fasthttp enforces while reading), multipart parts and audio by the
// unit's media limits, and every count in a request is checked before
// anything is allocated for it.
//
// Endpoints (legacy unprefixed paths as tt-media-server still routes them):
//
//	POST /v1/images/generations, /image/generations   image models
//	POST /v1/images/image-to-image, /v1/images/edits  SDXL image-to-image and inpainting runners
//	POST /v1/audio/transcriptions, /audio/transcriptions  speech to text (JSON base64 or multipart)
//	POST /v1/audio/speech, /audio/speech              text to speech (WAV)
//	POST /v1/cnn/search-image, /cnn/search-image      CNN classification
//	POST /v1/embeddings, /embeddings                  embeddings
//	POST /v1/videos/generations, GET .../{id}[/download], POST .../{id}/cancel,
//	GET  /v1/videos/jobs                              video jobs (media_video.go)
//	GET  /tt-liveness                                 tt-media-server's liveness
//
// GET /health answers 200 once the engine is ready, as for text units.

// mediaState is a ready media engine.
type mediaState struct {
	eng   runtime.MediaEngine
	info  runtime.Info
	mi    runtime.MediaInfo
	names map[string]bool
}

// MediaLimits bound what a media request may upload.
type MediaLimits struct {
	// MaxAudioSeconds and MaxAudioBytes bound a transcription's clip
	// (tt-media-server's MAX_AUDIO_DURATION_SECONDS, MAX_AUDIO_SIZE_BYTES).
	MaxAudioSeconds float64
	MaxAudioBytes   int64
}

// Media request limits that are not the unit's to set.
const (
	// maxEmbeddingInputs is OpenAI's limit on inputs per embeddings call.
	maxEmbeddingInputs = 2048
	// maxEmbeddingInputBytes bounds one input text.
	maxEmbeddingInputBytes = 256 << 10
	// maxSpeechChars is tt-media-server's DEFAULT_MAX_TTS_TEXT_LENGTH.
	maxSpeechChars = 20000
	// maxPromptBytes bounds an image prompt.
	maxPromptBytes = 64 << 10
	// maxMultipartParts bounds the parts of a multipart body; maxFieldBytes
	// a text field in it.
	maxMultipartParts = 32
	maxFieldBytes     = 64 << 10
	// maxImageUploadBytes bounds a CNN upload.
	maxImageUploadBytes = 32 << 20
)

// SetMedia makes the server ready with a media engine.
func (s *Server) SetMedia(e runtime.MediaEngine) {
	info := e.Info()
	st := &mediaState{eng: e, info: info, mi: e.Media(), names: map[string]bool{s.cfg.Model: true, info.Model: true}}
	for _, a := range s.cfg.Aliases {
		st.names[a] = true
	}
	s.media.Store(st)
}

// RunMedia is Run for a media engine.
func RunMedia(ctx context.Context, cfg Config, open func(context.Context) (runtime.MediaEngine, error)) error {
	return runBackend(ctx, cfg, func(c context.Context) (backend, error) {
		e, err := open(c)
		if err != nil {
			return nil, err
		}
		return mediaBackend{e}, nil
	})
}

type mediaBackend struct{ runtime.MediaEngine }

func (b mediaBackend) install(s *Server) {
	s.SetMedia(b.MediaEngine)
	i, m := b.Info(), b.Media()
	s.log.Info("ready", "model", i.Model, "runtime", i.Runtime, "simulated", i.Simulated, "task", m.Task, "runner", m.Runner, "workers", len(m.Workers))
}
func (mediaBackend) dead() <-chan struct{} { return nil }
func (mediaBackend) deathErr() error       { return nil }

// mediaRoutes maps a path to its task and the handler that serves it.
var mediaRoutes = map[string]runtime.MediaTask{
	"/v1/images/generations":    runtime.TaskImage,
	"/image/generations":        runtime.TaskImage,
	"/v1/images/image-to-image": runtime.TaskImage,
	"/image/image-to-image":     runtime.TaskImage,
	"/v1/images/edits":          runtime.TaskImage,
	"/image/edits":              runtime.TaskImage,
	"/v1/audio/transcriptions":  runtime.TaskAudio,
	"/audio/transcriptions":     runtime.TaskAudio,
	"/v1/audio/speech":          runtime.TaskSpeech,
	"/audio/speech":             runtime.TaskSpeech,
	"/v1/cnn/search-image":      runtime.TaskCNN,
	"/cnn/search-image":         runtime.TaskCNN,
	"/v1/embeddings":            runtime.TaskEmbedding,
	"/embeddings":               runtime.TaskEmbedding,
}

// textRoutes are the routes a media unit does not serve.
var textRoutes = map[string]bool{"/v1/completions": true, "/v1/chat/completions": true, "/tokenize": true, "/detokenize": true, "/tokenizer_info": true}

// routeMedia serves the media routes, and the text routes of a media
// unit; it reports false for a request it leaves to the text routes.
func (s *Server) routeMedia(ctx *fasthttp.RequestCtx, path, method, reqID string, start time.Time) bool {
	if path == "/tt-liveness" {
		if up := s.upstream.Load(); up != nil && up.alive() {
			// The media server's own answer: its workers, restarts and
			// canary.
			up.u.Forward(ctx, nil, nil)
			return true
		}
		s.liveness(ctx)
		return true
	}
	ms := s.media.Load()
	task, isMedia := mediaRoutes[path]
	want := "POST"
	if m := videoMethod(path); m != "" {
		task, isMedia, want = runtime.TaskVideo, true, m
	}
	switch {
	case isMedia:
	case ms != nil && textRoutes[path]:
		writeError(ctx, notFound("", fmt.Sprintf("this unit serves %s, a %s model; %s is for text models (its routes: %s)", s.cfg.Model, ms.mi.Task, path, strings.Join(routesOf(ms.mi.Task), ", "))))
		return true
	case ms != nil && (path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")):
		if !s.mediaPreamble(ctx, path, method, "GET", start) {
			return true
		}
		card := s.mediaCard(ms)
		if id, ok := strings.CutPrefix(path, "/v1/models/"); ok {
			if !ms.names[id] {
				writeError(ctx, notFound("model", fmt.Sprintf("The model `%s` does not exist; this unit serves `%s`.", id, s.cfg.Model)))
				return true
			}
			writeJSON(ctx, card)
			return true
		}
		writeJSON(ctx, map[string]any{"object": "list", "data": []any{card}})
		return true
	default:
		return false
	}
	if !s.mediaPreamble(ctx, path, method, want, start) {
		return true
	}
	if up := s.upstream.Load(); up != nil {
		if task == runtime.TaskVideo && path != "/v1/videos/generations" {
			// A job's state, video or cancellation takes no slot.
			up.u.Forward(ctx, nil, nil)
			return true
		}
		s.forwardMedia(ctx, up, path, reqID, start)
		return true
	}
	h := mediaHandler{s: s, ctx: ctx, reqID: reqID, arrival: start, path: path}
	if ms != nil {
		if ms.mi.Task != task {
			writeError(ctx, notFound("", fmt.Sprintf("this unit serves %s, a %s model; it does not serve %s (its routes: %s)", s.cfg.Model, ms.mi.Task, path, strings.Join(routesOf(ms.mi.Task), ", "))))
			return true
		}
		h.names, h.impl, h.mi = ms.names, ms.eng, ms.mi
	} else if st := s.state.Load(); st != nil {
		emb, ok := st.eng.(runtime.Embedder)
		if task != runtime.TaskEmbedding || !ok {
			writeError(ctx, notFound("", fmt.Sprintf("this unit serves %s, a text model on runtime %s; it does not serve %s", s.cfg.Model, st.info.Runtime, path)))
			return true
		}
		h.names, h.impl, h.tok, h.window = st.names, st.eng, st.tok, st.info.MaxContext
		h.mi.Task = runtime.TaskEmbedding
		h.mi.Dimensions, h.mi.Matryoshka = emb.EmbeddingInfo()
	} else {
		s.unavailable(ctx)
		return true
	}
	switch task {
	case runtime.TaskImage:
		h.images()
	case runtime.TaskAudio:
		h.transcribe()
	case runtime.TaskSpeech:
		h.speech()
	case runtime.TaskCNN:
		h.classify()
	case runtime.TaskEmbedding:
		h.embeddings()
	case runtime.TaskVideo:
		h.videos()
	}
	return true
}

// routesOf lists the routes of a task, for error messages.
func routesOf(t runtime.MediaTask) []string {
	var out []string
	for p, rt := range mediaRoutes {
		if rt == t && strings.HasPrefix(p, "/v1/") {
			out = append(out, "POST "+p)
		}
	}
	if t == runtime.TaskVideo {
		out = append(out, "POST /v1/videos/generations", "GET /v1/videos/generations/{id}", "GET /v1/videos/generations/{id}/download")
	}
	return out
}

// mediaPreamble checks method, auth and draining and admits the body to
// the reading budget, as handle does for the text routes; it reports
// false when it has answered.
func (s *Server) mediaPreamble(ctx *fasthttp.RequestCtx, path, method, want string, arrival time.Time) bool {
	if method != want {
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

func (s *Server) mediaCard(ms *mediaState) map[string]any {
	owner := "ttis"
	if ms.info.Simulated {
		owner = "ttis-sim"
	}
	return map[string]any{"id": s.cfg.Model, "object": "model", "created": s.started.Unix(), "owned_by": owner, "root": ms.info.Model,
		"runtime": ms.info.Runtime, "simulated": ms.info.Simulated, "task": ms.mi.Task, "runner": ms.mi.Runner}
}

// liveness answers tt-media-server's GET /tt-liveness: 200 with the
// model's readiness, the queue and the workers.
func (s *Server) liveness(ctx *fasthttp.RequestCtx) {
	ms := s.media.Load()
	v := map[string]any{"status": "alive", "model_ready": s.Ready() && !s.draining.Load(),
		"queue_size": s.m.waiting.Load(), "max_queue_size": s.live.Load().MaxQueue}
	if ms != nil {
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

// admitMedia takes a slot for one media request, or queues for one; it
// answers 429 (queue full) or the wait's error itself and reports false
// then. On true the caller must call the returned release with the
// request's outcome. The request's decoded input is bounded by its slot
// from then on, so its part of the reading budget is given back.
func (s *Server) admitMedia(ctx *fasthttp.RequestCtx, arrival time.Time) (context.Context, func(err error), bool) {
	queued, lv, ok := s.takeSlots(1)
	if !ok {
		s.refuseBusy(ctx, lv)
		return nil, nil, false
	}
	rctx, cancel := s.requestContext(arrival, lv.RequestTimeout)
	if queued {
		if err := s.awaitSlots(rctx, 1); err != nil {
			cancel()
			writeError(ctx, s.mediaError(err, lv.RequestTimeout))
			return nil, nil, false
		}
	}
	s.endRead(ctx)
	hold := s.holdMediaSlot(arrival)
	release := func(err error) {
		cancel()
		hold(err)
	}
	return rctx, release, true
}

// holdMediaSlot records a media request that has just taken its slot and
// returns what gives the slot back and records the request's times and
// outcome.
func (s *Server) holdMediaSlot(arrival time.Time) func(err error) {
	s.m.queue.observe(time.Since(arrival).Seconds())
	slot := time.Now()
	return func(err error) {
		s.releaseSlots(1)
		s.m.inference.observe(time.Since(slot).Seconds())
		s.m.e2e.observe(time.Since(arrival).Seconds())
		if err != nil {
			s.m.finished("abort")
		} else {
			s.m.finished("stop")
		}
	}
}

// mediaError maps an engine's error to an API error.
func (s *Server) mediaError(err error, timeout time.Duration) *apiError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: fasthttp.StatusRequestTimeout, Type: "TimeoutError", Message: fmt.Sprintf("the request did not finish within limits.request_timeout (%s)", timeout)}
	case errors.Is(err, context.Canceled):
		return &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "the request was cancelled because the server is shutting down"}
	case errors.Is(err, runtime.ErrInputTooLong):
		return badRequest("input", "%v", err)
	}
	return &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: "runtime: " + err.Error()}
}

// forwardMedia sends a media request to an upstream tt-media-server,
// holding a slot while it runs.
func (s *Server) forwardMedia(ctx *fasthttp.RequestCtx, st *upstreamState, path, reqID string, start time.Time) {
	if !st.alive() {
		writeError(ctx, &apiError{Status: fasthttp.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: fmt.Sprintf("the upstream server exited: %v", st.u.Err())})
		return
	}
	_, release, ok := s.admitMedia(ctx, start)
	if !ok {
		return
	}
	st.u.Forward(ctx, nil, func(err error) {
		release(err)
		s.log.Debug("request", "request_id", reqID, "path", path, "upstream", true, "err", err, "duration", time.Since(start))
	})
}
