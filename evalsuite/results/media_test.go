package results

import (
	"math"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

func mediaResult(model, variant string, n, errored int, aggs map[string]float64) *runner.Result {
	r := &runner.Result{Task: &evalsuite.Task{Config: map[string]any{"model": model, "variant": variant, "clip_weights": "openai/clip-vit-base-patch32@abc"}},
		NEffective: n, Errors: runner.ErrorSummary{Errored: errored}}
	for k, v := range aggs {
		r.Aggregates = append(r.Aggregates, evalsuite.Aggregate{Metric: k, Filter: "none", Value: v, N: n - errored})
	}
	return r
}

func ref(t *testing.T, model, task string) *catalog.EvalRef {
	t.Helper()
	r, ok := catalog.EvalRefFor(model, task)
	if !ok {
		t.Fatalf("no reference for %s %s", model, task)
	}
	return &r
}

// TestGradeMedia applies each rule as tt-inference-server does.
func TestGradeMedia(t *testing.T) {
	sdxl := ref(t, "stable-diffusion-xl-base-1.0", "load_image")
	for _, tc := range []struct {
		name       string
		n, errored int
		aggs       map[string]float64
		want       verdict.Verdict
		basis      string
	}{
		{"inside both ranges", 100, 0, map[string]float64{"fid": 185, "clip_score": 31.9, "clip_score_stdev": 2.5}, verdict.Pass, "ranges for 100 prompts"},
		{"FID outside", 100, 0, map[string]float64{"fid": 200, "clip_score": 31.9}, verdict.Fail, "ranges"},
		{"CLIP outside", 100, 0, map[string]float64{"fid": 185, "clip_score": 12}, verdict.Fail, "ranges"},
		{"5000 prompts", 5000, 0, map[string]float64{"fid": 23.5, "clip_score": 31.7}, verdict.Pass, "5000 prompts"},
		{"another count", 3, 0, map[string]float64{"fid": 400, "clip_score": 20}, verdict.NA, "and 3 ran"},
		{"failed images", 100, 2, map[string]float64{"fid": 185, "clip_score": 31.9}, verdict.NA, "2 of 100 images failed"},
	} {
		g := GradeMedia("load_image", "image_ranges", mediaResult("stable-diffusion-xl-base-1.0", "text-to-image", tc.n, tc.errored, tc.aggs), sdxl)
		if g.Check != tc.want || !strings.Contains(g.Basis, tc.basis) || g.Media == nil {
			t.Errorf("%s: %s (%s)", tc.name, g.Check, g.Basis)
			continue
		}
		if tc.want != verdict.NA && (g.Media.FIDRange == nil || g.Media.CLIPRange == nil || *g.Score != tc.aggs["clip_score"]) {
			t.Errorf("%s: figures %+v", tc.name, g.Media)
		}
		if g.Media.Conditions["clip_weights"] != "openai/clip-vit-base-patch32@abc" {
			t.Errorf("%s: conditions %v", tc.name, g.Media.Conditions)
		}
	}
	// Z-Image-Turbo is looked up at 512x512.
	z := GradeMedia("load_image", "image_ranges", mediaResult("Z-Image-Turbo", "text-to-image", 100, 0, map[string]float64{"fid": 180, "clip_score": 31}), ref(t, "Z-Image-Turbo", "load_image"))
	if z.Check != verdict.Pass || !strings.Contains(z.Basis, "Z-Image-Turbo-512x512") {
		t.Errorf("Z-Image-Turbo: %s %s", z.Check, z.Basis)
	}
	mochi := ref(t, "mochi-1-preview", "load_video")
	v := GradeMedia("load_video", "video_range", mediaResult("mochi-1-preview", "text-to-video", 5, 0, map[string]float64{"clip_score": 28}), mochi)
	if v.Check != verdict.Pass {
		t.Errorf("video: %s %s", v.Check, v.Basis)
	}
	v = GradeMedia("load_video", "video_range", mediaResult("mochi-1-preview", "text-to-video", 5, 1, map[string]float64{"clip_score": 28}), mochi)
	if v.Check != verdict.Fail || !strings.Contains(v.Basis, "only 4 of 5 videos") {
		t.Errorf("a video missing: %s %s", v.Check, v.Basis)
	}
	mb := GradeMedia("load_image", "top1_published", mediaResult("mobilenetv2", "classifier", 20, 0, map[string]float64{"top1": 0.7}), ref(t, "mobilenetv2", "load_image"))
	if mb.Check != verdict.Pass || *mb.Score != 70 || math.Abs(*mb.RatioToPublished-70.0/72) > 1e-12 {
		t.Errorf("mobilenetv2 70%%: %s %v", mb.Check, *mb.Score)
	}
	mb = GradeMedia("load_image", "top1_published", mediaResult("mobilenetv2", "classifier", 20, 0, map[string]float64{"top1": 0.65}), ref(t, "mobilenetv2", "load_image"))
	if mb.Check != verdict.Fail {
		t.Errorf("mobilenetv2 65%%: %s", mb.Check)
	}
	rn := GradeMedia("load_image", "top1_reported", mediaResult("resnet-50", "classifier", 20, 0, map[string]float64{"top1": 0.8}), ref(t, "resnet-50", "load_image"))
	if rn.Check != verdict.NA || rn.RatioToPublished == nil || *rn.Media.Top1 != 80 {
		t.Errorf("resnet-50: %s %+v", rn.Check, rn)
	}
	yx := ref(t, "yolox_nano", "load_image")
	if g := GradeMedia("load_image", "map_published", mediaResult("yolox_nano", "detector", 100, 0, map[string]float64{"map": math.NaN()}), yx); g.Check != verdict.Fail || !strings.Contains(g.Basis, "no COCO mAP could be computed") {
		t.Errorf("no boxes: %s %s", g.Check, g.Basis)
	}
	if g := GradeMedia("load_image", "map_published", mediaResult("yolox_nano", "detector", 100, 0, map[string]float64{"map": 0.25}), yx); g.Check != verdict.Pass || *g.Score != 25 {
		t.Errorf("mAP 25: %s", g.Check)
	}
	if g := GradeMedia("load_image", "clip_reported", mediaResult("stable-diffusion-xl-base-1.0-img-2-img", "image-to-image", 1, 0, map[string]float64{"clip_score": 30}), nil); g.Check != verdict.NA || *g.Score != 30 {
		t.Errorf("img2img: %s", g.Check)
	}
}
