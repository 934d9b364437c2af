package catalog

import (
	"testing"
)

func TestEvalRefsDecode(t *testing.T) {
	refs := EvalRefs()
	if len(refs) < 150 {
		t.Fatalf("%d eval references, want the whole §4.4 table (154 rows)", len(refs))
	}
	seen := map[string]bool{}
	for _, r := range refs {
		k := r.Model + "/" + r.Task
		if seen[k] {
			t.Errorf("duplicate reference %s", k)
		}
		seen[k] = true
		if (r.ScoreFn == "task_single_key" || r.ScoreFn == "task_keys_mean") && len(r.ScoreKeys) == 0 {
			t.Errorf("%s: %s without keys", k, r.ScoreFn)
		}
	}
}

func TestEvalRefFor(t *testing.T) {
	tests := []struct {
		model, task    string
		published, gpu float64
		tol            float64
		keys           []string
		nightly        float64
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "meta_ifeval", 80.4, 81.38, 0.05,
			[]string{"prompt_level_strict_acc,none", "inst_level_strict_acc,none", "prompt_level_loose_acc,none", "inst_level_loose_acc,none"}, 0},
		{"gpt-oss-20b", "mmlu_generative", 80.4, 80.4, 0.05, []string{"exact_match,get_response"}, 0.15},
		{"Falcon3-7B-Instruct", "ifeval", 76.5, 72.79, 0.05, []string{"prompt_level_strict_acc,none", "inst_level_strict_acc,none"}, 0.05},
		{"diffusiongemma-26B-A4B-it", "gpqa_diamond_cot_zeroshot", 0, 70, 0.0428571, []string{"exact_match,flexible-extract"}, 0.05},
	}
	for _, tt := range tests {
		r, ok := EvalRefFor(tt.model, tt.task)
		if !ok {
			t.Fatalf("no reference for %s %s", tt.model, tt.task)
		}
		if (r.Published == nil) != (tt.published == 0) || (r.Published != nil && *r.Published != tt.published) {
			t.Errorf("%s: published %v, want %v", tt.task, r.Published, tt.published)
		}
		if r.GPUReference == nil || *r.GPUReference != tt.gpu {
			t.Errorf("%s: gpu reference %v, want %v", tt.task, r.GPUReference, tt.gpu)
		}
		if r.Tolerance != tt.tol {
			t.Errorf("%s: tolerance %v", tt.task, r.Tolerance)
		}
		if len(r.ScoreKeys) != len(tt.keys) {
			t.Fatalf("%s: keys %v, want %v", tt.task, r.ScoreKeys, tt.keys)
		}
		for i := range tt.keys {
			if r.ScoreKeys[i] != tt.keys[i] {
				t.Errorf("%s: keys %v, want %v", tt.task, r.ScoreKeys, tt.keys)
			}
		}
		if tt.nightly != 0 {
			v := r.LimitSamples["ci_nightly"]
			if v == nil || *v != tt.nightly {
				t.Errorf("%s: ci_nightly limit %v, want %v", tt.task, v, tt.nightly)
			}
		}
	}
	if _, ok := EvalRefFor("Llama-3.1-8B-Instruct", "no_such_task"); ok {
		t.Error("unknown task must have no reference")
	}
	r, _ := EvalRefFor("gemma-3-4b-it", "ruler")
	if v, ok := r.LimitSamples["ci_nightly"]; !ok || v != nil {
		t.Errorf("ruler ci_nightly=None must decode as an explicit no-limit, got %v %v", v, ok)
	}
	g, _ := EvalRefFor("gemma-4-31B-it", "r1_gpqa_diamond")
	if g.SubsetReference["ci_nightly"] != 80.0 {
		t.Errorf("subset reference %v", g.SubsetReference)
	}
}

func TestEvalRefsAreCopies(t *testing.T) {
	r, _ := EvalRefFor("gpt-oss-20b", "mmlu_generative")
	r.ScoreKeys[0] = "changed"
	*r.LimitSamples["ci_nightly"] = 99
	r2, _ := EvalRefFor("gpt-oss-20b", "mmlu_generative")
	if r2.ScoreKeys[0] == "changed" || *r2.LimitSamples["ci_nightly"] == 99 {
		t.Fatal("EvalRefFor must hand out copies")
	}
}
