package tasks

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// GPQA reads a local copy of the gated Idavidrein/gpqa data in its own
// column layout (Question, Correct Answer, Incorrect Answer 1-3; other
// columns are ignored). The data is never downloaded or vendored.
//
// lm-eval's process_docs puts the four answers in a list (three incorrect,
// then the correct one, each cleaned by its preprocess) and shuffles it
// with Python's global random module, which lm-eval seeds with --seed
// before loading tasks. gpqaShuffle does the same with a CPython-compatible
// MT19937 (package pyrand) seeded once per file and consumed document by
// document in file order, so the permutations equal lm-eval's when its
// process_docs is the first user of the freshly seeded generator over the
// same rows in the same order (a cold datasets cache; a warm cache replays
// whatever permutation the run that filled it drew). The default seed is
// 42, the --seed tt-inference-server passes; Source.Seed overrides it.
const gpqaDefaultSeed = 42

// gpqaBracketRe is the fork's re.sub("\\[.*?\\]", "", text).
var gpqaBracketRe = regexp.MustCompile(`\[.*?\]`)

// gpqaFields are the columns process_docs reads.
var gpqaFields = []string{"Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Correct Answer"}

// gpqaPreprocess is the preprocess of the lm-eval fork tt-inference-server
// runs (GPQA task versions 1.0/2.0): None becomes one space; text is
// stripped, " [title]" becomes ". ", every "[...]" within a line is
// removed, and double spaces become single. Upstream lm-eval 2.2 no longer
// removes the bracketed text; the catalog's references were measured with
// the fork.
func gpqaPreprocess(d evalsuite.Doc, field string) (string, error) {
	v, ok := d.Fields[field]
	if !ok {
		return "", fmt.Errorf("%s: missing field %q (GPQA files need the columns %s)", d.Source, field, strings.Join(gpqaFields, ", "))
	}
	if v == nil {
		return " ", nil
	}
	s, err := d.Str(field)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, " [title]", ". ")
	s = gpqaBracketRe.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, "  ", " "), nil
}

// gpqaShuffle returns docs with the shuffled answers added as choice1-4,
// choices, answer ("(B)") and gold (its index). A row without the answer
// columns is an error naming it; rows the reader could not parse are kept
// as they are so the runner reports them.
func gpqaShuffle(docs []evalsuite.Doc, seed int64) ([]evalsuite.Doc, error) {
	rng := pyrand.New(seed)
	out := make([]evalsuite.Doc, len(docs))
	for i, d := range docs {
		out[i] = d
		if d.Invalid != nil {
			continue
		}
		if _, ok := d.Fields["Question"]; !ok {
			return nil, fmt.Errorf("%s: missing field %q", d.Source, "Question")
		}
		choices := make([]string, len(gpqaFields))
		for k, f := range gpqaFields {
			c, err := gpqaPreprocess(d, f)
			if err != nil {
				return nil, err
			}
			choices[k] = c
		}
		correct := choices[3]
		rng.Shuffle(len(choices), func(a, b int) { choices[a], choices[b] = choices[b], choices[a] })
		gold := 0
		for k, c := range choices { // list.index: the first equal entry
			if c == correct {
				gold = k
				break
			}
		}
		fields := make(map[string]any, len(d.Fields)+7)
		for k, v := range d.Fields {
			fields[k] = v
		}
		for k, c := range choices {
			fields[fmt.Sprintf("choice%d", k+1)] = c
		}
		fields["choices"] = append([]string(nil), choices...)
		fields["answer"] = "(" + metric.Letter(gold) + ")"
		fields["gold"] = gold
		out[i].Fields = fields
	}
	return out, nil
}

// gpqaPrompt renders "<lead><Question>\nChoices:\n(A) ...\n(D) ...\n<tail>".
func gpqaPrompt(lead, tail string) func(evalsuite.Doc) (string, error) {
	return func(d evalsuite.Doc) (string, error) {
		q, err := d.Str("Question")
		if err != nil {
			return "", err
		}
		choices, err := d.Strings("choices")
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteString(lead + q + "\nChoices:\n")
		for i, c := range choices {
			fmt.Fprintf(&b, "(%s) %s\n", metric.Letter(i), c)
		}
		b.WriteString(tail)
		return b.String(), nil
	}
}

const (
	gpqaZeroShotLead = "What is the correct answer to this question:"
	gpqaNShotLead    = "Question: "
	gpqaDescription  = "Here are some example questions from experts. Answer the final question yourself, following the format of the previous questions exactly.\n"
)

func gpqaLoad(src Source) ([]evalsuite.Doc, int64, error) {
	seed := int64(gpqaDefaultSeed)
	if src.Seed != 0 {
		seed = int64(src.Seed)
	}
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, 0, err
	}
	docs, err = gpqaShuffle(docs, seed)
	return docs, seed, err
}

func gpqaTarget(d evalsuite.Doc) (string, error) { return d.Str("answer") }

func gpqaGold(d evalsuite.Doc) (int, error) { return d.Int("gold") }

func gpqaChoices(d evalsuite.Doc) ([]string, error) { return d.Strings("choices") }

