package serve

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/media"
)

// CNN classification: POST /v1/cnn/search-image.

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
