package tasks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"math"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/fid"
	"github.com/ttis-dev/ttis/evalsuite/metric"
	"github.com/ttis-dev/ttis/runtime/cpu/vision"
	"github.com/ttis-dev/ttis/units/catalog"
)

// The image and video evals of tt-inference-server 11ac526e0
// (test_module/eval_tests/image_eval_tests.py, image_generation_eval_test.py,
// cnn_eval_tests.py, vision_evals_test.py, video_eval_tests.py,
// video_generation_eval_test.py, utils/sdxl_accuracy_utils/). The catalog
// names them load_image and load_video; the reference dispatches on the
// media server's runner, ttis on the catalog model (the same thing).

// refCommit is the tt-inference-server commit the assets are read at.
const refCommit = "11ac526e008e3888e15fe3ec884973a26c8ca5bb"

// The files the reference reads from outside the Hugging Face Hub.
var (
	captionsAsset = Asset{Role: "prompts", File: "captions_source.tsv",
		SHA256: "2eeb95637b30fe5af26dd644bafa7affe4e5472ad0bda32d0feb1bd261280d5e", Size: 862324,
		URL:  "https://github.com/mlcommons/inference/raw/4b1d1156c23965172ae56eacdd8372f8897eb771/text_to_image/coco2014/captions/captions_source.tsv",
		What: "MLCommons' 5000 COCO 2014 captions, the prompts (sdxl_accuracy_utils.py COCO_CAPTIONS_DOWNLOAD_PATH)"}
	statsAsset = Asset{Role: "fid_statistics", File: "val2014.npz",
		GitBlob: "806479d0693a33110526b6689aa26baddd995c7b",
		URL:     "https://github.com/mlcommons/inference/raw/4b1d1156c23965172ae56eacdd8372f8897eb771/text_to_image/tools/val2014.npz",
		What:    "MLCommons' Inception statistics (mu, sigma) of COCO val2014, FID's reference (fid_score.py COCO_STATISTICS_DOWNLOAD_PATH)"}
	inceptionAsset = Asset{Role: "inception", File: vision.InceptionFile, SHA256: vision.InceptionSHA256, URL: vision.InceptionURL,
		What: "pytorch-fid's FID Inception weights (inception.py FID_WEIGHTS_URL)"}
	img2imgAsset = Asset{Role: "source_image", File: "image_client_img2img_payload",
		SHA256: "306e2d8b1ef6052d4c85c04a936b440c352543bd16b70b2ba8f3f6e08ddb21a8", Size: 1399343,
		URL:  "https://github.com/tenstorrent/tt-inference-server/raw/" + refCommit + "/utils/test_payloads/image_client_img2img_payload",
		What: "the reference's image-to-image source image, JSON {\"file\": base64 PNG}"}
	inpaintAsset = Asset{Role: "source_image", File: "image_client_inpainting_payload",
		SHA256: "c876e3d873a28cb4db6a06943fbc8512ff141e37a7a6d8fb1b3acbb089c42ea4", Size: 452538,
		URL:  "https://github.com/tenstorrent/tt-inference-server/raw/" + refCommit + "/utils/test_payloads/image_client_inpainting_payload",
		What: "the reference's inpainting image and mask, JSON {\"inpaint_image\", \"inpaint_mask\"} (base64 PNG)"}
)

// clipWeights names the CLIP checkpoint for listings.
var clipWeights = "CLIP ViT-B/32 " + vision.CLIPRepoID + "@" + vision.CLIPRevision + " (Hugging Face Hub)"

// The reference's request settings.
const (
	imageNegativePrompt = "normal quality, low quality, worst quality, low res, blurry, nsfw, nude"
	imageGuidance       = 8.0
	// img2img and inpainting generate one image of a fixed prompt.
	img2imgPrompt  = "cat wizard, gandalf, lord of the rings, detailed, fantasy, cute, adorable, Pixar, Disney, 8k"
	inpaintPrompt  = "concept art digital painting of an elven castle, inspired by lord of the rings, highly detailed, 8k"
	imagePromptsBy = 100 // SDXL_DEFAULT_NUM_PROMPTS
)

