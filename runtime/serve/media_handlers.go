package serve

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/media"
)

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

// --- images -------------------------------------------------------------

type imageBody struct {
	Model             string   `json:"model"`
	Prompt            *string  `json:"prompt"`
	NegativePrompt    string   `json:"negative_prompt"`
	NumInferenceSteps *int     `json:"num_inference_steps"`
	Seed              *int64   `json:"seed"`
	GuidanceScale     *float64 `json:"guidance_scale"`
	NumberOfImages    *int     `json:"number_of_images"`
	ImageReturnFormat string   `json:"image_return_format"`
	ImageQuality      *int     `json:"image_quality"`
	// OpenAI's names.
	N              *int   `json:"n"`
	Size           string `json:"size"`
	ResponseFormat string `json:"response_format"`
	OutputFormat   string `json:"output_format"`
	User           string `json:"user"`
	// Image-to-image and edits: base64 images, and how far to depart.
	Image    *string  `json:"image"`
	Mask     *string  `json:"mask"`
	Strength *float64 `json:"strength"`
}

// imageRoute is the input a path's images take: /generations none,
// /image-to-image an image, /edits an image and a mask.
func imageRoute(path string) runtime.ImageInput {
	switch {
	case strings.HasSuffix(path, "/image-to-image"):
		return runtime.ImageFromImage
	case strings.HasSuffix(path, "/edits"):
		return runtime.ImageEdit
	}
	return runtime.ImageFromText
}

// imageFormFields are the form fields of a multipart image request
// (OpenAI's images.edit sends one), with the numbers among them.
var imageFormFields = map[string]bool{"prompt": true, "negative_prompt": true, "num_inference_steps": true, "seed": true,
	"guidance_scale": true, "number_of_images": true, "n": true, "size": true, "response_format": true, "model": true,
	"image_return_format": true, "output_format": true, "image_quality": true, "strength": true, "user": true,
	"image": true, "image[]": true, "mask": true}

var imageFormNumbers = map[string]bool{"num_inference_steps": true, "seed": true, "guidance_scale": true, "number_of_images": true,
	"n": true, "image_quality": true, "strength": true}

// imageForm turns a multipart image request into the JSON body's shape:
// files become base64 strings, numbers numbers.
func imageForm(body, contentType []byte) ([]byte, *apiError) {
	f, e := parseForm(body, contentType, imageFormFields, map[string]int64{"image": maxImageUploadBytes, "image[]": maxImageUploadBytes, "mask": maxImageUploadBytes})
	if e != nil {
		return nil, e
	}
	m := map[string]any{}
	for k, v := range f.fields {
		if imageFormNumbers[k] {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, badRequest(k, "%s must be a number, got %q", k, v)
			}
			m[k] = n
			continue
		}
		m[k] = v
	}
	for k, v := range f.files {
		m[strings.TrimSuffix(k, "[]")] = base64.StdEncoding.EncodeToString(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, badRequest("", "%v", err)
	}
	return b, nil
}

// decodeImageInput decodes and checks a base64 input image.
func decodeImageInput(param string, v *string) ([]byte, *apiError) {
	if v == nil || *v == "" {
		return nil, badRequest(param, "%s is required: a base64 PNG or JPEG", param)
	}
	if base64.StdEncoding.DecodedLen(len(*v)) > maxImageUploadBytes+3 {
		return nil, &apiError{Status: fasthttp.StatusRequestEntityTooLarge, Type: "BadRequestError", Param: param, Message: sprintf("%s exceeds %d bytes", param, maxImageUploadBytes)}
	}
	raw, err := base64.StdEncoding.DecodeString(*v)
	if err != nil {
		return nil, badRequest(param, "%s: not valid base64: %v", param, err)
	}
	if _, err := media.ProbeImage(raw); err != nil {
		return nil, badRequest(param, "%s: %v", param, err)
	}
	return raw, nil
}

