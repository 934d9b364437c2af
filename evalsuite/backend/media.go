package backend

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// The image, CNN and video requests of tt-inference-server's media evals
// (test_module/eval_tests/*), sent as its test clients send them.

// mediaBody is the JSON body of a media request: its fields, each image
// base64-encoded in its field, and the model name.
func (c *Backend) mediaBody(m *evalsuite.MediaArgs) map[string]any {
	body := map[string]any{"model": c.model}
	maps.Copy(body, m.Fields)
	for k, b := range m.Images {
		body[k] = base64.StdEncoding.EncodeToString(b)
	}
	return body
}

// image asks an image route for one image and returns its bytes.
func (c *Backend) image(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	raw, err := c.srv.PostJSON(ctx, inst.Media.Path, c.mediaBody(inst.Media))
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	img, perr := ParseImages(raw)
	if perr != nil {
		return evalsuite.Response{}, nil, perr
	}
	sum := sha256.Sum256(img)
	// The raw answer is the image again: not kept.
	return evalsuite.Response{Media: img, Text: fmt.Sprintf("image sha256:%s (%d bytes)", hex.EncodeToString(sum[:]), len(img))}, nil, nil
}

// ParseImages reads the first image of an image answer ({"images":
// [base64, ...]}, what tt-media-server returns), as the reference takes
// images[0].
func ParseImages(raw []byte) ([]byte, *openai.Error) {
	var body struct {
		Images []string `json:"images"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, &openai.Error{Kind: openai.KindBadResponse, Msg: "decode image answer: " + err.Error()}
	}
	if len(body.Images) == 0 {
		return nil, &openai.Error{Kind: openai.KindEmpty, Msg: "the image answer holds no image"}
	}
	img, err := base64.StdEncoding.DecodeString(body.Images[0])
	if err != nil {
		return nil, &openai.Error{Kind: openai.KindBadResponse, Msg: "images[0] is not base64: " + err.Error()}
	}
	if len(img) == 0 {
		return nil, &openai.Error{Kind: openai.KindEmpty, Msg: "images[0] is empty"}
	}
	return img, nil
}

// cnnPath is tt-media-server's CNN route.
const cnnPath = "/v1/cnn/search-image"

// classify posts an image to the CNN route and reads its top-1 label.
func (c *Backend) classify(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	raw, err := c.srv.PostJSON(ctx, cnnPath, c.mediaBody(inst.Media))
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	label, perr := ParseTop1(raw)
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	return evalsuite.Response{Text: label}, raw, nil
}

// cnnResult is image_data[0] of a CNN answer (a list, or one object).
func cnnResult(raw []byte) (map[string]json.RawMessage, *openai.Error) {
	var body struct {
		ImageData json.RawMessage `json:"image_data"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, &openai.Error{Kind: openai.KindBadResponse, Msg: "decode CNN answer: " + err.Error()}
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(body.ImageData, &list) == nil {
		if len(list) == 0 {
			return nil, nil
		}
		return list[0], nil
	}
	var one map[string]json.RawMessage
	if err := json.Unmarshal(body.ImageData, &one); err != nil {
		return nil, &openai.Error{Kind: openai.KindBadResponse, Msg: "CNN answer's image_data is neither a list nor an object"}
	}
	return one, nil
}

// ParseTop1 reads the predicted label of a CNN answer as VisionEvalsTest's
// _extract_prediction does: image_data[0].top1_class_label, else the first
// of output.labels; "" when there is none (which scores as a miss).
func ParseTop1(raw []byte) (string, *openai.Error) {
	r, err := cnnResult(raw)
	if err != nil || r == nil {
		return "", err
	}
	var label any
	if v, ok := r["top1_class_label"]; ok && json.Unmarshal(v, &label) == nil && label != nil {
		return fmt.Sprint(label), nil
	}
	var out struct {
		Labels []any `json:"labels"`
	}
	if v, ok := r["output"]; ok && json.Unmarshal(v, &out) == nil && len(out.Labels) > 0 && out.Labels[0] != nil {
		return fmt.Sprint(out.Labels[0]), nil
	}
	return "", nil
}

// detect posts an image to the CNN route and reads a detector's boxes.
func (c *Backend) detect(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	raw, err := c.srv.PostJSON(ctx, cnnPath, c.mediaBody(inst.Media))
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	boxes, perr := ParseBoxes(raw)
	if perr != nil {
		return evalsuite.Response{}, raw, perr
	}
	// The boxes are kept in the Response; the raw answer is not stored
	// twice.
	return evalsuite.Response{Boxes: boxes}, nil, nil
}

// ParseBoxes reads a detector's answer as cnn_eval_tests.py's _yolox_detect
// does: image_data[0].output's parallel boxes ([x1, y1, x2, y2]), scores
// and indices; a box that is not four numbers is skipped, as the reference
// skips it. An answer without output holds no boxes.
func ParseBoxes(raw []byte) ([][6]float64, *openai.Error) {
	r, err := cnnResult(raw)
	if err != nil || r == nil {
		return nil, err
	}
	var out struct {
		Boxes   []json.RawMessage `json:"boxes"`
		Scores  []float64         `json:"scores"`
		Indices []float64         `json:"indices"`
	}
	if v, ok := r["output"]; ok {
		if e := json.Unmarshal(v, &out); e != nil {
			// A classifier's output (labels to confidences) has no boxes.
			return nil, nil
		}
	}
	n := min(len(out.Boxes), len(out.Scores), len(out.Indices))
	var boxes [][6]float64
	for i := range n {
		var b []*float64
		if json.Unmarshal(out.Boxes[i], &b) != nil || len(b) != 4 || b[0] == nil || b[1] == nil || b[2] == nil || b[3] == nil {
			continue
		}
		boxes = append(boxes, [6]float64{*b[0], *b[1], *b[2], *b[3], out.Scores[i], out.Indices[i]})
	}
	return boxes, nil
}

// Video jobs: the reference polls every 5 s for up to 1200 s
// (video_generation_eval_test.py); a simulated unit answers in
// milliseconds, so the interval is a tenth of the time so far, between
// 50 ms and 5 s.
const (
	videoTimeout  = 1200 * time.Second
	maxVideoBytes = 1 << 30
)

// video submits a video job, waits for it and downloads the MP4.
func (c *Backend) video(ctx context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	raw, err := c.srv.PostJSON(ctx, inst.Media.Path, c.mediaBody(inst.Media))
	var oe *openai.Error
	// The job is created with 202 Accepted, which the client reports as
	// an error that carries the answer.
	if err != nil && !(errors.As(err, &oe) && oe.Status == http.StatusAccepted) {
		return evalsuite.Response{}, raw, err
	}
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &job); err != nil || job.ID == "" {
		return evalsuite.Response{}, raw, &openai.Error{Kind: openai.KindBadResponse, Msg: fmt.Sprintf("video job answer has no id: %s", clip(raw))}
	}
	t0 := time.Now()
	deadline := time.NewTimer(videoTimeout)
	defer deadline.Stop()
	for job.Status != "completed" {
		switch job.Status {
		case "failed", "cancelled":
			msg := "video job " + job.ID + " " + job.Status
			if job.Error != nil {
				msg += ": " + job.Error.Message
			}
			return evalsuite.Response{}, raw, &openai.Error{Kind: openai.KindBadResponse, Msg: msg}
		}
		wait := time.NewTimer(min(max(time.Since(t0)/10, 50*time.Millisecond), 5*time.Second))
		select {
		case <-ctx.Done():
			wait.Stop()
			return evalsuite.Response{}, nil, ctx.Err()
		case <-deadline.C:
			wait.Stop()
			return evalsuite.Response{}, raw, &openai.Error{Kind: openai.KindTimeout, Msg: fmt.Sprintf("video job %s not completed within %s (last status %q)", job.ID, videoTimeout, job.Status)}
		case <-wait.C:
		}
		if raw, err = c.srv.Get(ctx, "/v1/videos/generations/"+job.ID); err != nil {
			return evalsuite.Response{}, raw, err
		}
		if err := json.Unmarshal(raw, &job); err != nil {
			return evalsuite.Response{}, raw, &openai.Error{Kind: openai.KindBadResponse, Msg: "decode video job: " + err.Error()}
		}
	}
	mp4, err := c.srv.Download(ctx, "/v1/videos/generations/"+job.ID+"/download", maxVideoBytes)
	if err != nil {
		return evalsuite.Response{}, raw, err
	}
	sum := sha256.Sum256(mp4)
	return evalsuite.Response{Media: mp4, Text: fmt.Sprintf("video %s sha256:%s (%d bytes)", job.ID, hex.EncodeToString(sum[:]), len(mp4))}, raw, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