var textToImageModels = []string{"stable-diffusion-xl-base-1.0", "stable-diffusion-3.5-large", "FLUX.1-dev", "FLUX.1-schnell", "Motif-Image-6B-Preview", "Z-Image-Turbo"}

var imageVariants = []Variant{
	{Name: "text-to-image", Models: textToImageModels,
		Description: "the first 100 MLCommons COCO captions (5000 with --task-limit load_image=5000) through /v1/images/generations (negative prompt, seed 0, guidance 8, PNG, steps 20 for SDXL and SD3.5, 4 FLUX.1-schnell, 9 Z-Image-Turbo, 28 the others); FID of the images' Inception features against MLCommons' COCO val2014 statistics and mean CLIP score (ViT-B/32, 100 × cosine), PASS when both lie in model_accuracy_reference.json's ranges for 100 or 5000 prompts",
		Assets:      []Asset{captionsAsset, statsAsset, inceptionAsset}, Weights: []string{clipWeights, "FID Inception " + vision.InceptionFile + " (operator-supplied)"}},
	{Name: "image-to-image", Models: []string{"stable-diffusion-xl-base-1.0-img-2-img"},
		Description: "one image of the reference's fixed prompt from its source image through /v1/images/image-to-image (seed 0, guidance 7.5, strength 0.6, 30 steps); its CLIP score, reported: the reference grades it NA (one image has no FID, and its ranges are for 100 or 5000 prompts)",
		Assets:      []Asset{img2imgAsset}, Weights: []string{clipWeights}},
	{Name: "inpainting", Models: []string{"stable-diffusion-xl-1.0-inpainting-0.1"},
		Description: "one image of the reference's fixed prompt from its image and mask through /v1/images/edits (seed 0, guidance 8, strength 0.99, 20 steps); its CLIP score, reported: the reference grades it NA (one image has no FID, and its ranges are for 100 or 5000 prompts)",
		Assets:      []Asset{inpaintAsset}, Weights: []string{clipWeights}},
	{Name: "classifier", Models: []string{"resnet-50", "vovnet", "mobilenetv2", "efficientnet", "segformer", "unet", "vit"},
		Description: "top-1 on the first 20 ImageNet-1k validation images (ILSVRC/imagenet-1k, gated) through /v1/cnn/search-image, the label compared with the class name after VisionEvalsTest's normalisation; MobileNetV2 graded against its published 72% within the tolerance, the others reported beside their published figure (the reference only times them)",
		Data:        imagenetData},
	{Name: "detector", Models: []string{"yolox_nano"},
		Description: "COCO box mAP@[.5:.95] (pycocotools' COCOeval, ported) of the detector's boxes (top_k 300, min_confidence 1) on the first 100 images of detection-datasets/coco val, graded against the published 25.8 within the tolerance",
		Data:        cocoData},
}

// imageSteps is the reference's num_inference_steps for a text-to-image
// runner (image_eval_tests.py _run_image_generation_eval_test).
func imageSteps(runner string) int {
	switch runner {
	case "tt-flux.1-schnell":
		return 4
	case "tt-sdxl-trace", "tt-sd3.5":
		return 20
	case "tt-z-image-turbo":
		return 9
	}
	return 28
}

// runnerOf is the media server's runner for a catalog model.
func runnerOf(model string) string {
	specs, err := catalog.ModelSpecs(model)
	if err != nil || len(specs) == 0 {
		return ""
	}
	r, _ := catalog.MediaRunner(&specs[0])
	return r
}

func buildLoadImage(src Source) (*evalsuite.Task, error) {
	v, _, err := VariantOf("load_image", src.Model)
	if err != nil {
		return nil, err
	}
	switch v.Name {
	case "text-to-image":
		return buildTextToImage(src)
	case "image-to-image":
		return buildEditImage(src, false)
	case "inpainting":
		return buildEditImage(src, true)
	case "classifier":
		return buildClassifier(src)
	}
	return buildDetector(src)
}