func (h *mediaHandler) images() {
	if want := imageRoute(h.path); want != h.mi.ImageInput {
		route := map[runtime.ImageInput]string{runtime.ImageFromText: "generations", runtime.ImageFromImage: "image-to-image", runtime.ImageEdit: "edits"}[h.mi.ImageInput]
		h.fail(notFound("", fmt.Sprintf("%s (runner %s) serves POST /v1/images/%s, not %s", h.s.cfg.Model, h.mi.Runner, route, h.path)))
		return
	}
	var b imageBody
	if isMultipart(h.ctx.Request.Header.ContentType()) {
		body, e := imageForm(h.ctx.PostBody(), h.ctx.Request.Header.ContentType())
		if e != nil {
			h.fail(e)
			return
		}
		if e := decodeJSON(body, &b); e != nil {
			h.fail(e)
			return
		}
	} else if !h.decode(&b) {
		return
	}
	if !h.checkModel(b.Model) {
		return
	}
	if b.Prompt == nil || strings.TrimSpace(*b.Prompt) == "" {
		h.fail(badRequest("prompt", "prompt is required and must not be empty"))
		return
	}
	if len(*b.Prompt) > maxPromptBytes || len(b.NegativePrompt) > maxPromptBytes {
		h.fail(badRequest("prompt", "prompts are limited to %d bytes", maxPromptBytes))
		return
	}
	req := &runtime.ImageRequest{ID: h.reqID, Prompt: *b.Prompt, NegativePrompt: b.NegativePrompt, Steps: h.mi.DefaultSteps, GuidanceScale: 5, Count: 1}
	if b.NumInferenceSteps != nil {
		if n := *b.NumInferenceSteps; n < h.mi.MinSteps || n > h.mi.MaxSteps {
			h.fail(badRequest("num_inference_steps", "num_inference_steps must be between %d and %d for %s, got %d", h.mi.MinSteps, h.mi.MaxSteps, h.mi.Runner, n))
			return
		}
		req.Steps = *b.NumInferenceSteps
	}
	if b.GuidanceScale != nil {
		if g := *b.GuidanceScale; !(g >= 1 && g <= 20) {
			h.fail(badRequest("guidance_scale", "guidance_scale must be between 1 and 20, got %v", g))
			return
		}
		req.GuidanceScale = *b.GuidanceScale
	}
	if b.Seed != nil {
		req.Seed, req.HasSeed = *b.Seed, true
	}
	count, param := b.NumberOfImages, "number_of_images"
	if b.N != nil {
		if count != nil && *count != *b.N {
			h.fail(badRequest("n", "n (%d) and number_of_images (%d) disagree; give one", *b.N, *count))
			return
		}
		count, param = b.N, "n"
	}
	if count != nil {
		if *count < 1 || *count > h.mi.MaxImages {
			h.fail(badRequest(param, "%s must be between 1 and %d, got %d", param, h.mi.MaxImages, *count))
			return
		}
		req.Count = *count
	}
	size := h.mi.ImageSizes[0]
	if b.Size != "" && b.Size != "auto" {
		if !slices.Contains(h.mi.ImageSizes, b.Size) {
			h.fail(badRequest("size", "unsupported size %q for %s; supported: %s", b.Size, h.mi.Runner, strings.Join(h.mi.ImageSizes, ", ")))
			return
		}
		size = b.Size
	}
	fmt.Sscanf(size, "%dx%d", &req.Width, &req.Height)
	switch h.mi.ImageInput {
	case runtime.ImageFromText:
		for param, given := range map[string]bool{"image": b.Image != nil, "mask": b.Mask != nil, "strength": b.Strength != nil} {
			if given {
				h.fail(badRequest(param, "%s is for image-to-image and edits; this model generates from text", param))
				return
			}
		}
	default:
		var e *apiError
		if req.Image, e = decodeImageInput("image", b.Image); e != nil {
			h.fail(e)
			return
		}
		if h.mi.ImageInput == runtime.ImageEdit {
			if req.Mask, e = decodeImageInput("mask", b.Mask); e != nil {
				h.fail(e)
				return
			}
		} else if b.Mask != nil {
			h.fail(badRequest("mask", "mask is for edits; this model does image-to-image"))
			return
		}
		req.Strength = 0.6
		if b.Strength != nil {
			if st := *b.Strength; !(st >= 0 && st <= 1) {
				h.fail(badRequest("strength", "strength must be between 0 and 1, got %v", st))
				return
			}
			req.Strength = *b.Strength
		}
	}
	if b.ResponseFormat != "" && b.ResponseFormat != "b64_json" {
		h.fail(badRequest("response_format", "response_format %q is not supported; ttis returns images inline (b64_json)", b.ResponseFormat))
		return
	}
	format := "PNG"
	switch {
	case b.ImageReturnFormat != "":
		format = b.ImageReturnFormat
	case b.OutputFormat != "":
		format = strings.ToUpper(b.OutputFormat)
	}
	if format == "JPG" {
		format = "JPEG"
	}
	if format != "PNG" && format != "JPEG" {
		h.fail(badRequest("image_return_format", "image_return_format must be PNG or JPEG, got %q", format))
		return
	}
	quality := 85
	if b.ImageQuality != nil {
		if q := *b.ImageQuality; q < 50 || q > 100 {
			h.fail(badRequest("image_quality", "image_quality must be between 50 and 100, got %d", q))
			return
		}
		quality = *b.ImageQuality
	}
	gen, ok := h.impl.(runtime.ImageGenerator)
	if !ok {
		h.fail(notFound("", "this unit's engine does not generate images"))
		return
	}
	rctx, release, ok := h.s.admitMedia(h.ctx, h.arrival)
	if !ok {
		return
	}
	t0 := time.Now()
	pngs, err := gen.GenerateImages(rctx, req)
	release(err)
	if err != nil {
		h.fail(h.s.mediaError(err, h.s.live.Load().RequestTimeout))
		return
	}
	elapsed := time.Since(t0).Seconds()
	encoded := make([]string, len(pngs))
	for i, p := range pngs {
		if format == "JPEG" {
			if p, err = pngToJPEG(p, quality); err != nil {
				h.fail(&apiError{Status: fasthttp.StatusInternalServerError, Type: "InternalServerError", Message: "encode JPEG: " + err.Error()})
				return
			}
		}
		encoded[i] = base64.StdEncoding.EncodeToString(p)
	}
	resp := map[string]any{"images": encoded, "generation_time": elapsed}
	if strings.HasPrefix(h.path, "/v1/") {
		// OpenAI's shape beside tt-media-server's, so both kinds of
		// client read the same answer.
		data := make([]map[string]string, len(encoded))
		for i, e := range encoded {
			data[i] = map[string]string{"b64_json": e}
		}
		resp["created"] = time.Now().Unix()
		resp["data"] = data
		resp["output_format"] = strings.ToLower(format)
		resp["size"] = size
	}
	writeJSON(h.ctx, resp)
}

