package serve

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// Media routes: tt-media-server's API beside OpenAI's, served from a
// media backend (a runtime.MediaModel: media units) or, for
// /v1/embeddings, from a text engine that implements runtime.Embedder
// (the cpu runtime), or forwarded (routes.go). The routes
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

// admitMedia admits one media request (admitOne): it answers 429 or the
// wait's error itself and reports false then. On true the caller must
// call the returned release with the request's outcome.
func (s *Server) admitMedia(ctx *fasthttp.RequestCtx, arrival time.Time) (context.Context, func(err error), bool) {
	rctx, done, ok := s.admitOne(ctx, arrival)
	if !ok {
		return nil, nil, false
	}
	record := s.recordMedia(time.Now(), arrival)
	return rctx, func(err error) {
		done()
		record(err)
	}, true
}

// recordMedia returns what records a media request that took its slot
// at slot: its inference and end-to-end times and its outcome.
func (s *Server) recordMedia(slot, arrival time.Time) func(err error) {
	return func(err error) {
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
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return waitError(err, timeout)
	case errors.Is(err, runtime.ErrInputTooLong):
		return badRequest("input", "%v", err)
	}
	return &apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: "runtime: " + err.Error()}
}
