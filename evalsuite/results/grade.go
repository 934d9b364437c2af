package results

import (
	"math"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// Grade is one task's score against its catalog reference, in the shape
// of tt-inference-server's eval block.
type Grade struct {
	Task string `json:"task_name"`
	// ScoreKeys are the result keys the score was read from.
	ScoreKeys []string `json:"score_keys"`
	// Score is in percent.
	Score            *float64 `json:"score"`
	Published        *float64 `json:"published_score"`
	GPUReference     *float64 `json:"gpu_reference_score"`
	SubsetReference  *float64 `json:"subset_reference_score,omitempty"`
	Tolerance        float64  `json:"tolerance"`
	RatioToPublished *float64 `json:"ratio_to_published"`
	RatioToReference *float64 `json:"ratio_to_reference"`
	// Check is NA when no reference exists (or no score could be read).
	Check verdict.Verdict `json:"accuracy_check"`
	// Basis says which reference decided the check.
	Basis string `json:"basis"`
	// Media holds an image or video task's figures and their conditions.
	Media *MediaFigures `json:"media,omitempty"`
}

// GradeTask scores aggregates against ref (nil when the catalog has no
// reference for the model and task). The score follows the reference's
// score function: task_single_key reads the first key, task_keys_mean
// averages the keys; a missing key falls back to the first metric
// present, as tt-inference-server does. mode ("smoke_test", "ci_nightly"…,
// or "") selects a subset reference when the catalog gives one. Pass means
// score / reference ≥ 1 − tolerance, with the GPU reference first and the
// published score next.
func GradeTask(task string, aggs []evalsuite.Aggregate, ref *catalog.EvalRef, mode string) Grade {
	g := Grade{Task: task, Check: verdict.NA, Tolerance: 0.05}
	values := map[string]float64{}
	for _, a := range aggs {
		if !math.IsNaN(a.Value) {
			values[a.Key()] = a.Value
		}
	}
	var keys []string
	fn := "task_single_key"
	if ref != nil {
		g.Tolerance = ref.Tolerance
		g.Published, g.GPUReference = ref.Published, ref.GPUReference
		keys = ref.ScoreKeys
		fn = ref.ScoreFn
		if v, ok := ref.SubsetReference[mode]; ok && mode != "" {
			g.SubsetReference = &v
		}
	}
	var picked []string
	for _, k := range keys {
		if _, ok := values[k]; ok {
			picked = append(picked, k)
			if fn != "task_keys_mean" {
				break
			}
		}
	}
	if len(picked) == 0 {
		for _, a := range aggs {
			if !math.IsNaN(a.Value) {
				picked = []string{a.Key()}
				break
			}
		}
	}
	g.ScoreKeys = picked
	if len(picked) == 0 {
		g.Basis = "no score"
		return g
	}
	var sum float64
	for _, k := range picked {
		sum += values[k]
	}
	score := 100 * sum / float64(len(picked))
	if task == "tts_generation" && picked[0] == "intelligibility,none" {
		// tt-inference-server's TTS check is a threshold on the mean WER
		// (tts_eval_tests.py: PASS when avg WER <= 0.20), whatever the
		// catalog's number says.
		g.Score = &score
		g.Basis = "mean WER at most 20% (intelligibility at least 80), tt-inference-server's TTS quality bar"
		if score >= 80-1e-9 {
			g.Check = verdict.Pass
		} else {
			g.Check = verdict.Fail
		}
		return g
	}
	if ref != nil && ref.ScoreFn == "custom" {
		// tt-inference-server's media tests grade these tasks with checks
		// of their own (MTEB: NA; images: FID/CLIP ranges; TTS: a WER
		// threshold), not by comparing a score with the catalog's
		// number, which is no score of this task: reported, not graded.
		g.Score = &score
		g.Basis = "not graded: the catalog's reference for this task is not a score of it (score_fn custom)"
		return g
	}
	if ref != nil && strings.EqualFold(ref.Unit, "WER") {
		// lmms-eval reports WER in percent already (librispeech_wer
		// returns wer×100), and tt-inference-server grades 100 − WER
		// without scaling it.
		score = 100 - sum/float64(len(picked))
	}
	g.Score = &score
	ratio := func(ref *float64) *float64 {
		if ref == nil || *ref == 0 {
			return nil
		}
		r := score / percentScale(*ref)
		return &r
	}
	g.RatioToPublished = ratio(g.Published)
	g.RatioToReference = ratio(g.GPUReference)
	var decider *float64
	switch {
	case g.SubsetReference != nil:
		decider, g.Basis = ratio(g.SubsetReference), "subset reference ("+mode+")"
	case g.RatioToReference != nil:
		decider, g.Basis = g.RatioToReference, "GPU reference"
	case g.RatioToPublished != nil:
		decider, g.Basis = g.RatioToPublished, "published score"
	default:
		g.Basis = "no reference"
		return g
	}
	if *decider >= 1-g.Tolerance-1e-12 {
		g.Check = verdict.Pass
	} else {
		g.Check = verdict.Fail
	}
	return g
}

// percentScale reads a reference given as a fraction (the catalog keeps
// some, such as bge-m3's STS12 0.7873, in MTEB's own 0-1 scale) in percent,
// the scale of every score: no reference in percent is as low as 1, and
// comparing a percent score with a fraction would pass anything.
func percentScale(ref float64) float64 {
	if ref > 0 && ref <= 1 {
		return 100 * ref
	}
	return ref
}