func pngToJPEG(p []byte, quality int) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(p))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality})
	return buf.Bytes(), err
}

// --- transcription --------------------------------------------------------

// transcribeFields are the fields a transcription request may carry, in
// JSON or as form fields: tt-media-server's and OpenAI's.
var transcribeFields = map[string]bool{
	"file": true, "model": true, "stream": true, "response_format": true, "language": true, "prompt": true,
	"temperature": true, "temperatures": true, "is_preprocessing_enabled": true, "perform_diarization": true,
	"return_timestamps": true, "compression_ratio_threshold": true, "logprob_threshold": true,
	"no_speech_threshold": true, "timestamp_granularities[]": true, "timestamp_granularities": true,
}

type transcribeBody struct {
	File                      *string         `json:"file"`
	Model                     string          `json:"model"`
	Stream                    bool            `json:"stream"`
	ResponseFormat            string          `json:"response_format"`
	Language                  string          `json:"language"`
	Prompt                    string          `json:"prompt"`
	Temperature               *float64        `json:"temperature"`
	Temperatures              json.RawMessage `json:"temperatures"`
	IsPreprocessingEnabled    *bool           `json:"is_preprocessing_enabled"`
	PerformDiarization        bool            `json:"perform_diarization"`
	ReturnTimestamps          bool            `json:"return_timestamps"`
	CompressionRatioThreshold *float64        `json:"compression_ratio_threshold"`
	LogprobThreshold          *float64        `json:"logprob_threshold"`
	NoSpeechThreshold         *float64        `json:"no_speech_threshold"`
	TimestampGranularities    []string        `json:"timestamp_granularities"`
}