// gpqaFilterConfig is the generative tasks' filter_list as lm-eval writes it.
func gpqaFilterConfig() []map[string]any {
	return []map[string]any{
		{"name": "strict-match", "filter": []map[string]any{{"function": "regex", "regex_pattern": "(?<=The answer is )(.*)(?=.)"}, {"function": "take_first"}}},
		{"name": "flexible-extract", "filter": []map[string]any{{"function": "multi_choice_regex", "group_select": -1, "ignore_case": true, "ignore_punctuation": true, "regex_pattern": `(\([A-Z]\))`}, {"function": "take_first"}}},
	}
}

// gpqaGenerative is a GPQA task answered in free text and scored on the
// "(X)" label: strict-match after "The answer is ", flexible-extract with
// multi_choice_regex (the document's choices are exposed through
// DocToChoices for callers that pass them to the filter; see
// filter.ChoiceStep), exact_match ignoring case and punctuation.
func gpqaGenerative(name string, docs []evalsuite.Doc, seed int64) *evalsuite.Task {
	return &evalsuite.Task{
		Name: name, Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToTarget:  gpqaTarget,
		DocToChoices: gpqaChoices,
		Filters:      []filter.Chain{filter.GPQAStrict(), filter.GPQAFlexible()},
		Metrics:      []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true, ExactMatch: &metric.ExactMatchOptions{IgnoreCase: true, IgnorePunctuation: true}}},
		Config: map[string]any{
			"task": name, "output_type": "generate_until", "doc_to_target": "answer",
			"process_docs":     map[string]any{"shuffle": "CPython random.shuffle of [Incorrect Answer 1-3, Correct Answer]", "seed": seed},
			"target_delimiter": " ", "fewshot_delimiter": "\n\n",
			"filter_list": gpqaFilterConfig(),
			"metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true, "ignore_case": true, "ignore_punctuation": true}},
		},
	}
}

// buildGPQACoT is gpqa_<subset>_cot_zeroshot: zero-shot chain of thought
// ending "Let's think step by step: ", generated until "</s>".
func buildGPQACoT(name string) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		docs, seed, err := gpqaLoad(src)
		if err != nil {
			return nil, err
		}
		t := gpqaGenerative(name, docs, seed)
		t.DocToText = gpqaPrompt(gpqaZeroShotLead, "Let's think step by step: ")
		t.Gen = evalsuite.GenKwargs{Until: []string{"</s>"}, MaxGenToks: 256, Temperature: 0}
		t.Config["doc_to_text"] = "What is the correct answer to this question:{{Question}}\nChoices:\n(A) {{choice1}}\n(B) {{choice2}}\n(C) {{choice3}}\n(D) {{choice4}}\nLet's think step by step: "
		t.Config["num_fewshot"] = 0
		t.Config["generation_kwargs"] = map[string]any{"until": []string{"</s>"}, "do_sample": false, "temperature": 0.0, "max_gen_toks": 256}
		return t, nil
	}
}

// buildGPQAGenerativeNShot is gpqa_<subset>_generative_n_shot: "Question:
// ... Answer:" prompts after the experts' description and examples
// answered "(X)", 5-shot by default as the catalog's references were
// measured. Examples come from the few-shot file, or from the evaluated
// file itself (lm-eval's train split is the evaluated split).
//
// lm-eval draws each document's examples with random.sample(pool, n+1)
// from a generator seeded with its few-shot seed (42 under
// tt-inference-server's --seed 42, the same default as the shuffle here),
// one document after another, and drops the asked document; gpqaExamples
// repeats that with pyrand. Because the task model takes examples from one
// fixed list, each document's examples are rendered into its description:
// the completions prompt is lm-eval's, a chat prompt carries the examples
// in its first user turn instead of separate turns, and the results'
// n-shot reads 0 while the config's num_fewshot gives the count.
func buildGPQAGenerativeNShot(name string) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		docs, seed, err := gpqaLoad(src)
		if err != nil {
			return nil, err
		}
		pool := docs
		if src.FewShotDataset != "" {
			raw, err := load(src.FewShotDataset, src)
			if err != nil {
				return nil, fmt.Errorf("few-shot dataset: %w", err)
			}
			if pool, err = gpqaShuffle(raw, seed); err != nil {
				return nil, fmt.Errorf("few-shot dataset: %w", err)
			}
		}
		var valid []evalsuite.Doc
		for _, d := range pool {
			if d.Invalid == nil {
				valid = append(valid, d)
			}
		}
		shots := 5
		if src.NumFewShot >= 0 {
			shots = src.NumFewShot
		}
		prompt := gpqaPrompt(gpqaNShotLead, "Answer:")
		prefixes, err := gpqaExamples(docs, valid, shots, seed, prompt)
		if err != nil {
			return nil, err
		}
		t := gpqaGenerative(name, docs, seed)
		t.Version = "2.0"
		t.DescriptionFor = func(d evalsuite.Doc) string { return prefixes[d.Source] }
		t.DocToText = prompt
		t.Gen = evalsuite.GenKwargs{Until: []string{"</s>", "Question:", "<|im_end|>"}, MaxGenToks: 256, Temperature: 0}
		t.Config["description"] = gpqaDescription
		t.Config["doc_to_text"] = "Question: {{Question}}\nChoices:\n(A) {{choice1}}\n(B) {{choice2}}\n(C) {{choice3}}\n(D) {{choice4}}\nAnswer:"
		t.Config["num_fewshot"] = shots
		t.Config["fewshot_config"] = map[string]any{"sampler": "default: random.sample(pool, num_fewshot+1) without the asked document", "fewshot_seed": seed}
		t.Config["generation_kwargs"] = map[string]any{"until": []string{"</s>", "Question:", "<|im_end|>"}, "temperature": 0.0, "max_gen_toks": 256}
		return t, nil
	}
}

