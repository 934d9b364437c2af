package tasks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// MMLU-Pro (TIGER-Lab/MMLU-Pro, MIT) is read from local files in the
// dataset's own layout: question, options (a list of up to 10), answer (a
// letter; answer_index is used when it is absent), category, and for the
// few-shot file (the validation split) cot_content. The definition is
// task version 2.1 of the lm-eval fork tt-inference-server runs, whose
// scores the catalog holds. As in lm-eval's mmlu_pro group, every
// category is a subtask (mmlu_pro_<category>) and mmlu_pro is their
// size-weighted mean, scored on the "custom-extract" filter (the letter
// after "answer is").
//
// lm-eval gives each category its own 5 examples: the first rows of the
// validation split in that category. The task model picks examples from
// one pool for every document, so the category's examples are rendered
// into its description instead (the completions prompt is the same
// text; a chat prompt carries them in the first user turn rather than as
// separate turns, and the results' n-shot reads 0 while the config's
// num_fewshot says 5).

// mmluProLetters are the option labels; options past the tenth are not
// shown, as in lm-eval.
const mmluProLetters = "ABCDEFGHIJ"

func mmluProCategory(d evalsuite.Doc) (string, error) {
	c, err := d.Str("category")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(c) == "" {
		return "", fmt.Errorf("%s: field \"category\" is empty", d.Source)
	}
	return c, nil
}

// mmluProQuestion is lm-eval's format_cot_example without the answer:
// "Question:\n<q>\nOptions:\nA. <opt>\n...Answer: Let's think step by step."
func mmluProQuestion(d evalsuite.Doc) (string, error) {
	body, err := mmluProBody(d)
	if err != nil {
		return "", err
	}
	return body + "Answer: Let's think step by step.", nil
}

// mmluProBody is the question and its options, each line ending in a
// newline. Options are written as they are: the fork's task version does
// not strip them (upstream lm-eval 3.1 does).
func mmluProBody(d evalsuite.Doc) (string, error) {
	q, err := d.Str("question")
	if err != nil {
		return "", err
	}
	opts, err := d.Strings("options")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("Question:\n" + q + "\nOptions:\n")
	for i, o := range opts {
		if i >= len(mmluProLetters) {
			break
		}
		fmt.Fprintf(&b, "%c. %s\n", mmluProLetters[i], o)
	}
	return b.String(), nil
}

// mmluProTarget is the answer letter.
func mmluProTarget(d evalsuite.Doc) (string, error) {
	if v, ok := d.Fields["answer"]; ok && v != nil {
		s, err := d.Str("answer")
		if err != nil {
			return "", err
		}
		s = strings.TrimSpace(s)
		if len(s) != 1 || !strings.Contains(mmluProLetters, s) {
			return "", fmt.Errorf("%s: field \"answer\" = %q, want a letter A-J", d.Source, s)
		}
		return s, nil
	}
	i, err := d.Int("answer_index")
	if err != nil {
		return "", fmt.Errorf("%s: needs an \"answer\" letter or an \"answer_index\": %w", d.Source, err)
	}
	if i < 0 || i >= len(mmluProLetters) {
		return "", fmt.Errorf("%s: field \"answer_index\" = %d, want 0-9", d.Source, i)
	}
	return mmluProLetters[i : i+1], nil
}

// mmluProExample is one few-shot example with its blank line: the
// question and options, then the worked answer with its leading "A:"
// spelled "Answer:" (format_cot_example with the answer; the example's
// target is empty, so no delimiter is added).
func mmluProExample(d evalsuite.Doc) (string, error) {
	body, err := mmluProBody(d)
	if err != nil {
		return "", err
	}
	cot, err := d.Str("cot_content")
	if err != nil {
		return "", err
	}
	return body + strings.ReplaceAll(cot, "A: Let's think step by step.", "Answer: Let's think step by step.") + "\n\n", nil
}

func mmluProDescription(category string) string {
	return "The following are multiple choice questions (with answers) about " + category +
		". Think step by step and then finish your answer with \"the answer is (X)\" where X is the correct letter choice.\n"
}

