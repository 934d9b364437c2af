package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/runtime/media"
)

// Images: POST /v1/images/generations, /image-to-image and /edits.

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