func (h *mediaHandler) audioLimits() (float64, int64) {
	l := h.s.cfg.MediaLimits
	secs, size := l.MaxAudioSeconds, l.MaxAudioBytes
	if secs <= 0 {
		secs = 60
	}
	if size <= 0 {
		size = 50 << 20
	}
	return secs, size
}

func (h *mediaHandler) transcribe() {
	maxSecs, maxBytes := h.audioLimits()
	var b transcribeBody
	var raw []byte
	if isMultipart(h.ctx.Request.Header.ContentType()) {
		f, e := parseForm(h.ctx.PostBody(), h.ctx.Request.Header.ContentType(), transcribeFields, map[string]int64{"file": maxBytes})
		if e != nil {
			h.fail(e)
			return
		}
		var ok bool
		if raw, ok = f.files["file"]; !ok {
			h.fail(badRequest("file", "file is required: the audio clip (WAV or MP3) as a form file"))
			return
		}
		if e := formToTranscribe(f.fields, &b); e != nil {
			h.fail(e)
			return
		}
	} else {
		if !h.decode(&b) {
			return
		}
		if b.File == nil || *b.File == "" {
			h.fail(badRequest("file", "file is required: the audio clip (WAV or MP3), base64-encoded"))
			return
		}
		if int64(base64.StdEncoding.DecodedLen(len(*b.File))) > maxBytes+3 {
			h.fail(&apiError{Status: fasthttp.StatusRequestEntityTooLarge, Type: "BadRequestError", Param: "file",
				Message: sprintf("file: the clip exceeds the unit's limit of %d bytes (media.max_audio_size_bytes)", maxBytes)})
			return
		}
		var err error
		if raw, err = base64.StdEncoding.DecodeString(*b.File); err != nil {
			h.fail(badRequest("file", "file: not valid base64: %v", err))
			return
		}
	}
	if !h.checkModel(b.Model) {
		return
	}
	if int64(len(raw)) > maxBytes {
		h.fail(&apiError{Status: fasthttp.StatusRequestEntityTooLarge, Type: "BadRequestError", Param: "file",
			Message: sprintf("file: the clip is %d bytes, over the unit's limit of %d (media.max_audio_size_bytes)", len(raw), maxBytes)})
		return
	}
	format := b.ResponseFormat
	switch format {
	case "":
		format = "json"
	case "json", "verbose_json", "text":
	default:
		h.fail(badRequest("response_format", "response_format %q is not supported; use json, verbose_json or text", format))
		return
	}
	ai, err := media.ProbeAudio(raw)
	if err != nil {
		h.fail(badRequest("file", "file: %v (send a WAV or MP3 clip)", err))
		return
	}
	if ai.Duration <= 0 {
		h.fail(badRequest("file", "file: the clip is 0 seconds long"))
		return
	}
	if s := ai.Duration.Seconds(); s > maxSecs {
		h.fail(badRequest("file", "file: the clip is %.1f seconds long, over the unit's limit of %g seconds (media.max_audio_duration_seconds)", s, maxSecs))
		return
	}
	tr, ok := h.impl.(runtime.Transcriber)
	if !ok {
		h.fail(notFound("", "this unit's engine does not transcribe audio"))
		return
	}
	req := &runtime.TranscribeRequest{ID: h.reqID, Prompt: b.Prompt, Language: b.Language, Diarize: b.PerformDiarization,
		Audio: runtime.Audio{Format: ai.Format, Duration: ai.Duration, SampleRate: ai.SampleRate, Channels: ai.Channels, Data: raw}}
	rctx, release, ok := h.s.admitMedia(h.ctx, h.arrival)
	if !ok {
		return
	}
	if !b.Stream {
		t, err := tr.Transcribe(rctx, req, nil)
		release(err)
		if err != nil {
			h.fail(h.s.mediaError(err, h.s.live.Load().RequestTimeout))
			return
		}
		if format == "text" {
			h.ctx.SetContentType("text/plain; charset=utf-8")
			h.ctx.SetBodyString(t.Text)
			return
		}
		writeJSON(h.ctx, transcriptJSON(t, format == "verbose_json"))
		return
	}
	// Streaming: one line per segment as the engine finishes it
	// (tt-media-server's application/x-ndjson), then the whole
	// transcript with "done": true.
	ct := "application/x-ndjson"
	if format == "text" {
		ct = "text/plain; charset=utf-8"
	}
	h.ctx.SetContentType(ct)
	timeout := h.s.live.Load().RequestTimeout
	h.ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		t, err := tr.Transcribe(rctx, req, func(seg runtime.Segment) error {
			if format == "text" {
				w.WriteString(seg.Text + "\n")
			} else {
				line, _ := json.Marshal(map[string]any{"text": seg.Text, "chunk_id": seg.ID, "start": seg.Start, "end": seg.End,
					"segments": []any{segmentJSON(seg)}})
				w.Write(append(line, '\n'))
			}
			return w.Flush()
		})
		release(err)
		if format == "text" {
			return
		}
		var line []byte
		if err != nil {
			e := h.s.mediaError(err, timeout)
			line = e.appendJSON(nil)
		} else {
			v := transcriptJSON(t, format == "verbose_json")
			v["done"] = true
			line, _ = json.Marshal(v)
		}
		w.Write(append(line, '\n'))
		w.Flush()
	})
}

