package tasks

import (
	"fmt"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// meta_gpqa and meta_gpqa_cot are the GPQA tasks of llama-cookbook's
// meta_eval recipe, which tt-inference-server runs for Llama 3.x models.
// They replay Meta's published evaluation details: each row of a local
// copy of the gated meta-llama/Llama-3.x-Instruct-evals "gpqa__details"
// split carries the final prompt Meta used (input_final_prompts[0], chat
// template already applied) and the gold letter
// (input_correct_responses[0]). The completions API must send the prompt
// as is.

// metaTokenConvert is the cookbook's meta_gpqa_cot doc_to_text rewrite of
// Llama 3 header tokens into their Llama 4 spellings, applied as it does
// (only the chain-of-thought variant has it).
var metaTokenConvert = strings.NewReplacer(
	"<|start_header_id|>", "<|header_start|>",
	"<|end_header_id|>", "<|header_end|>",
	"<|eot_id|>", "<|eot|>",
)

func metaFirst(d evalsuite.Doc, field string) (string, error) {
	vals, err := d.Strings(field)
	if err != nil {
		return "", err
	}
	if len(vals) == 0 {
		return "", fmt.Errorf("%s: field %q is an empty list", d.Source, field)
	}
	return vals[0], nil
}

func metaGPQATask(name, pattern string, convert bool) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		docs, err := load(src.Dataset, src)
		if err != nil {
			return nil, err
		}
		text := func(d evalsuite.Doc) (string, error) {
			p, err := metaFirst(d, "input_final_prompts")
			if err != nil || !convert {
				return p, err
			}
			return metaTokenConvert.Replace(p), nil
		}
		docText := "input_final_prompts[0]"
		if convert {
			docText += " with Llama 3 header tokens renamed to Llama 4's"
		}
		return &evalsuite.Task{
			Name: name, Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
			DocToText:   text,
			DocToTarget: func(d evalsuite.Doc) (string, error) { return metaFirst(d, "input_correct_responses") },
			Gen:         evalsuite.GenKwargs{Until: nil, MaxGenToks: 2048, Temperature: 0},
			Filters:     []filter.Chain{{Name: "strict-match", Steps: []filter.Step{filter.MustRegex(pattern, -1), filter.TakeFirst{}}}},
			Metrics:     []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true, ExactMatch: &metric.ExactMatchOptions{IgnoreCase: true, IgnorePunctuation: true}}},
			Config: map[string]any{
				"task": name, "output_type": "generate_until", "num_fewshot": 0, "test_split": "latest",
				"doc_to_text": docText, "doc_to_target": "input_correct_responses[0]",
				"generation_kwargs": map[string]any{"until": []string{}, "do_sample": false, "temperature": 0, "max_gen_toks": 2048},
				"filter_list":       []map[string]any{{"name": "strict-match", "filter": []map[string]any{{"function": "regex", "group_select": -1, "regex_pattern": pattern}, {"function": "take_first"}}}},
				"metric_list":       []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true, "ignore_case": true, "ignore_punctuation": true}},
			},
		}, nil
	}
}

// The registry's descriptions of the Meta GPQA tasks.
const (
	metaGPQAInfo    = "GPQA replaying Meta's eval details (llama-cookbook meta_gpqa): local file with input_final_prompts and input_correct_responses; the last \" X\" letter is the answer"
	metaGPQACoTInfo = "GPQA chain of thought replaying Meta's eval details (llama-cookbook meta_gpqa_cot): local file with input_final_prompts and input_correct_responses; the letter after \"best answer is\""
)
