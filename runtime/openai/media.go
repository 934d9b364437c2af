package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/ttis-dev/ttis/runtime/retryafter"
)

// The media endpoints ttis units and tt-media-server share. Evals and
// benchmarks send their media requests through these methods, so the
// request shapes live in one place.
const (
	TranscriptionsPath = "/v1/audio/transcriptions"
	SpeechPath         = "/v1/audio/speech"
	EmbeddingsPath     = "/v1/embeddings"
)

// TranscribeRequest is a non-streamed transcription in tt-media-server's
// JSON form: the clip's bytes base64-encoded in "file", which is what
// tt-inference-server's whisper_tt eval model posts (plus "model", which
// OpenAI-style servers need and tt-media-server ignores).
type TranscribeRequest struct {
	Model string `json:"model,omitempty"`
	// File is the base64 of the audio file (WAV or MP3).
	File   string `json:"file"`
	Stream bool   `json:"stream"`
}

// NewTranscribeRequest encodes a clip for Transcribe.
func NewTranscribeRequest(model string, audio []byte) TranscribeRequest {
	return TranscribeRequest{Model: model, File: base64.StdEncoding.EncodeToString(audio)}
}

// Transcribe posts req to /v1/audio/transcriptions and returns the
// transcript: the answer's "text", or "transcription" / "result" as
// whisper_tt also accepts. An answer without any of them is an error of
// kind KindBadResponse; an empty transcript is a valid answer (silence).
func (c *Client) Transcribe(ctx context.Context, req TranscribeRequest) (string, json.RawMessage, error) {
	raw, err := c.PostJSON(ctx, TranscriptionsPath, req)
	if err != nil {
		return "", raw, err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return "", raw, &Error{Kind: KindBadResponse, Msg: "decode transcription: " + err.Error()}
	}
	for _, k := range []string{"text", "transcription", "result"} {
		v, ok := body[k]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", raw, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("transcription %q is not text", k)}
		}
		return s, raw, nil
	}
	return "", raw, &Error{Kind: KindBadResponse, Msg: "transcription answer has no \"text\""}
}

// Embeddings posts inputs to /v1/embeddings (float encoding) and returns
// one vector per input, in input order (the answer's "index" decides).
func (c *Client) Embeddings(ctx context.Context, model string, inputs []string) ([][]float64, json.RawMessage, error) {
	raw, err := c.PostJSON(ctx, EmbeddingsPath, map[string]any{"model": model, "input": inputs, "encoding_format": "float"})
	if err != nil {
		return nil, raw, err
	}
	vecs, perr := ParseEmbeddings(raw, len(inputs))
	if perr != nil {
		return nil, raw, perr
	}
	return vecs, raw, nil
}

// ParseEmbeddings reads an embeddings answer holding n vectors.
func ParseEmbeddings(raw []byte, n int) ([][]float64, *Error) {
	var body struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, &Error{Kind: KindBadResponse, Msg: "decode embeddings: " + err.Error()}
	}
	if len(body.Data) != n {
		return nil, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("%d embeddings for %d inputs", len(body.Data), n)}
	}
	out := make([][]float64, n)
	for i, d := range body.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("embedding %d has index %d (want each of 0-%d once)", i, at, n-1)}
		}
		if len(d.Embedding) == 0 {
			return nil, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("embedding %d is empty", at)}
		}
		for _, v := range d.Embedding {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("embedding %d holds %v", at, v)}
			}
		}
		out[at] = d.Embedding
	}
	return out, nil
}

// Speech asks /v1/audio/speech to say text and returns the WAV bytes. It
// sends tt-media-server's request (the text in "text") and asks for one of
// its JSON answers (format "json" or "verbose_json": the WAV
// base64-encoded in "audio"; tt-inference-server's TTS benchmark asks for
// the first, its quality test for the second), so the answer travels
// through the client's JSON path with its retries and error handling.
func (c *Client) Speech(ctx context.Context, model, text, format string) ([]byte, json.RawMessage, error) {
	raw, err := c.PostJSON(ctx, SpeechPath, map[string]any{"model": model, "text": text, "response_format": format})
	if err != nil {
		return nil, raw, err
	}
	var body struct {
		Audio *string `json:"audio"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, raw, &Error{Kind: KindBadResponse, Msg: "decode speech: " + err.Error()}
	}
	if body.Audio == nil {
		return nil, raw, &Error{Kind: KindBadResponse, Msg: "speech answer has no \"audio\""}
	}
	wav, err := base64.StdEncoding.DecodeString(*body.Audio)
	if err != nil {
		return nil, raw, &Error{Kind: KindBadResponse, Msg: "speech audio is not base64: " + err.Error()}
	}
	if len(wav) == 0 {
		return nil, raw, &Error{Kind: KindEmpty, Msg: "the server returned no audio"}
	}
	return wav, raw, nil
}

// Download GETs a binary answer (a generated video's MP4 from
// /v1/videos/generations/{id}/download) of at most limit bytes, retrying
// as Config says. A non-200 answer is an *Error of kind KindHTTP with the
// server's message.
func (c *Client) Download(ctx context.Context, path string, limit int64) ([]byte, error) {
	b, e := retrying(ctx, c, func() ([]byte, time.Duration, *Error) { return c.download(ctx, path, limit) })
	if e != nil {
		return nil, e
	}
	return b, nil
}

func (c *Client) download(ctx context.Context, path string, limit int64) ([]byte, time.Duration, *Error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	what := "GET " + path
	req, err := c.newRequest(actx, http.MethodGet, path, nil)
	if err != nil {
		return nil, 0, &Error{Kind: KindTransport, Msg: err.Error()}
	}
	resp, _, err := c.send(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, 0, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("%s: no answer within %s", what, c.cfg.Timeout)}
		}
		return nil, 0, &Error{Kind: KindTransport, Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		wait, _ := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now(), maxRetryAfter)
		return nil, wait, &Error{Kind: KindHTTP, Status: resp.StatusCode, Msg: fmt.Sprintf("%s: %s", what, HTTPError(resp))}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, &Error{Kind: KindTransport, Msg: fmt.Sprintf("%s: read body: %v", what, err)}
	}
	if int64(len(b)) > limit {
		return nil, 0, &Error{Kind: KindBadResponse, Msg: fmt.Sprintf("%s: the answer is larger than %d bytes", what, limit)}
	}
	return b, 0, nil
}