// readCaptions reads MLCommons' captions_source.tsv as sdxl_get_prompts
// does: csv.reader with tab delimiters (double-quoted fields unquoted),
// the header skipped, the caption in the third column.
func readCaptions(b []byte, file string) ([]evalsuite.Doc, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.Comma = '\t'
	r.FieldsPerRecord = -1
	var docs []evalsuite.Doc
	for i := 0; ; i++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A csv.ParseError names the line and column.
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		line, _ := r.FieldPos(0)
		if i == 0 {
			continue
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s:%d: %d columns, want id, image_id, caption, …", file, line, len(rec))
		}
		docs = append(docs, evalsuite.Doc{ID: len(docs), Source: fmt.Sprintf("%s:%d", file, line),
			Fields: map[string]any{"id": rec[0], "image_id": rec[1], "caption": rec[2]}})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s holds no caption", file)
	}
	return docs, nil
}

// decodeImage decodes a generated image as PIL's Image.open does (PNG or
// JPEG), refusing sizes no generator produces.
func decodeImage(b []byte) (image.Image, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the image does not decode: %w", err)
	}
	if cfg.Width*cfg.Height > 8192*8192 {
		return nil, fmt.Errorf("the %s image is %dx%d, larger than 8192x8192", format, cfg.Width, cfg.Height)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the %s image does not decode: %w", format, err)
	}
	return img, nil
}