// formToTranscribe reads a multipart transcription's text fields.
func formToTranscribe(f map[string]string, b *transcribeBody) *apiError {
	b.Model, b.ResponseFormat, b.Language, b.Prompt = f["model"], f["response_format"], f["language"], f["prompt"]
	for name, dst := range map[string]*bool{"stream": &b.Stream, "perform_diarization": &b.PerformDiarization, "return_timestamps": &b.ReturnTimestamps} {
		if v, ok := f[name]; ok {
			p, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return badRequest(name, "%s must be true or false, got %q", name, v)
			}
			*dst = p
		}
	}
	if v, ok := f["temperature"]; ok {
		t, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || t < 0 || t > 1 {
			return badRequest("temperature", "temperature must be a number between 0 and 1, got %q", v)
		}
	}
	return nil
}

func segmentJSON(s runtime.Segment) map[string]any {
	return map[string]any{"id": s.ID, "speaker": s.Speaker, "start_time": s.Start, "end_time": s.End, "start": s.Start, "end": s.End, "text": s.Text}
}

// transcriptJSON is tt-media-server's AudioTextResponse, with OpenAI's
// verbose_json fields (task, language, segment start/end) beside it.
func transcriptJSON(t *runtime.Transcript, verbose bool) map[string]any {
	segs := make([]any, len(t.Segments))
	for i, s := range t.Segments {
		segs[i] = segmentJSON(s)
	}
	v := map[string]any{"text": t.Text, "duration": t.Duration, "segments": segs, "speaker_count": len(t.Speakers), "speakers": t.Speakers}
	if len(t.Segments) > 0 {
		v["start"], v["end"] = t.Segments[0].Start, t.Segments[len(t.Segments)-1].End
	}
	if verbose {
		v["task"], v["language"] = "transcribe", t.Language
	}
	return v
}

// --- text to speech -------------------------------------------------------

