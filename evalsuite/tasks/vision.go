package tasks

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif"  // decoders for the datasets' image bytes
	_ "image/jpeg" // (PNG is imported below for the encoder)
	"image/png"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// The vision-language tasks follow lmms-eval v0.4.1, which
// tt-inference-server runs with its openai_compatible model: one user
// message whose content is the prompt text and then each image as a PNG
// data URL, sent to /v1/chat/completions (a completions endpoint cannot
// carry images, so these tasks refuse it).

func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "chartqa", Output: gen,
		Description: "ChartQA (lmms-lab/ChartQA test): the question and the chart as a PNG data URL, relaxed correctness (5% on numbers); chat API only (fields type, question, answer, image)",
		Follows:     "lmms-eval v0.4.1 lmms_eval/tasks/chartqa/chartqa.yaml and utils.py",
		Data:        []HubData{parquetGated(parquetSplit(RoleTest, "lmms-lab/ChartQA", "", "test"))}}, buildChartQA)
	register(Info{Name: "docvqa_val", Output: gen,
		Description: "DocVQA validation (lmms-lab/DocVQA): the question and the page as a PNG data URL, ANLS; chat API only (fields question, answers, image)",
		Follows:     "lmms-eval v0.4.1 lmms_eval/tasks/docvqa/docvqa_val.yaml, _default_template_docvqa_yaml, utils.py and api/metrics.py anls",
		Data:        []HubData{parquetGated(parquetSplit(RoleTest, "lmms-lab/DocVQA", "DocVQA", "validation"))}}, buildDocVQAVal)
}

// ImageDataURL turns a dataset's image value into the PNG data URL
// lmms-eval sends: Hugging Face's Image feature ({"bytes": ..., "path":
// ...}; the bytes raw as Parquet gives them, or base64 text in JSON
// Lines), or a data URL already. The image is decoded and re-encoded as
// RGB PNG, as lmms-eval's convert("RGB") and encode_image do (it shrinks
// images over 20 MB, which ttis does not).
func ImageDataURL(v any) (string, error) {
	var raw []byte
	switch x := v.(type) {
	case map[string]any:
		b, _ := x["bytes"].(string)
		if b == "" {
			return "", fmt.Errorf("image has no bytes (a path-only image is not supported: the Hub's Parquet files carry the bytes)")
		}
		raw = []byte(b)
		if _, _, err := image.DecodeConfig(bytes.NewReader(raw)); err != nil {
			dec, derr := base64.StdEncoding.DecodeString(b)
			if derr != nil {
				return "", fmt.Errorf("image bytes are neither an image nor base64: %v", err)
			}
			raw = dec
		}
	case string:
		if _, data, ok := strings.Cut(x, ";base64,"); ok && strings.HasPrefix(x, "data:image/") {
			dec, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				return "", fmt.Errorf("image data URL: %w", err)
			}
			raw = dec
		} else {
			return "", fmt.Errorf("image is text but not a data URL")
		}
	default:
		return "", fmt.Errorf("image is a %T, want the Image feature's {bytes, path}", v)
	}
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("decode image: %w", err)
	}
	rgb := image.NewNRGBA(img.Bounds())
	draw.Draw(rgb, rgb.Bounds(), img, img.Bounds().Min, draw.Src)
	for i := 3; i < len(rgb.Pix); i += 4 { // convert("RGB") drops alpha
		rgb.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.DefaultCompression}).Encode(&buf, opaque{rgb}); err != nil {
		return "", fmt.Errorf("encode PNG: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// opaque presents an NRGBA image whose alpha is all 0xff as opaque, so
// the PNG encoder writes RGB.
type opaque struct{ *image.NRGBA }

func (opaque) Opaque() bool { return true }

func docImages(d evalsuite.Doc) ([]string, error) {
	u, err := ImageDataURL(d.Fields["image"])
	if err != nil {
		return nil, fmt.Errorf("%s: field \"image\": %w", d.Source, err)
	}
	return []string{u}, nil
}

// vqaTask is the shared shape of chartqa and docvqa_val: the question and
// the default post_prompt, greedy with a small budget.
func vqaTask(name, post string, maxTokens int, docs []evalsuite.Doc) *evalsuite.Task {
	return &evalsuite.Task{
		Name: name, Version: "0.0", Output: evalsuite.GenerateUntil, Docs: docs,
		DocToText: func(d evalsuite.Doc) (string, error) {
			q, err := d.Str("question")
			return q + post, err
		},
		DocToImages: docImages,
		ChatOnly:    true,
		Gen:         evalsuite.GenKwargs{MaxGenToks: maxTokens, Temperature: 0},
		Config: map[string]any{
			"task": name, "output_type": "generate_until", "model": "openai_compatible (one user message: text, then image_url parts with PNG data URLs)",
			"lmms_eval_specific_kwargs": map[string]any{"default": map[string]any{"pre_prompt": "", "post_prompt": post}},
			"generation_kwargs":         map[string]any{"max_new_tokens": maxTokens, "temperature": 0, "do_sample": false},
		},
	}
}

func buildChartQA(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	t := vqaTask("chartqa", "\nAnswer the question with a single word.", 16, docs)
	t.DocToTarget = func(d evalsuite.Doc) (string, error) { return d.Str("answer") }
	t.Process = func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
		answer, err := d.Str("answer")
		if err != nil {
			return nil, err
		}
		kind, err := d.Str("type")
		if err != nil {
			return nil, err
		}
		s := 0.0
		if metric.RelaxedCorrect(resp, answer) {
			s = 1
		}
		out := evalsuite.Scores{"relaxed_overall": {s}}
		if kind == "human_test" {
			out["relaxed_human_split"] = []float64{s}
		} else {
			out["relaxed_augmented_split"] = []float64{s}
		}
		return out, nil
	}
	t.Metrics = []evalsuite.MetricSpec{
		{Name: "relaxed_overall", Aggregation: "mean", HigherIsBetter: true},
		{Name: "relaxed_human_split", Aggregation: "mean", HigherIsBetter: true},
		{Name: "relaxed_augmented_split", Aggregation: "mean", HigherIsBetter: true},
	}
	t.Config["test_split"] = "test"
	t.Config["doc_to_target"] = "answer"
	t.Config["metric_list"] = []map[string]any{{"metric": "relaxed_overall"}, {"metric": "relaxed_human_split"}, {"metric": "relaxed_augmented_split"}}
	return t, nil
}

func buildDocVQAVal(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	t := vqaTask("docvqa_val", "\nAnswer the question using a single word or phrase.", 32, docs)
	t.DocToTarget = func(d evalsuite.Doc) (string, error) {
		a, err := d.Strings("answers")
		return strings.Join(a, " | "), err
	}
	t.Process = func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
		refs, err := d.Strings("answers")
		if err != nil {
			return nil, err
		}
		return evalsuite.Scores{"anls": {metric.ANLS(resp, refs)}}, nil
	}
	t.Metrics = []evalsuite.MetricSpec{{Name: "anls", Aggregation: "mean", HigherIsBetter: true}}
	t.Config["test_split"] = "validation"
	t.Config["doc_to_target"] = "answers"
	t.Config["metric_list"] = []map[string]any{{"metric": "anls", "aggregation": "mean", "higher_is_better": true}}
	return t, nil
}