// measureImage is the Measure of the image tasks: the CLIP embeddings of
// the image and of its prompt, and, with inc, the image's FID features.
func measureImage(clip ImageTextEncoder, inc FeatureExtractor) func(context.Context, evalsuite.Instance, *evalsuite.Response) error {
	return func(ctx context.Context, inst evalsuite.Instance, r *evalsuite.Response) error {
		img, err := decodeImage(r.Media)
		if err != nil {
			return err
		}
		ie, err := clip.EncodeImages(ctx, []image.Image{img})
		if err != nil {
			return fmt.Errorf("CLIP image embedding: %w", err)
		}
		te, err := clip.EncodeTexts(ctx, []string{inst.Context})
		if err != nil {
			return fmt.Errorf("CLIP text embedding: %w", err)
		}
		r.Embeddings = [][]float64{f64(ie[0]), f64(te[0])}
		if inc != nil {
			feats, err := inc.Features(ctx, []image.Image{img})
			if err != nil {
				return fmt.Errorf("FID Inception features: %w", err)
			}
			r.Embeddings = append(r.Embeddings, f64(feats[0]))
		}
		return nil
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// clipScore is tt-inference-server's CLIP score of one pair: 100 × the
// cosine of the image and text embeddings (clip_encoder.py get_clip_score
// ×100 in calculate_metrics), not floored at 0.
func clipScore(img, txt []float64) (float64, error) {
	c := metric.Cosine(img, txt)
	if math.IsNaN(c) {
		return 0, fmt.Errorf("embeddings of lengths %d and %d (or all zeros) have no cosine", len(img), len(txt))
	}
	return 100 * c, nil
}

// clipMetrics are the CLIP score's mean and sample standard deviation
// (statistics.stdev, as the reference reports its spread).
func clipMetrics() []evalsuite.MetricSpec {
	return []evalsuite.MetricSpec{
		{Name: "clip_score", Aggregation: "mean", HigherIsBetter: true},
		{Name: "clip_score_stdev", Aggregation: "stdev", HigherIsBetter: false, Corpus: corpusStdev},
	}
}

func corpusStdev(perDoc [][]float64) float64 {
	var xs []float64
	for _, d := range perDoc {
		xs = append(xs, d...)
	}
	if len(xs) < 2 {
		return 0 // statistics.stdev of one value is undefined; the reference reports 0.0
	}
	m := metric.Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// fidCorpus is FID over the documents' features against ref; NaN when it
// cannot be computed (fewer than two images), which leaves it unreported.
func fidCorpus(ref *fid.Stats) func([][]float64) float64 {
	return func(perDoc [][]float64) float64 {
		feats := make([][]float32, len(perDoc))
		for i, d := range perDoc {
			feats[i] = make([]float32, len(d))
			for j, x := range d {
				feats[i][j] = float32(x)
			}
		}
		v, err := fid.Distance(ref, feats)
		if err != nil {
			return math.NaN()
		}
		return v
	}
}

func needVision(src Source) error {
	if src.Vision == nil {
		return errors.New("it scores images with CLIP (and FID's Inception), which this caller does not provide")
	}
	return nil
}

func buildTextToImage(src Source) (*evalsuite.Task, error) {
	dir := src.Dataset
	captions, stats, incAsset := src.asset(captionsAsset), src.asset(statsAsset), src.asset(inceptionAsset)
	capt, _, err := readAsset(captions, dir)
	if err != nil {
		return nil, err
	}
	docs, err := readCaptions(capt, captions.File)
	if err != nil {
		return nil, err
	}
	npz, _, err := readAsset(stats, dir)
	if err != nil {
		return nil, err
	}
	ref, err := fid.LoadStats(npz)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stats.File, err)
	}
	incPath, err := incAsset.Locate(dir)
	if err != nil {
		return nil, err
	}
	if err := needVision(src); err != nil {
		return nil, err
	}
	clip, clipID, err := src.Vision.CLIP()
	if err != nil {
		return nil, err
	}
	inc, err := src.Vision.Inception(incPath)
	if err != nil {
		return nil, err
	}
	runner := runnerOf(src.Model)
	steps := imageSteps(runner)
	fields := func(prompt string) map[string]any {
		// ImageGenerationEvalsTest._build_payload.
		return map[string]any{"prompt": prompt, "negative_prompt": imageNegativePrompt, "num_inference_steps": steps,
			"seed": 0, "guidance_scale": imageGuidance, "image_return_format": "PNG", "image_quality": 100, "number_of_images": 1}
	}
	caption := func(d evalsuite.Doc) (string, error) { return d.Str("caption") }
	return &evalsuite.Task{
		Name: "load_image", Version: "text-to-image", Output: evalsuite.Media, Docs: docs,
		DocToTarget: caption,
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			p, err := caption(d)
			if err != nil {
				return nil, err
			}
			return []evalsuite.Instance{{Kind: evalsuite.KindImage, Context: p, Media: evalsuite.NewMediaArgs("/v1/images/generations", fields(p), nil),
				Measurement: clipID + " " + incAsset.id()}}, nil
		},
		Measure: measureImage(clip, inc),
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			if len(resps) != 1 || len(resps[0].Embeddings) != 3 {
				return nil, fmt.Errorf("%s: want one measured image (CLIP image, CLIP text, Inception)", d.Source)
			}
			e := resps[0].Embeddings
			s, err := clipScore(e[0], e[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", d.Source, err)
			}
			return evalsuite.Scores{"clip_score": {s}, "clip_score_stdev": {s}, "fid": e[2]}, nil
		},
		// A failed image scores nothing: the reference computes no metric
		// when any image failed, and the grade requires every prompt.
		ErroredScores: func(evalsuite.Doc) (evalsuite.Scores, error) { return evalsuite.Scores{}, nil },
		Metrics:       append(clipMetrics(), evalsuite.MetricSpec{Name: "fid", Aggregation: "frechet_distance", HigherIsBetter: false, Vector: true, Corpus: fidCorpus(ref)}),
		Config: map[string]any{
			"task": "load_image", "variant": "text-to-image", "grading": GradeImageRanges, "model": src.Model, "runner": runner,
			"prompts": captions.File + " (" + captions.id() + "), column caption, in order",
			"request": map[string]any{"route": "/v1/images/generations", "negative_prompt": imageNegativePrompt, "num_inference_steps": steps,
				"seed": 0, "guidance_scale": imageGuidance, "image_return_format": "PNG", "image_quality": 100, "number_of_images": 1},
			"fid_statistics":  stats.File + " (" + stats.id() + ")",
			"clip_weights":    clipID,
			"fid_inception":   incAsset.File + " (" + incAsset.id() + ")",
			"default_prompts": imagePromptsBy,
			"follows":         "tt-inference-server image_generation_eval_test.py ImageGenerationEvalsTest, sdxl_accuracy_utils.py calculate_metrics and calculate_accuracy_check",
		},
	}, nil
}