type speechBody struct {
	Model            string   `json:"model"`
	Input            *string  `json:"input"`
	Text             *string  `json:"text"`
	Voice            string   `json:"voice"`
	SpeakerID        string   `json:"speaker_id"`
	SpeakerEmbedding string   `json:"speaker_embedding"`
	ResponseFormat   string   `json:"response_format"`
	Speed            *float64 `json:"speed"`
	Instructions     string   `json:"instructions"`
}

func (h *mediaHandler) speech() {
	var b speechBody
	if !h.decode(&b) || !h.checkModel(b.Model) {
		return
	}
	text, param := b.Input, "input"
	if b.Text != nil {
		if text != nil {
			h.fail(badRequest("text", "give input or text, not both"))
			return
		}
		text, param = b.Text, "text"
	}
	if text == nil || strings.TrimSpace(*text) == "" {
		h.fail(badRequest("input", "input (or text) is required and must not be empty"))
		return
	}
	if n := len([]rune(*text)); n > maxSpeechChars {
		h.fail(badRequest(param, "%s is %d characters, over the limit of %d", param, n, maxSpeechChars))
		return
	}
	if b.Speed != nil && *b.Speed != 1 {
		h.fail(badRequest("speed", "speed %v is not supported; this model speaks at speed 1", *b.Speed))
		return
	}
	format := strings.ToLower(b.ResponseFormat)
	switch format {
	case "":
		format = "wav"
	case "wav", "json", "verbose_json":
	default:
		h.fail(badRequest("response_format", "response_format %q is not supported; use wav, json or verbose_json", b.ResponseFormat))
		return
	}
	speaker := b.SpeakerID
	if speaker == "" {
		speaker = b.Voice
	}
	sp, ok := h.impl.(runtime.SpeechSynthesizer)
	if !ok {
		h.fail(notFound("", "this unit's engine does not synthesize speech"))
		return
	}
	rctx, release, ok := h.s.admitMedia(h.ctx, h.arrival)
	if !ok {
		return
	}
	out, err := sp.Speak(rctx, &runtime.SpeechRequest{ID: h.reqID, Text: *text, SpeakerID: speaker})
	release(err)
	if err != nil {
		h.fail(h.s.mediaError(err, h.s.live.Load().RequestTimeout))
		return
	}
	if format == "wav" {
		h.ctx.SetContentType("audio/wav")
		h.ctx.Response.Header.Set("Content-Disposition", "attachment; filename=speech.wav")
		h.ctx.SetBody(out.WAV)
		return
	}
	writeJSON(h.ctx, map[string]any{"audio": base64.StdEncoding.EncodeToString(out.WAV), "duration": out.Duration.Seconds(),
		"sample_rate": out.SampleRate, "format": "wav", "speaker_id": speaker})
}

// --- CNN ------------------------------------------------------------------

type classifyBody struct {
	Model          string   `json:"model"`
	Prompt         *string  `json:"prompt"`
	TopK           *int     `json:"top_k"`
	MinConfidence  *float64 `json:"min_confidence"`
	ResponseFormat string   `json:"response_format"`
}

var classifyFields = map[string]bool{"file": true, "prompt": true, "model": true, "top_k": true, "min_confidence": true, "response_format": true}