// mmluProPrefixes renders each category's description and examples (the
// first shots pool rows of that category, each followed by a blank line).
func mmluProPrefixes(docs, pool []evalsuite.Doc, shots int) (map[string]string, error) {
	byCat := map[string][]evalsuite.Doc{}
	for _, d := range pool {
		if d.Invalid != nil {
			return nil, fmt.Errorf("few-shot dataset: %w", d.Invalid)
		}
		c, err := mmluProCategory(d)
		if err != nil {
			return nil, fmt.Errorf("few-shot dataset: %w", err)
		}
		byCat[c] = append(byCat[c], d)
	}
	out := map[string]string{}
	for _, d := range docs {
		if d.Invalid != nil {
			continue
		}
		c, err := mmluProCategory(d)
		if err != nil {
			return nil, err
		}
		if _, done := out[c]; done {
			continue
		}
		var b strings.Builder
		b.WriteString(mmluProDescription(c))
		if shots > 0 && len(byCat[c]) < shots {
			return nil, fmt.Errorf("few-shot dataset has %d examples of category %q, %d-shot needs %d", len(byCat[c]), c, shots, shots)
		}
		for _, e := range byCat[c][:shots] {
			ex, err := mmluProExample(e)
			if err != nil {
				return nil, fmt.Errorf("few-shot dataset: %w", err)
			}
			b.WriteString(ex)
		}
		out[c] = b.String()
	}
	return out, nil
}

func mmluProSubtask(category string) string {
	return "mmlu_pro_" + strings.ReplaceAll(strings.TrimSpace(category), " ", "_")
}

// buildMMLUPro is mmlu_pro as the lm-eval fork tt-inference-server runs
// defines it (task template v2.1): 5-shot chain of
// thought per category when a few-shot file is given, generated until
// "Question:" (2048 tokens at most), exact_match on the extracted letter
// ignoring case and punctuation.
func buildMMLUPro(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	pool, shots, err := fewShot(src, 5)
	if err != nil {
		return nil, err
	}
	prefixes, err := mmluProPrefixes(docs, pool, shots)
	if err != nil {
		return nil, err
	}
	cats := make([]string, 0, len(prefixes))
	for c := range prefixes {
		cats = append(cats, mmluProSubtask(c))
	}
	sort.Strings(cats)
	return &evalsuite.Task{
		Name: "mmlu_pro", Version: "2.1", Output: evalsuite.GenerateUntil, Docs: docs,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DescriptionFor: func(d evalsuite.Doc) string {
			c, _ := mmluProCategory(d) // checked while rendering the prefixes
			return prefixes[c]
		},
		SubtaskOf: func(d evalsuite.Doc) string {
			c, err := mmluProCategory(d)
			if err != nil {
				return "mmlu_pro_unknown_category"
			}
			return mmluProSubtask(c)
		},
		DocToText:    mmluProQuestion,
		DocToTarget:  mmluProTarget,
		DocToChoices: func(d evalsuite.Doc) ([]string, error) { return d.Strings("options") },
		Gen:          evalsuite.GenKwargs{Until: []string{"Question:"}, MaxGenToks: 2048, Temperature: 0},
		Filters:      []filter.Chain{filter.MMLUProCustomExtract()},
		Metrics:      []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true, ExactMatch: &metric.ExactMatchOptions{IgnoreCase: true, IgnorePunctuation: true}}},
		Config: map[string]any{
			"task": "mmlu_pro", "output_type": "generate_until", "num_fewshot": shots, "subtasks": cats,
			"doc_to_text":       "Question:\n{{question}}\nOptions:\nA. {{options[0]}}\n...\nAnswer: Let's think step by step.",
			"doc_to_target":     "answer",
			"fewshot_config":    map[string]any{"sampler": "first_n of the document's category", "doc_to_target": "cot_content without \"A: Let's think step by step. \""},
			"description":       mmluProDescription("{{category}}"),
			"generation_kwargs": map[string]any{"until": []string{"Question:"}, "max_gen_toks": 2048, "do_sample": false, "temperature": 0.0},
			"filter_list": []map[string]any{
				{"name": "custom-extract", "filter": []map[string]any{{"function": "regex", "regex_pattern": `answer is \(?([ABCDEFGHIJ])\)?`}, {"function": "take_first"}}},
			},
			"metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true, "ignore_case": true, "ignore_punctuation": true}},
		},
	}, nil
}