// editPayload reads the reference's img2img or inpainting payload: the
// source image (and mask) as base64 PNG text.
func editPayload(b []byte, inpaint bool, file string) (map[string][]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	keys := map[string]string{"image": "file"}
	if inpaint {
		keys = map[string]string{"image": "inpaint_image", "mask": "inpaint_mask"}
	}
	out := map[string][]byte{}
	for field, key := range keys {
		s, ok := p[key].(string)
		if !ok {
			return nil, fmt.Errorf("%s: no %q text", file, key)
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not base64: %w", file, key, err)
		}
		out[field] = raw
	}
	return out, nil
}

func buildEditImage(src Source, inpaint bool) (*evalsuite.Task, error) {
	asset, prompt, route, variant := img2imgAsset, img2imgPrompt, "/v1/images/image-to-image", "image-to-image"
	fields := map[string]any{"prompt": img2imgPrompt, "seed": 0, "guidance_scale": 7.5, "number_of_images": 1, "strength": 0.6, "num_inference_steps": 30}
	if inpaint {
		asset, prompt, route, variant = inpaintAsset, inpaintPrompt, "/v1/images/edits", "inpainting"
		fields = map[string]any{"prompt": inpaintPrompt, "seed": 0, "guidance_scale": 8.0, "number_of_images": 1, "strength": 0.99, "num_inference_steps": 20}
	}
	asset = src.asset(asset)
	b, _, err := readAsset(asset, src.Dataset)
	if err != nil {
		return nil, err
	}
	images, err := editPayload(b, inpaint, asset.File)
	if err != nil {
		return nil, err
	}
	if err := needVision(src); err != nil {
		return nil, err
	}
	clip, clipID, err := src.Vision.CLIP()
	if err != nil {
		return nil, err
	}
	docs := []evalsuite.Doc{{ID: 0, Source: variant + " prompt", Fields: map[string]any{"caption": prompt}}}
	return &evalsuite.Task{
		Name: "load_image", Version: variant, Output: evalsuite.Media, Docs: docs,
		DocToTarget: func(d evalsuite.Doc) (string, error) { return d.Str("caption") },
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			return []evalsuite.Instance{{Kind: evalsuite.KindImage, Context: prompt, Media: evalsuite.NewMediaArgs(route, fields, images), Measurement: clipID}}, nil
		},
		Measure: measureImage(clip, nil),
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			if len(resps) != 1 || len(resps[0].Embeddings) != 2 {
				return nil, fmt.Errorf("%s: want one measured image", d.Source)
			}
			s, err := clipScore(resps[0].Embeddings[0], resps[0].Embeddings[1])
			if err != nil {
				return nil, err
			}
			return evalsuite.Scores{"clip_score": {s}, "clip_score_stdev": {s}}, nil
		},
		ErroredScores: func(evalsuite.Doc) (evalsuite.Scores, error) { return evalsuite.Scores{}, nil },
		Metrics:       clipMetrics(),
		Config: map[string]any{
			"task": "load_image", "variant": variant, "grading": GradeCLIPReported, "model": src.Model,
			"request":      map[string]any{"route": route, "fields": fields, "images": asset.File + " (" + asset.id() + ")"},
			"clip_weights": clipID,
			"follows":      "tt-inference-server image_eval_tests.py _run_img2img_generation_eval / _run_inpainting_generation_eval and calculate_metrics (FID needs two images; num_prompts 1 grades NA)",
		},
	}, nil
}

// The grading rules of the media tasks (Task.Config["grading"]), which
// evalsuite/results applies.
const (
	// GradeImageRanges: FID and mean CLIP score inside the reference's
	// ranges for the prompt count (100 or 5000).
	GradeImageRanges = "image_ranges"
	// GradeCLIPReported: a CLIP score reported, not graded.
	GradeCLIPReported = "clip_reported"
	// GradeTop1Published: top-1 against the published figure.
	GradeTop1Published = "top1_published"
	// GradeTop1Reported: top-1 reported beside the published figure.
	GradeTop1Reported = "top1_reported"
	// GradeMAPPublished: COCO mAP against the published figure.
	GradeMAPPublished = "map_published"
	// GradeVideoRange: mean CLIP score of the videos inside the
	// reference's range, every video generated.
	GradeVideoRange = "video_range"
)
