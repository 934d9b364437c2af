package tasks

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/frames"
	"github.com/ttis-dev/ttis/units/catalog"
)

// The video eval (video_eval_tests.py, video_generation_eval_test.py):
// five COCO captions, a video each, the CLIP score of every 8th frame.

const (
	videoPrompts     = 5  // num_prompts
	videoSteps       = 40 // num_inference_steps unless the accuracy reference gives one
	videoFrameSample = 8  // frame_sample_rate
	i2vNegative      = "blurry, low quality, distorted"
	i2vSeed          = 42
)

var i2vImageAsset = Asset{Role: "i2v_image", File: "imagenet_002_volcano.jpg",
	SHA256: "07d0a7b1fd8b207036426b6032394e0f7990d28e5b34eea13426b6e88d99d90c", Size: 28859,
	URL:  "https://github.com/tenstorrent/tt-inference-server/raw/" + refCommit + "/test_fixtures/datasets/imagenet_subset/imagenet_002_volcano.jpg",
	What: "the image the reference starts image-to-video models from (video_generation_routing.py FIXTURE_IMAGE_PATH)"}

// fvdNotMeasured is what of the video eval ttis does not reproduce.
const fvdNotMeasured = "FVD and FVMD: the reference computes them over the first two 'Sports' videos it streams from HuggingFaceFV/finevideo " +
	"with its own frame-level approximations (Inception-v3 features averaged over 16 frames instead of FVD's I3D network; a hand-written " +
	"optical-flow statistic for FVMD), reports them ungraded, and ttis has neither the I3D network true FVD needs nor a port of those approximations"

var videoVariants = []Variant{
	{Name: "text-to-video", Models: []string{"mochi-1-preview", "Wan2.2-T2V-A14B-Diffusers"},
		Description: "the first 5 MLCommons COCO captions, a video each through /v1/videos/generations (steps from model_accuracy_reference.json: 50 Mochi, 40 Wan2.2), the CLIP score (ViT-B/32) of every 8th frame, averaged per video; PASS when the videos' mean lies in the reference's CLIP range and every video was generated",
		Assets:      []Asset{captionsAsset}, Weights: []string{clipWeights}, NotMeasured: fvdNotMeasured},
	{Name: "image-to-video", Models: []string{"Wan2.2-I2V-A14B-Diffusers"},
		Description: "as text-to-video through /v1/videos/generations/i2v, each video starting from the reference's fixture image (negative prompt, seed 42)",
		Assets:      []Asset{captionsAsset, i2vImageAsset}, Weights: []string{clipWeights}, NotMeasured: fvdNotMeasured},
}

