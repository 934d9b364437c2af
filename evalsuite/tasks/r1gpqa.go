package tasks

import (
	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/tasks/internal/r1grade"
)

// r1GPQATail ends the r1_gpqa_diamond prompt: reason, then answer in a box.
const r1GPQATail = "Please reason step by step, and your final answer must be only (A,B,C or D) within \\boxed\nAnswer:"

// buildR1GPQA is r1_gpqa_diamond from tt-inference-server's
// lm-evaluation-harness fork (lm_eval/tasks/r1_evals, v1.0): the zero-shot
// GPQA prompt and shuffle asking for a boxed letter, graded by the fork's
// process_results (package r1grade) into "exact_match,none". The fork
// samples at temperature 0.6 with top_k 40 and top_p 0.95; the task model
// carries the temperature only, and the catalog sets it per model anyway.
func buildR1GPQA(src Source) (*evalsuite.Task, error) {
	docs, seed, err := gpqaLoad(src)
	if err != nil {
		return nil, err
	}
	until := []string{"<|end_of_text|>", "<|endoftext|>", "<|im_end|>"}
	return &evalsuite.Task{
		Name: "r1_gpqa_diamond", Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
		DocToText:    gpqaPrompt(gpqaZeroShotLead, r1GPQATail),
		DocToTarget:  gpqaTarget,
		DocToChoices: gpqaChoices,
		Gen:          evalsuite.GenKwargs{Until: until, MaxGenToks: 32768, Temperature: 0.6},
		Process:      processR1GPQA,
		Metrics:      []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "r1_gpqa_diamond", "output_type": "generate_until", "num_fewshot": 0,
			"doc_to_text":     "What is the correct answer to this question:{{Question}}\nChoices:\n(A) {{choice1}}\n(B) {{choice2}}\n(C) {{choice3}}\n(D) {{choice4}}\n" + r1GPQATail,
			"doc_to_target":   "answer",
			"process_docs":    map[string]any{"shuffle": "CPython random.shuffle of [Incorrect Answer 1-3, Correct Answer]", "seed": seed},
			"process_results": "boxed or stated answer, normalised, last standalone letter A-E, compared with the gold letter",
			"generation_kwargs": map[string]any{"until": until, "do_sample": false, "max_gen_toks": 32768,
				"temperature": 0.6, "top_k": 40, "top_p": 0.95, "n": 1},
			"metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true}},
		},
	}, nil
}

// processR1GPQA scores one response against the document's "(X)" answer.
func processR1GPQA(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	answer, err := d.Str("answer")
	if err != nil {
		return nil, err
	}
	return evalsuite.Scores{"exact_match": {r1grade.Score(r1grade.Gold(answer), r1grade.Candidate(resp))}}, nil
}