// gpqaExamples renders each document's description and examples, keyed
// by the document's Source: shots+1 pool entries sampled in document order
// from one generator, the asked document (equal fields) dropped, the first
// shots kept, each written "<question> (X)" and followed by a blank line.
func gpqaExamples(docs, pool []evalsuite.Doc, shots int, seed int64, prompt func(evalsuite.Doc) (string, error)) (map[string]string, error) {
	out := make(map[string]string, len(docs))
	if shots == 0 {
		for _, d := range docs {
			out[d.Source] = gpqaDescription
		}
		return out, nil
	}
	if shots+1 > len(pool) {
		return nil, fmt.Errorf("%d-shot draws %d examples, the pool has %d valid documents", shots, shots+1, len(pool))
	}
	rendered := make([]string, len(pool))
	for i, e := range pool {
		q, err := prompt(e)
		if err != nil {
			return nil, fmt.Errorf("few-shot example: %w", err)
		}
		a, err := gpqaTarget(e)
		if err != nil {
			return nil, fmt.Errorf("few-shot example: %w", err)
		}
		rendered[i] = q + " " + a + "\n\n"
	}
	rng := pyrand.New(seed)
	for _, d := range docs {
		if d.Invalid != nil {
			continue
		}
		var b strings.Builder
		b.WriteString(gpqaDescription)
		kept := 0
		for _, i := range rng.Sample(len(pool), shots+1) {
			if kept == shots {
				break
			}
			if reflect.DeepEqual(pool[i].Fields, d.Fields) {
				continue
			}
			b.WriteString(rendered[i])
			kept++
		}
		out[d.Source] = b.String()
	}
	return out, nil
}

// buildGPQAZeroShot is gpqa_<subset>_zeroshot: multiple choice by
// log-likelihood of the continuations " (A)" ... " (D)" (completions API
// only), scored acc and acc_norm.
func buildGPQAZeroShot(name string) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		docs, seed, err := gpqaLoad(src)
		if err != nil {
			return nil, err
		}
		labels := []string{"(A)", "(B)", "(C)", "(D)"}
		return &evalsuite.Task{
			Name: name, Version: "1.0", Output: evalsuite.MultipleChoice, Docs: docs,
			TargetDelimiter: " ", FewshotDelimiter: "\n\n",
			DocToText:    gpqaPrompt(gpqaZeroShotLead, "Answer:"),
			DocToChoices: func(evalsuite.Doc) ([]string, error) { return labels, nil },
			DocToGold:    gpqaGold,
			Metrics: []evalsuite.MetricSpec{
				{Name: "acc", Aggregation: "mean", HigherIsBetter: true},
				{Name: "acc_norm", Aggregation: "mean", HigherIsBetter: true},
			},
			Config: map[string]any{
				"task": name, "output_type": "multiple_choice", "num_fewshot": 0,
				"doc_to_text":   "What is the correct answer to this question:{{Question}}\nChoices:\n(A) {{choice1}}\n(B) {{choice2}}\n(C) {{choice3}}\n(D) {{choice4}}\nAnswer:",
				"doc_to_choice": labels, "doc_to_target": "answer", "target_delimiter": " ", "fewshot_delimiter": "\n\n",
				"process_docs": map[string]any{"shuffle": "CPython random.shuffle of [Incorrect Answer 1-3, Correct Answer]", "seed": seed},
				"metric_list":  []map[string]any{{"metric": "acc", "aggregation": "mean", "higher_is_better": true}, {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": true}},
			},
		}, nil
	}
}

// The registry's descriptions of the GPQA tasks (the subset is whichever
// file the user passes: diamond, main or extended).
const (
	gpqaLayout  = "a local GPQA file in its own layout (Question, Correct Answer, Incorrect Answer 1-3); answers shuffled like lm-eval with Python's MT19937, seed 42 unless Source.Seed is set"
	gpqaCoTInfo = "GPQA zero-shot chain of thought, lm-eval fork gpqa_*_cot_zeroshot v1.0, strict-match and flexible-extract; " + gpqaLayout
	gpqaGenInfo = "GPQA few-shot generative, lm-eval fork gpqa_*_generative_n_shot v2.0 (5-shot, examples sampled like lm-eval), strict-match and flexible-extract; " + gpqaLayout
	gpqaMCInfo  = "GPQA zero-shot multiple choice by log-likelihood, lm-eval fork gpqa_*_zeroshot v1.0 (completions API only); " + gpqaLayout
)
