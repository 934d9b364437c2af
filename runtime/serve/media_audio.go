package serve

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/media"
)

// Speech: POST /v1/audio/transcriptions (speech to text) and
// /v1/audio/speech (text to speech).

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

// Text to speech.

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