func buildLoadVideo(src Source) (*evalsuite.Task, error) {
	v, _, err := VariantOf("load_video", src.Model)
	if err != nil {
		return nil, err
	}
	i2v := v.Name == "image-to-video"
	captions, fixtureAsset := src.asset(captionsAsset), src.asset(i2vImageAsset)
	capt, _, err := readAsset(captions, src.Dataset)
	if err != nil {
		return nil, err
	}
	docs, err := readCaptions(capt, captions.File)
	if err != nil {
		return nil, err
	}
	if len(docs) > videoPrompts {
		docs = docs[:videoPrompts]
	}
	var fixture string
	if i2v {
		b, _, err := readAsset(fixtureAsset, src.Dataset)
		if err != nil {
			return nil, err
		}
		fixture = base64.StdEncoding.EncodeToString(b)
	}
	if err := needVision(src); err != nil {
		return nil, err
	}
	clip, clipID, err := src.Vision.CLIP()
	if err != nil {
		return nil, err
	}
	steps := videoSteps
	if m, ok := catalog.MediaAccuracyFor(src.Model); ok && m.Steps > 0 {
		steps = m.Steps
	}
	route := "/v1/videos/generations"
	if i2v {
		route += "/i2v"
	}
	fields := func(p string) map[string]any {
		// build_video_generation_payload.
		f := map[string]any{"prompt": p, "num_inference_steps": steps}
		if i2v {
			f["negative_prompt"], f["seed"] = i2vNegative, i2vSeed
			f["image_prompts"] = []map[string]any{{"image": fixture, "frame_pos": 0}}
		}
		return f
	}
	caption := func(d evalsuite.Doc) (string, error) { return d.Str("caption") }
	perVideo := func(name string, fn func([]float64) float64) evalsuite.MetricSpec {
		return evalsuite.MetricSpec{Name: name, Aggregation: name[len("clip_score_"):], Corpus: func(perDoc [][]float64) float64 {
			var xs []float64
			for _, d := range perDoc {
				xs = append(xs, d...)
			}
			if len(xs) == 0 {
				return math.NaN()
			}
			return fn(xs)
		}}
	}
	return &evalsuite.Task{
		Name: "load_video", Version: v.Name, Output: evalsuite.Media, Docs: docs,
		DocToTarget: caption,
		MediaRequests: func(d evalsuite.Doc) ([]evalsuite.Instance, error) {
			p, err := caption(d)
			if err != nil {
				return nil, err
			}
			return []evalsuite.Instance{{Kind: evalsuite.KindVideo, Context: p, Media: evalsuite.NewMediaArgs(route, fields(p), nil), Measurement: clipID}}, nil
		},
		Measure: func(ctx context.Context, inst evalsuite.Instance, r *evalsuite.Response) error {
			fr, total, err := frames.Sample(ctx, r.Media, videoFrameSample)
			if err != nil {
				return err
			}
			if len(fr) == 0 {
				return fmt.Errorf("the video has no frame (%d in all)", total)
			}
			ie, err := clip.EncodeImages(ctx, fr)
			if err != nil {
				return fmt.Errorf("CLIP frame embeddings: %w", err)
			}
			te, err := clip.EncodeTexts(ctx, []string{inst.Context})
			if err != nil {
				return fmt.Errorf("CLIP text embedding: %w", err)
			}
			r.Embeddings = [][]float64{f64(te[0])}
			for _, e := range ie {
				r.Embeddings = append(r.Embeddings, f64(e))
			}
			r.Text += fmt.Sprintf(", %d frames, %d scored", total, len(fr))
			return nil
		},
		ProcessMedia: func(d evalsuite.Doc, resps []evalsuite.Response) (evalsuite.Scores, error) {
			if len(resps) != 1 || len(resps[0].Embeddings) < 2 {
				return nil, fmt.Errorf("%s: want one measured video", d.Source)
			}
			e := resps[0].Embeddings
			var sum float64
			for _, f := range e[1:] {
				s, err := clipScore(f, e[0])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", d.Source, err)
				}
				sum += s
			}
			mean := sum / float64(len(e)-1)
			return evalsuite.Scores{"clip_score": {mean}, "clip_score_stdev": {mean}, "clip_score_min": {mean}, "clip_score_max": {mean}}, nil
		},
		// A video that was not generated scores nothing; the grade needs
		// every video (MIN_GENERATION_SUCCESS_RATIO 1.0).
		ErroredScores: func(evalsuite.Doc) (evalsuite.Scores, error) { return evalsuite.Scores{}, nil },
		Metrics: append(clipMetrics(),
			perVideo("clip_score_min", slices.Min[[]float64]),
			perVideo("clip_score_max", slices.Max[[]float64])),
		Config: map[string]any{
			"task": "load_video", "variant": v.Name, "grading": GradeVideoRange, "model": src.Model,
			"prompts":           captions.File + " (" + captions.id() + "), the first 5 captions",
			"request":           map[string]any{"route": route, "num_inference_steps": steps, "i2v_image": map[bool]string{true: fixtureAsset.File + " (" + fixtureAsset.id() + ")"}[i2v]},
			"frame_sample_rate": videoFrameSample,
			"clip_weights":      clipID,
			"not_measured":      fvdNotMeasured,
			"follows":           "tt-inference-server video_generation_eval_test.py VideoGenerationEvalsTest (_extract_video_frames, _calculate_video_clip_scores, _check_accuracy)",
		},
	}, nil
}
