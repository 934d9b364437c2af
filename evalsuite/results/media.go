package results

import (
	"fmt"
	"math"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// MediaFigures are what an image or video task measured, with the
// conditions the numbers hold under (the weights they were computed
// with, the prompts and the reference files).
type MediaFigures struct {
	Variant string `json:"variant"`
	// Asked is the number of prompts (images, videos) the task asked for;
	// Measured how many were generated and measured.
	Asked    int `json:"asked"`
	Measured int `json:"measured"`
	// FID, and the mean, sample standard deviation, minimum and maximum
	// of the CLIP scores (per image; per video, of its frames' mean).
	FID       *float64 `json:"fid,omitempty"`
	CLIP      *float64 `json:"clip_score,omitempty"`
	CLIPStdev *float64 `json:"clip_score_stdev,omitempty"`
	CLIPMin   *float64 `json:"clip_score_min,omitempty"`
	CLIPMax   *float64 `json:"clip_score_max,omitempty"`
	// FIDRange and CLIPRange are the reference's valid ranges for this
	// prompt count (model_accuracy_reference.json).
	FIDRange  *[2]float64 `json:"fid_range,omitempty"`
	CLIPRange *[2]float64 `json:"clip_range,omitempty"`
	// Top1 (classifiers) and MAP (the detector) in percent.
	Top1 *float64 `json:"top1,omitempty"`
	MAP  *float64 `json:"map,omitempty"`
	// Conditions name the weights, prompts, reference files and request
	// settings the figures were measured with.
	Conditions map[string]any `json:"conditions,omitempty"`
	// NotMeasured says what of the reference's measurements ttis does
	// not reproduce.
	NotMeasured string `json:"not_measured,omitempty"`
}

func aggregate(aggs []evalsuite.Aggregate, name string) (float64, int, bool) {
	for _, a := range aggs {
		if a.Metric == name && !math.IsNaN(a.Value) {
			return a.Value, a.N, true
		}
	}
	return 0, 0, false
}

func ptr(v float64) *float64 { return &v }

// conditionKeys are the task configuration entries a report shows as the
// figures' conditions.
var conditionKeys = []string{"clip_weights", "fid_inception", "fid_statistics", "prompts", "request", "dataset_path", "test_split", "images", "frame_sample_rate", "runner"}

// GradeMedia grades an image or video task by its rule (the task's
// Config["grading"], one of the tasks.Grade* rules), as
// tt-inference-server's media evals do: text-to-image by FID and CLIP
// score inside the reference's ranges for 100 or 5000 prompts, video by
// the CLIP range with every video generated, MobileNetV2 and YOLOX-nano
// against their published figures, the rest reported.
func GradeMedia(task, rule string, res *runner.Result, ref *catalog.EvalRef) Grade {
	g := Grade{Task: task, Check: verdict.NA, Tolerance: 0.05}
	model, _ := res.Task.Config["model"].(string)
	if ref != nil {
		g.Tolerance, g.Published, g.GPUReference = ref.Tolerance, ref.Published, ref.GPUReference
		model = ref.Model
	}
	variant, _ := res.Task.Config["variant"].(string)
	m := &MediaFigures{Variant: variant, Asked: res.NEffective, Measured: res.NEffective - res.Errors.Errored, Conditions: map[string]any{}}
	for _, k := range conditionKeys {
		if v, ok := res.Task.Config[k]; ok {
			m.Conditions[k] = v
		}
	}
	m.NotMeasured, _ = res.Task.Config["not_measured"].(string)
	g.Media = m
	aggs := res.Aggregates
	if v, _, ok := aggregate(aggs, "clip_score"); ok {
		m.CLIP, g.Score = ptr(v), ptr(v)
	}
	if v, _, ok := aggregate(aggs, "clip_score_stdev"); ok {
		m.CLIPStdev = ptr(v)
	}
	if v, _, ok := aggregate(aggs, "clip_score_min"); ok {
		m.CLIPMin = ptr(v)
	}
	if v, _, ok := aggregate(aggs, "clip_score_max"); ok {
		m.CLIPMax = ptr(v)
	}
	if v, _, ok := aggregate(aggs, "fid"); ok {
		m.FID = ptr(v)
	}
	if v, _, ok := aggregate(aggs, "top1"); ok {
		m.Top1, g.Score = ptr(100*v), ptr(100*v)
		g.ScoreKeys = []string{"top1,none"}
	}
	if v, _, ok := aggregate(aggs, "map"); ok {
		m.MAP, g.Score = ptr(100*v), ptr(100*v)
	}
	if g.Score != nil && g.Published != nil && *g.Published != 0 {
		g.RatioToPublished = ptr(*g.Score / *g.Published)
	}
	errored := res.Errors.Errored
	switch rule {
	case "image_ranges":
		acc, ok := catalog.MediaAccuracyFor(model)
		r, hasRange := acc.Range(m.Asked)
		switch {
		case errored > 0:
			g.Basis = fmt.Sprintf("not graded: %d of %d images failed, and the reference computes no metric then", errored, m.Asked)
		case !ok:
			g.Basis = "no accuracy reference for " + catalog.MediaAccuracyKey(model) + " in model_accuracy_reference.json"
		case m.Asked != 100 && m.Asked != 5000 || !hasRange:
			g.Basis = fmt.Sprintf("not graded: the reference grades 100 or 5000 prompts (ranges in model_accuracy_reference.json), and %d ran", m.Asked)
		case m.FID == nil || m.CLIP == nil:
			g.Basis = "not graded: FID or the CLIP score could not be computed"
		default:
			m.FIDRange, m.CLIPRange = r.FID, &r.CLIP
			fidOK := r.FID != nil && *m.FID >= r.FID[0] && *m.FID <= r.FID[1]
			clipOK := *m.CLIP >= r.CLIP[0] && *m.CLIP <= r.CLIP[1]
			g.Basis = fmt.Sprintf("FID and CLIP score within %s's ranges for %d prompts", catalog.MediaAccuracyKey(model), m.Asked)
			g.Check = verdict.Fail
			if fidOK && clipOK {
				g.Check = verdict.Pass
			}
		}
	case "video_range":
		acc, ok := catalog.MediaAccuracyFor(model)
		r, hasRange := acc.Range(m.Asked)
		switch {
		case !ok || !hasRange:
			g.Basis = fmt.Sprintf("no CLIP range for %s with %d prompts in model_accuracy_reference.json (the reference reports a baseline)", model, m.Asked)
		case m.Measured < m.Asked || m.CLIP == nil:
			m.CLIPRange = &r.CLIP
			g.Check, g.Basis = verdict.Fail, fmt.Sprintf("only %d of %d videos were generated; the reference fails the eval unless every one is", m.Measured, m.Asked)
		default:
			m.CLIPRange = &r.CLIP
			g.Basis = fmt.Sprintf("mean CLIP score of the videos within %s's range for %d prompts", model, m.Asked)
			g.Check = verdict.Fail
			if *m.CLIP >= r.CLIP[0] && *m.CLIP <= r.CLIP[1] {
				g.Check = verdict.Pass
			}
		}
		if m.NotMeasured != "" {
			g.Basis += "; not measured: " + m.NotMeasured
		}
	case "clip_reported":
		g.Basis = "reported, not graded: the reference generates one image here (FID needs two, and its ranges are for 100 or 5000 prompts) and grades NA"
	case "top1_reported":
		g.Basis = "reported beside the published figure, not graded: the reference only times this model (accuracy NA)"
	case "top1_published", "map_published":
		what := "top-1"
		if rule == "map_published" {
			what = "COCO mAP"
		}
		switch {
		case g.Published == nil || *g.Published == 0:
			g.Basis = "no published " + what + " to grade against"
		case g.Score == nil:
			// cnn_eval_tests.py: nothing scorable (no boxes, no objects)
			// is a FAIL, so that a serving regression cannot pass.
			g.Check, g.Basis = verdict.Fail, "no "+what+" could be computed (no boxes or no objects to score), which the reference fails"
		default:
			g.Basis = fmt.Sprintf("%s against the published %.4g", what, *g.Published)
			if rule == "top1_published" {
				g.Basis += " (the reference's own check, device top-1 within 5% of a CPU pass, sends both passes to the unit in CI: ttis grades the published figure instead)"
			}
			g.Check = verdict.Fail
			if *g.RatioToPublished >= 1-g.Tolerance-1e-12 {
				g.Check = verdict.Pass
			}
		}
	default:
		g.Basis = "unknown media grading rule " + rule
	}
	return g
}