func (h *mediaHandler) classify() {
	var b classifyBody
	var raw []byte
	if isMultipart(h.ctx.Request.Header.ContentType()) {
		f, e := parseForm(h.ctx.PostBody(), h.ctx.Request.Header.ContentType(), classifyFields, map[string]int64{"file": maxImageUploadBytes, "prompt": maxImageUploadBytes})
		if e != nil {
			h.fail(e)
			return
		}
		raw = f.files["file"]
		if raw == nil {
			raw = f.files["prompt"]
		}
		b.Model, b.ResponseFormat = f.fields["model"], f.fields["response_format"]
		if v, ok := f.fields["top_k"]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				h.fail(badRequest("top_k", "top_k must be an integer, got %q", v))
				return
			}
			b.TopK = &n
		}
		if v, ok := f.fields["min_confidence"]; ok {
			c, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				h.fail(badRequest("min_confidence", "min_confidence must be a number, got %q", v))
				return
			}
			b.MinConfidence = &c
		}
	} else {
		if !h.decode(&b) {
			return
		}
		if b.Prompt != nil {
			if base64.StdEncoding.DecodedLen(len(*b.Prompt)) > maxImageUploadBytes+3 {
				h.fail(&apiError{Status: fasthttp.StatusRequestEntityTooLarge, Type: "BadRequestError", Param: "prompt", Message: sprintf("prompt: the image exceeds %d bytes", maxImageUploadBytes)})
				return
			}
			var err error
			if raw, err = base64.StdEncoding.DecodeString(*b.Prompt); err != nil {
				h.fail(badRequest("prompt", "prompt: not valid base64: %v", err))
				return
			}
		}
	}
	if !h.checkModel(b.Model) {
		return
	}
	if len(raw) == 0 {
		h.fail(badRequest("prompt", "the image is required: prompt (base64) or a multipart file"))
		return
	}
	topK, minConf := 3, 70.0
	if b.TopK != nil {
		if *b.TopK < 1 || *b.TopK > 1000 {
			h.fail(badRequest("top_k", "top_k must be between 1 and 1000, got %d", *b.TopK))
			return
		}
		topK = *b.TopK
	}
	if b.MinConfidence != nil {
		if c := *b.MinConfidence; !(c >= 0 && c <= 100) {
			h.fail(badRequest("min_confidence", "min_confidence must be between 0 and 100, got %v", c))
			return
		}
		minConf = *b.MinConfidence
	}
	format := b.ResponseFormat
	switch format {
	case "":
		format = "json"
	case "json", "verbose_json":
	default:
		h.fail(badRequest("response_format", "response_format must be json or verbose_json, got %q", format))
		return
	}
	ii, err := media.ProbeImage(raw)
	if err != nil {
		h.fail(badRequest("prompt", "the image: %v", err))
		return
	}
	cl, ok := h.impl.(runtime.ImageClassifier)
	if !ok {
		h.fail(notFound("", "this unit's engine does not classify images"))
		return
	}
	rctx, release, ok := h.s.admitMedia(h.ctx, h.arrival)
	if !ok {
		return
	}
	preds, err := cl.Classify(rctx, &runtime.ClassifyRequest{ID: h.reqID, Image: raw, Width: ii.Width, Height: ii.Height, TopK: topK, MinConfidence: minConf})
	release(err)
	if err != nil {
		h.fail(h.s.mediaError(err, h.s.live.Load().RequestTimeout))
		return
	}
	result := map[string]any{}
	if len(preds) > 0 {
		result["top1_class_label"] = preds[0].Label
		result["top1_class_probability"] = strconv.FormatFloat(preds[0].Confidence, 'f', 2, 64) + "%"
	}
	if format == "json" {
		out := map[string]float64{}
		for _, p := range preds {
			out[p.Label] = p.Confidence
		}
		result["output"] = out
	} else {
		parts := make([]string, len(preds))
		for i, p := range preds {
			parts[i] = p.Label + ": " + strconv.FormatFloat(p.Confidence, 'f', 2, 64) + "%"
		}
		result["output"] = strings.Join(parts, ", ")
	}
	writeJSON(h.ctx, map[string]any{"image_data": []any{result}, "status": "success"})
}

// --- embeddings -----------------------------------------------------------

type embeddingsBody struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

