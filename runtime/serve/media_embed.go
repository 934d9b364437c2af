package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/runtime"
)

// Embeddings: POST /v1/embeddings, from a media embedding model or a text
// engine that is a runtime.Embedder.

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
