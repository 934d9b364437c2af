package serve

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
)

// The media routes' handlers, one file per task: media_image.go,
// media_audio.go (transcription and speech), media_cnn.go,
// media_embed.go and media_video.go.

// mediaHandler serves one media request.
type mediaHandler struct {
	s       *Server
	ctx     *fasthttp.RequestCtx
	reqID   string
	arrival time.Time
	path    string
	names   map[string]bool
	// impl is the engine; it implements the capability of mi.Task.
	impl any
	mi   runtime.MediaInfo
	// tok and window are a text engine's tokenizer and context window
	// (embeddings from the cpu runtime), for judging inputs by their
	// length before admission; nil for media engines.
	tok    runtime.Tokenizer
	window int
}

func (h *mediaHandler) fail(e *apiError) { writeError(h.ctx, e) }

func (h *mediaHandler) checkModel(model string) bool {
	if model == "" || h.names[model] {
		return true
	}
	h.fail(notFound("model", fmt.Sprintf("The model `%s` does not exist; this unit serves `%s`.", model, h.s.cfg.Model)))
	return false
}

// decode parses a JSON body strictly, answering the error itself.
func (h *mediaHandler) decode(v any) bool {
	if e := decodeJSON(h.ctx.PostBody(), v); e != nil {
		h.fail(e)
		return false
	}
	return true
}

// serve runs the handler of the request's task.
func (h *mediaHandler) serve(task runtime.MediaTask) {
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
}