func (h *mediaHandler) embeddings() {
	var b embeddingsBody
	if !h.decode(&b) || !h.checkModel(b.Model) {
		return
	}
	inputs, e := parseEmbeddingInput(b.Input)
	if e != nil {
		h.fail(e)
		return
	}
	if h.tok != nil {
		// Size before work: an input that cannot fit the context window
		// whatever it encodes to is refused without tokenizing it.
		for i, in := range inputs {
			if lo := minTokens(h.tok, in); lo > h.window {
				h.fail(badRequest("input", "input[%d] is %d bytes, at least %d tokens, over the model's context window of %d tokens", i, len(in), lo, h.window))
				return
			}
		}
	}
	switch b.EncodingFormat {
	case "", "float", "base64":
	default:
		h.fail(badRequest("encoding_format", "encoding_format must be float or base64, got %q", b.EncodingFormat))
		return
	}
	req := &runtime.EmbedRequest{ID: h.reqID, Inputs: inputs}
	if b.Dimensions != nil {
		d := *b.Dimensions
		switch {
		case d < 1 || d > h.mi.Dimensions:
			h.fail(badRequest("dimensions", "dimensions must be between 1 and %d (the model's length), got %d", h.mi.Dimensions, d))
			return
		case d != h.mi.Dimensions && !h.mi.Matryoshka:
			h.fail(badRequest("dimensions", "this model's vectors cannot be shortened; leave dimensions out or set it to %d", h.mi.Dimensions))
			return
		}
		req.Dimensions = d
	}
	emb := h.impl.(runtime.Embedder)
	rctx, release, ok := h.s.admitMedia(h.ctx, h.arrival)
	if !ok {
		return
	}
	out, err := emb.Embed(rctx, req)
	release(err)
	if err != nil {
		h.fail(h.s.mediaError(err, h.s.live.Load().RequestTimeout))
		return
	}
	h.s.m.promptTokens.Add(uint64(out.PromptTokens))
	buf := make([]byte, 0, 64+len(out.Vectors)*(len(out.Vectors[0])*12+48))
	buf = append(buf, `{"object":"list","data":[`...)
	for i, v := range out.Vectors {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"object":"embedding","index":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"embedding":`...)
		if b.EncodingFormat == "base64" {
			raw := make([]byte, 0, 4*len(v))
			for _, x := range v {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
			}
			buf = append(buf, '"')
			buf = base64.StdEncoding.AppendEncode(buf, raw)
			buf = append(buf, '"')
		} else {
			buf = append(buf, '[')
			for j, x := range v {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendFloat(buf, float64(x), 'g', -1, 32)
			}
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
	}
	buf = append(buf, `],"model":`...)
	buf = appendJSONString(buf, h.s.cfg.Model)
	buf = append(buf, `,"usage":{"prompt_tokens":`...)
	buf = strconv.AppendInt(buf, int64(out.PromptTokens), 10)
	buf = append(buf, `,"total_tokens":`...)
	buf = strconv.AppendInt(buf, int64(out.PromptTokens), 10)
	buf = append(buf, "}}"...)
	h.ctx.SetContentType("application/json")
	h.ctx.SetBody(buf)
}

// parseEmbeddingInput reads "input": a string or an array of strings.
func parseEmbeddingInput(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("input", "input is required: a string or an array of strings")
	}
	var inputs []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("input", "input: %v", err)
		}
		inputs = []string{s}
	} else {
		if raw[0] != '[' {
			return nil, badRequest("input", "input must be a string or an array of strings")
		}
		// Count before decoding so a huge array is refused cheaply.
		if n := bytes.Count(raw, []byte{','}); n >= maxEmbeddingInputs {
			var probe []json.RawMessage
			if err := json.Unmarshal(raw, &probe); err == nil && len(probe) > maxEmbeddingInputs {
				return nil, badRequest("input", "input has %d items; at most %d per request", len(probe), maxEmbeddingInputs)
			}
		}
		if err := json.Unmarshal(raw, &inputs); err != nil {
			return nil, badRequest("input", "input must be a string or an array of strings (token-id inputs are not supported): %v", err)
		}
		if len(inputs) == 0 {
			return nil, badRequest("input", "input is an empty array")
		}
	}
	for i, s := range inputs {
		if strings.TrimSpace(s) == "" {
			return nil, badRequest("input", "input[%d] is empty", i)
		}
		if len(s) > maxEmbeddingInputBytes {
			return nil, badRequest("input", "input[%d] is %d bytes, over the limit of %d", i, len(s), maxEmbeddingInputBytes)
		}
	}
	return inputs, nil
}
