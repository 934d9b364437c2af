package catalog

import (
	"bytes"
	_ "embed" // evalrefs.json is embedded below
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// evalRefsJSON is tt-inference-server's EVAL_CONFIGS table (reference §4.4):
// one row per (model, task) with its published and GPU reference scores,
// tolerance, score keys and sample limits, transcribed as data.
//
//go:embed data/evalrefs.json
var evalRefsJSON []byte

// EvalRef is the accuracy reference of one task for one model.
type EvalRef struct {
	// Model is the HF repo basename ("Llama-3.1-8B-Instruct").
	Model string `json:"model"`
	// Task is the lm-eval (or harness) task name ("ifeval").
	Task string `json:"task"`
	// Harness is the reference's eval venv (common, meta, vision, audio,
	// embedding, agentic).
	Harness string `json:"harness"`
	// API is the endpoint the reference used (completions,
	// chat-completions, openai_compatible, whisper_tt, harness, media-test).
	API         string `json:"api"`
	Concurrency int    `json:"concurrency,omitempty"`
	BatchSize   int    `json:"batch_size,omitempty"`
	// Published and GPUReference are scores in percent (nil when the
	// reference gives none).
	Published    *float64 `json:"published,omitempty"`
	GPUReference *float64 `json:"gpu_reference,omitempty"`
	// Tolerance is the allowed relative shortfall (0.05 = 5 %).
	Tolerance float64 `json:"tolerance"`
	// ScoreFn is task_single_key, task_keys_mean, multilevel_keys_mean or
	// custom; ScoreKeys are lm-eval result keys ("exact_match,strict-match").
	ScoreFn   string   `json:"score_fn"`
	ScoreKeys []string `json:"score_keys,omitempty"`
	ScoreNote string   `json:"score_note,omitempty"`
	// MaxGenToks overrides the task's generation budget (0 = task default).
	MaxGenToks int `json:"max_gen_toks,omitempty"`
	// LimitSamples maps a limit mode (smoke_test, ci_nightly, ci_commit,
	// ci_long) to a count or fraction; a nil value means no limit.
	LimitSamples map[string]*float64 `json:"limit_samples,omitempty"`
	// SubsetReference maps a limit mode to the reference score of that
	// subset.
	SubsetReference map[string]float64 `json:"subset_reference,omitempty"`
	MinContext      int                `json:"min_context,omitempty"`
	NumFewShot      int                `json:"num_fewshot,omitempty"`
	Temperature     *float64           `json:"temperature,omitempty"`
	Stream          bool               `json:"stream,omitempty"`
	// Unit "WER" means the score is 100 − WER.
	Unit      string `json:"unit,omitempty"`
	LimitsRaw string `json:"limits_raw,omitempty"`
}

var loadEvalRefs = sync.OnceValues(func() ([]EvalRef, error) {
	dec := json.NewDecoder(bytes.NewReader(evalRefsJSON))
	dec.DisallowUnknownFields()
	var refs []EvalRef
	if err := dec.Decode(&refs); err != nil {
		return nil, fmt.Errorf("decode embedded catalog file evalrefs.json: %w", err)
	}
	for i, r := range refs {
		if r.Model == "" || r.Task == "" {
			return nil, fmt.Errorf("evalrefs.json entry %d: model and task are required", i)
		}
		if r.Tolerance < 0 || r.Tolerance >= 1 {
			return nil, fmt.Errorf("evalrefs.json entry %d (%s %s): tolerance %v outside [0,1)", i, r.Model, r.Task, r.Tolerance)
		}
	}
	return refs, nil
})

func evalRefs() []EvalRef {
	refs, err := loadEvalRefs()
	if err != nil {
		// The data is embedded and checked by this package's tests.
		panic(fmt.Sprintf("catalog: %v", err))
	}
	return refs
}

func (r EvalRef) clone() EvalRef {
	r.ScoreKeys = append([]string(nil), r.ScoreKeys...)
	if r.LimitSamples != nil {
		m := make(map[string]*float64, len(r.LimitSamples))
		for k, v := range r.LimitSamples {
			if v != nil {
				x := *v
				v = &x
			}
			m[k] = v
		}
		r.LimitSamples = m
	}
	if r.SubsetReference != nil {
		m := make(map[string]float64, len(r.SubsetReference))
		for k, v := range r.SubsetReference {
			m[k] = v
		}
		r.SubsetReference = m
	}
	return r
}

// modelKey reduces a model name or HF repo to its lower-case basename.
func modelKey(model string) string {
	model = strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(model, "/"); i >= 0 {
		model = model[i+1:]
	}
	return model
}

// EvalRefs returns every eval reference in the reference's order.
func EvalRefs() []EvalRef {
	refs := evalRefs()
	out := make([]EvalRef, len(refs))
	for i, r := range refs {
		out[i] = r.clone()
	}
	return out
}

// ModelEvalRefs returns the references of one model (name or HF repo,
// case-insensitive).
func ModelEvalRefs(model string) []EvalRef {
	k := modelKey(model)
	var out []EvalRef
	for _, r := range evalRefs() {
		if strings.ToLower(r.Model) == k {
			out = append(out, r.clone())
		}
	}
	return out
}

// EvalRefFor returns the reference of (model, task); ok is false when the
// catalog has none.
func EvalRefFor(model, task string) (EvalRef, bool) {
	for _, r := range ModelEvalRefs(model) {
		if r.Task == task {
			return r, true
		}
	}
	return EvalRef{}, false
}
