// Package tasks is the registry of evaluation tasks: the definitions of
// lm-evaluation-harness, tt-inference-server's lm-eval fork and
// llama-cookbook's meta_eval (each task cites the file it follows), read
// from local files in the dataset's own column layout (the columns of the
// Hugging Face copy, whose location each task declares as data), the
// built-in generated tasks (ttis_arith, ttis_arith_mc,
// ttis_arith_mc_generative, ttis_ifeval) that need no dataset, and the
// tasks the catalog references that ttis cannot run, each with its reason.
package tasks

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/builtin"
	"github.com/ttis-dev/ttis/evalsuite/dataset"
	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/ifeval"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// Source says where a task's documents come from.
type Source struct {
	// Dataset is the local file of the evaluated documents (required for
	// the lm-eval tasks, ignored by built-in ones).
	Dataset string
	// FewShotDataset is the local file few-shot examples are drawn from
	// (the first NumFewShot rows); empty means no examples for dataset
	// tasks and a generated pool for built-in ones.
	FewShotDataset string
	// NumFewShot overrides the task's default; negative keeps the default.
	NumFewShot int
	// Format, Mapping and Columns configure dataset reading.
	Format  string
	Mapping dataset.Mapping
	Columns []string
	// Size is the number of generated documents of a built-in task (0 =
	// the task's default).
	Size int
	// Seed overrides a built-in task's generator seed (0 = default).
	Seed uint64
	// Files are local files of the task's other data roles (see
	// Info.Data), by role; Dataset and FewShotDataset hold RoleTest and
	// RoleFewShot.
	Files map[string]string
	// CountTokens counts a text's tokens with the evaluated server's own
	// tokenizer, special tokens included (what a Hugging Face tokenizer
	// call counts). Tasks that cut generated documents to token lengths
	// (RULER) need it; others ignore it.
	CountTokens func(text string) (int, error)
	// SeqLengths are RULER's max_seq_lengths metadata (empty = [4096]).
	SeqLengths []int
	// Assets is the folder of the task's user-supplied assets
	// (Coverage.Assets; IFEval's punkt_tab/ and langdetect_profiles/),
	// given as --dataset TASK=DIR (IsAssetsFolder); empty: none.
	Assets string
	// Model is the catalog model evaluated; tasks with variants need it.
	Model string
	// Vision opens the networks image and video tasks measure with.
	Vision Vision
	// AssetReplacements, when set, replace published assets by file name
	// with other files, each named by its own digest (tests that create
	// small statistics or weights; a verified local copy under another
	// name).
	AssetReplacements map[string]Asset
}

// asset is a, or the replacement src names for it.
func (src Source) asset(a Asset) Asset {
	if r, ok := src.AssetReplacements[a.File]; ok {
		return r
	}
	return a
}

// Info describes a registered task.
type Info struct {
	Name        string               `json:"name"`
	Output      evalsuite.OutputType `json:"output"`
	Builtin     bool                 `json:"builtin,omitempty"`
	Description string               `json:"description"`
	// Follows names the public definition the task reproduces (file and
	// version), so a reviewer can compare the two.
	Follows string `json:"follows,omitempty"`
	// Data are the Hugging Face dataset splits the task reads, as the
	// definition it follows loads them (empty for built-in tasks).
	Data []HubData `json:"data,omitempty"`
	// NotRunnable, when set, says why ttis cannot run the task; such a
	// task is listed so that verdicts count it as not measured, and Build
	// refuses it with this reason.
	NotRunnable string `json:"not_runnable,omitempty"`
	// NeedsASR says the task has its answers re-transcribed by a second,
	// speech-recognition server (text to speech judged by
	// intelligibility); without one it cannot run.
	NeedsASR bool `json:"needs_asr,omitempty"`
	// Coverage says how far the task reproduces its reference and how
	// that was checked (filled in by register from coverage.go).
	Coverage Coverage `json:"coverage"`
	// Variants, when set, say how the task runs for each catalog model
	// (load_image is image generation, classification or detection by
	// model), each with its own data, operator-supplied assets and
	// weights; Data is then empty.
	Variants []Variant `json:"variants,omitempty"`
}

type builder struct {
	info  Info
	build func(src Source) (*evalsuite.Task, error)
}

// registry holds every task; entries are added by register calls in the
// files that define them.
var registry = map[string]builder{}

// register adds a task; a duplicate name is a programming error.
func register(info Info, build func(Source) (*evalsuite.Task, error)) {
	if _, dup := registry[info.Name]; dup {
		panic("tasks: " + info.Name + " registered twice")
	}
	if build == nil && info.NotRunnable == "" {
		panic("tasks: " + info.Name + " has no builder and no reason it cannot run")
	}
	info.Coverage = coverageOf(info)
	registry[info.Name] = builder{info, build}
}

func init() {
	gen, mc := evalsuite.GenerateUntil, evalsuite.MultipleChoice
	register(Info{Name: "gsm8k", Output: gen, Description: "grade-school math, lm-eval gsm8k v3 (fields question, answer); 5-shot when a few-shot file is given",
		Follows: "lm-eval lm_eval/tasks/gsm8k/gsm8k.yaml v3.0", Data: gsm8kData}, buildGSM8K)
	register(Info{Name: "mmlu", Output: mc, Description: "MMLU by log-likelihood, lm-eval mmlu (fields question, choices or A-D, answer, optional subject); completions API only",
		Follows: "lm-eval lm_eval/tasks/mmlu/default/_default_template_yaml v1.0", Data: mmluData}, buildMMLU)
	register(Info{Name: "mmlu_generative", Output: gen, Description: "MMLU answered with a generated letter (chat-friendly)",
		Follows: "lm-eval lm_eval/tasks/mmlu/generative/_default_template_yaml", Data: mmluData}, buildMMLUGenerative)
	register(Info{Name: "ifeval", Output: gen, Description: "instruction following, all of IFEval's instructions as lm-eval checks them (fields prompt, instruction_id_list, kwargs); --dataset ifeval=DIR names the folder of its assets (" + ifeval.AssetsHelp + "), without which prompts using sentence counting or language detection are errors",
		Follows: "lm-eval lm_eval/tasks/ifeval/ifeval.yaml v4.0", Data: []HubData{{Role: RoleTest, Repo: "google/IFEval", Split: "train", Files: "ifeval_input_data.jsonl"}}}, buildIFEval)
	for _, sub := range []string{"diamond", "main", "extended"} {
		data := gpqaData(sub)
		register(Info{Name: "gpqa_" + sub + "_cot_zeroshot", Output: gen, Description: gpqaCoTInfo,
			Follows: "lm-eval fork lm_eval/tasks/gpqa/cot_zeroshot v1.0", Data: data}, buildGPQACoT("gpqa_"+sub+"_cot_zeroshot"))
		register(Info{Name: "gpqa_" + sub + "_generative_n_shot", Output: gen, Description: gpqaGenInfo,
			Follows: "lm-eval fork lm_eval/tasks/gpqa/generative v2.0", Data: data}, buildGPQAGenerativeNShot("gpqa_"+sub+"_generative_n_shot"))
		register(Info{Name: "gpqa_" + sub + "_zeroshot", Output: mc, Description: gpqaMCInfo,
			Follows: "lm-eval fork lm_eval/tasks/gpqa/zeroshot v1.0", Data: data}, buildGPQAZeroShot("gpqa_"+sub+"_zeroshot"))
	}
	register(Info{Name: "meta_gpqa", Output: gen, Description: metaGPQAInfo,
		Follows: "llama-cookbook meta_eval/meta_template/gpqa/gpqa_0shot.yaml v1.0", Data: metaDetails("gpqa")}, metaGPQATask("meta_gpqa", ` ([A-Z])`, false))
	register(Info{Name: "meta_gpqa_cot", Output: gen, Description: metaGPQACoTInfo,
		Follows: "llama-cookbook meta_eval/meta_template/gpqa_cot/gpqa_0shot_cot.yaml v1.0", Data: metaDetails("gpqa")}, metaGPQATask("meta_gpqa_cot", `best answer is ([A-Z])`, true))
	register(Info{Name: "r1_gpqa_diamond", Output: gen, Description: "GPQA diamond with a boxed-letter reasoning answer, the tt-inference-server lm-eval fork's r1_gpqa_diamond (exact_match,none); " + gpqaLayout,
		Follows: "lm-eval fork lm_eval/tasks/r1_evals/gpqa_reasoning_diamond.yaml v1.0", Data: gpqaData("diamond")}, buildR1GPQA)
	register(Info{Name: "mmlu_pro", Output: gen, Description: "MMLU-Pro, lm-eval fork mmlu_pro v2.1: chain of thought per category, letter after \"answer is\" (fields question, options, answer, category; cot_content in the few-shot file); 5-shot when a few-shot file is given",
		Follows: "lm-eval fork lm_eval/tasks/mmlu_pro/_default_template_yaml v2.1", Data: mmluProData}, buildMMLUPro)
	register(Info{Name: "ttis_arith", Output: gen, Builtin: true, Description: "generated arithmetic word problems, GSM8K format and filters (default 200 docs, 3-shot)"}, buildArith)
	register(Info{Name: "ttis_arith_mc", Output: mc, Builtin: true, Description: "generated arithmetic multiple choice, MMLU format, by log-likelihood (default 200 docs)"}, buildArithMC)
	register(Info{Name: "ttis_arith_mc_generative", Output: gen, Builtin: true, Description: "generated arithmetic multiple choice answered with a letter (chat-friendly)"}, buildArithMCGen)
	register(Info{Name: "ttis_ifeval", Output: gen, Builtin: true, Description: "generated IFEval-style prompts with one or two verifiable instructions (default 100 docs)"}, buildBuiltinIFEval)
}

// List returns every task, sorted by name.
func List() []Info {
	out := make([]Info, 0, len(registry))
	for _, b := range registry {
		out = append(out, b.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InfoOf describes the named task.
func InfoOf(name string) (Info, bool) {
	b, ok := registry[name]
	return b.info, ok
}

// Build returns the named task with its documents loaded.
func Build(name string, src Source) (*evalsuite.Task, error) {
	b, ok := registry[name]
	if !ok {
		names := make([]string, 0, len(registry))
		for k := range registry {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown task %q (known: %s)", name, strings.Join(names, ", "))
	}
	if b.info.NotRunnable != "" {
		return nil, fmt.Errorf("task %s cannot run in ttis: %s", name, b.info.NotRunnable)
	}
	if !b.info.Builtin && len(b.info.Variants) == 0 && src.Dataset == "" && len(src.Files) == 0 {
		return nil, fmt.Errorf("task %s reads a local dataset file in the dataset's own column layout: pass its path (or pull %s)", name, describeData(b.info.Data))
	}
	t, err := b.build(src)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	if len(t.Docs) == 0 {
		return nil, fmt.Errorf("task %s: dataset %s has no documents", name, src.Dataset)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

func load(path string, src Source) ([]evalsuite.Doc, error) {
	if path == "" {
		return nil, nil
	}
	opts := dataset.Options{Format: src.Format, Mapping: src.Mapping, Columns: src.Columns}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		// A split kept as several shards (see evalsuite/taskdata).
		return dataset.LoadDir(path, opts)
	}
	return dataset.Load(path, opts)
}

// fewShot loads the example pool and settles the shot count.
func fewShot(src Source, def int) ([]evalsuite.Doc, int, error) {
	pool, err := load(src.FewShotDataset, src)
	if err != nil {
		return nil, 0, fmt.Errorf("few-shot dataset: %w", err)
	}
	for _, d := range pool {
		if d.Invalid != nil {
			return nil, 0, fmt.Errorf("few-shot dataset: %w", d.Invalid)
		}
	}
	n := def
	if src.FewShotDataset == "" {
		n = 0
	}
	if src.NumFewShot >= 0 {
		n = src.NumFewShot
	}
	return pool, n, nil
}

// gsm8kExactMatch is gsm8k's exact_match configuration.
func gsm8kExactMatch() *metric.ExactMatchOptions {
	return &metric.ExactMatchOptions{IgnoreCase: true, RegexesToIgnore: []string{",", `\$`, `(?s).*#### `, `\.$`}}
}

func gsm8kTask(name string, docs, pool []evalsuite.Doc, shots int) *evalsuite.Task {
	return &evalsuite.Task{
		Name: name, Version: "3", Output: evalsuite.GenerateUntil,
		Docs: docs, FewShot: pool, NumFewShot: shots,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToText: func(d evalsuite.Doc) (string, error) {
			q, err := d.Str("question")
			return "Question: " + q + "\nAnswer:", err
		},
		DocToTarget: func(d evalsuite.Doc) (string, error) { return d.Str("answer") },
		Gen:         evalsuite.GenKwargs{Until: []string{"Question:", "</s>", "<|im_end|>"}, MaxGenToks: 256, Temperature: 0},
		Filters:     []filter.Chain{filter.GSM8KStrict(), filter.GSM8KFlexible()},
		Metrics:     []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true, ExactMatch: gsm8kExactMatch()}},
		Config: map[string]any{
			"task": name, "output_type": "generate_until", "doc_to_text": "Question: {{question}}\nAnswer:",
			"doc_to_target": "{{answer}}", "target_delimiter": " ", "fewshot_delimiter": "\n\n", "num_fewshot": shots,
			"generation_kwargs": map[string]any{"until": []string{"Question:", "</s>", "<|im_end|>"}, "do_sample": false, "temperature": 0.0, "max_gen_toks": 256},
			"filter_list": []map[string]any{
				{"name": "strict-match", "filter": []map[string]any{{"function": "regex", "regex_pattern": `#### (\-?[0-9\.\,]+)`}, {"function": "take_first"}}},
				{"name": "flexible-extract", "filter": []map[string]any{{"function": "regex", "group_select": -1, "regex_pattern": `(-?[$0-9.,]{2,})|(-?[0-9]+)`}, {"function": "take_first"}}},
			},
			"metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true, "ignore_case": true, "ignore_punctuation": false, "regexes_to_ignore": []string{",", `\$`, `(?s).*#### `, `\.$`}}},
		},
	}
}

func buildGSM8K(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	pool, shots, err := fewShot(src, 5)
	if err != nil {
		return nil, err
	}
	return gsm8kTask("gsm8k", docs, pool, shots), nil
}

func buildArith(src Source) (*evalsuite.Task, error) {
	n := src.Size
	if n <= 0 {
		n = 200
	}
	seed := src.Seed
	if seed == 0 {
		seed = builtin.TestSeed
	}
	shots := 3
	if src.NumFewShot >= 0 {
		shots = src.NumFewShot
	}
	docs := builtin.Arithmetic(n, seed, "ttis_arith")
	pool := builtin.Arithmetic(max(shots, 1), seed+1, "ttis_arith_fewshot")
	t := gsm8kTask("ttis_arith", docs, pool, shots)
	t.Version = "1"
	t.Config["task"] = "ttis_arith"
	t.Config["dataset"] = map[string]any{"generator": "builtin.Arithmetic", "size": n, "seed": seed}
	return t, nil
}

// mmluQuestion formats lm-eval's MMLU prompt; choices come from a choices
// list or from A-D columns (the original CSV layout).
func mmluChoices(d evalsuite.Doc) ([]string, error) {
	if _, ok := d.Fields["choices"]; ok {
		return d.Strings("choices")
	}
	out := make([]string, 4)
	for i, k := range []string{"A", "B", "C", "D"} {
		v, err := d.Str(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func mmluText(d evalsuite.Doc) (string, error) {
	q, err := d.Str("question")
	if err != nil {
		return "", err
	}
	choices, err := mmluChoices(d)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(q))
	for i, c := range choices {
		fmt.Fprintf(&b, "\n%s. %s", metric.Letter(i), c)
	}
	b.WriteString("\nAnswer:")
	return b.String(), nil
}

// mmluGold accepts an index (0-3) or a letter.
func mmluGold(d evalsuite.Doc) (int, error) {
	if s, ok := d.Fields["answer"].(string); ok {
		s = strings.TrimSpace(s)
		if len(s) == 1 && s[0] >= 'A' && s[0] <= 'Z' {
			return int(s[0] - 'A'), nil
		}
	}
	return d.Int("answer")
}

func letters(d evalsuite.Doc) ([]string, error) {
	c, err := mmluChoices(d)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(c))
	for i := range c {
		out[i] = metric.Letter(i)
	}
	return out, nil
}

// mmluSubject is a document's subject, or "" when the file has none.
func mmluSubject(d evalsuite.Doc) string {
	s, _ := d.Fields["subject"].(string)
	return strings.TrimSpace(s)
}

func mmluDescription(d evalsuite.Doc) string {
	s := mmluSubject(d)
	if s == "" {
		return ""
	}
	return "The following are multiple choice questions (with answers) about " + strings.ReplaceAll(s, "_", " ") + ".\n\n"
}

// hasSubjects reports whether the documents carry more than one subject,
// which makes the task a group of per-subject subtasks.
func hasSubjects(docs []evalsuite.Doc) bool {
	first := ""
	for _, d := range docs {
		s := mmluSubject(d)
		if s == "" {
			continue
		}
		if first == "" {
			first = s
		} else if s != first {
			return true
		}
	}
	return false
}

func mmluTask(name string, docs, pool []evalsuite.Doc, shots int) *evalsuite.Task {
	return &evalsuite.Task{
		Name: name, Version: "1", Output: evalsuite.MultipleChoice,
		DescriptionFor: mmluDescription,
		Docs:           docs, FewShot: pool, NumFewShot: shots,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToText:    mmluText,
		DocToChoices: letters,
		DocToGold:    mmluGold,
		Metrics: []evalsuite.MetricSpec{
			{Name: "acc", Aggregation: "mean", HigherIsBetter: true},
			{Name: "acc_norm", Aggregation: "mean", HigherIsBetter: true},
		},
		Config: map[string]any{
			"task": name, "output_type": "multiple_choice",
			"doc_to_text":   "{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\nD. {{choices[3]}}\nAnswer:",
			"doc_to_choice": []string{"A", "B", "C", "D"}, "doc_to_target": "answer", "num_fewshot": shots,
			"target_delimiter": " ", "fewshot_delimiter": "\n\n",
			"metric_list": []map[string]any{{"metric": "acc", "aggregation": "mean", "higher_is_better": true}, {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": true}},
		},
	}
}

// generativeLetter turns a lettered multiple-choice task into
// generate_until: the model writes the letter, scored with
// mmlu_generative's get_response filter and a letter-extract filter (the
// first standalone capital letter among the four answer letters A-D),
// exact_match ignoring case and punctuation.
func generativeLetter(mc *evalsuite.Task, name string) *evalsuite.Task {
	t := *mc
	t.Name = name
	t.Output = evalsuite.GenerateUntil
	t.DocToTarget = func(d evalsuite.Doc) (string, error) {
		g, err := mc.DocToGold(d)
		if err != nil {
			return "", err
		}
		return metric.Letter(g), nil
	}
	t.DocToChoices, t.DocToGold = nil, nil
	t.Gen = evalsuite.GenKwargs{Until: []string{"</s>", "\n"}, MaxGenToks: 16, Temperature: 0}
	letterExtract := filter.Chain{Name: "letter-extract", Steps: []filter.Step{filter.MustRegex(`\b([A-D])\b`, 0), filter.TakeFirst{}}}
	t.Filters = []filter.Chain{filter.GetResponse(), letterExtract}
	t.Metrics = []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true, ExactMatch: &metric.ExactMatchOptions{IgnoreCase: true, IgnorePunctuation: true}}}
	cfg := map[string]any{}
	for k, v := range mc.Config {
		cfg[k] = v
	}
	cfg["task"] = name
	cfg["output_type"] = "generate_until"
	cfg["doc_to_target"] = "{{['A','B','C','D'][answer]}}"
	cfg["generation_kwargs"] = map[string]any{"until": []string{"</s>", "\n"}, "max_gen_toks": 16, "temperature": 0.0, "do_sample": false}
	cfg["filter_list"] = []map[string]any{
		{"name": "get_response", "filter": []map[string]any{{"function": "regex", "regex_pattern": `^(.*?)(?=\n|$)`}, {"function": "remove_whitespace"}, {"function": "take_first"}}},
		{"name": "letter-extract", "filter": []map[string]any{{"function": "regex", "regex_pattern": `\b([A-D])\b`}, {"function": "take_first"}}},
	}
	cfg["metric_list"] = []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true, "ignore_case": true, "ignore_punctuation": true}}
	delete(cfg, "doc_to_choice")
	t.Config = cfg
	return &t
}

func buildMMLU(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	pool, shots, err := fewShot(src, 5)
	if err != nil {
		return nil, err
	}
	t := mmluTask("mmlu", docs, pool, shots)
	if hasSubjects(docs) {
		t.SubtaskOf = func(d evalsuite.Doc) string {
			if s := mmluSubject(d); s != "" {
				return "mmlu_" + s
			}
			return "mmlu_unknown_subject"
		}
	}
	return t, nil
}

func buildMMLUGenerative(src Source) (*evalsuite.Task, error) {
	t, err := buildMMLU(src)
	if err != nil {
		return nil, err
	}
	return generativeLetter(t, "mmlu_generative"), nil
}

func arithMC(src Source, name string) *evalsuite.Task {
	n := src.Size
	if n <= 0 {
		n = 200
	}
	seed := src.Seed
	if seed == 0 {
		seed = builtin.TestSeed
	}
	shots := 3
	if src.NumFewShot >= 0 {
		shots = src.NumFewShot
	}
	docs := builtin.MultipleChoice(n, seed, name)
	pool := builtin.MultipleChoice(max(shots, 1), seed+1, name+"_fewshot")
	t := mmluTask(name, docs, pool, shots)
	t.Config["dataset"] = map[string]any{"generator": "builtin.MultipleChoice", "size": n, "seed": seed}
	return t
}

func buildArithMC(src Source) (*evalsuite.Task, error) {
	return arithMC(src, "ttis_arith_mc"), nil
}

func buildArithMCGen(src Source) (*evalsuite.Task, error) {
	return generativeLetter(arithMC(src, "ttis_arith_mc_generative"), "ttis_arith_mc_generative"), nil
}

func buildIFEval(src Source) (*evalsuite.Task, error) {
	c, err := ifevalChecker(src)
	if err != nil {
		return nil, err
	}
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	return ifevalTask("ifeval", docs, c), nil
}

// ifevalChecker reads the user's IFEval assets folder, if one was given.
func ifevalChecker(src Source) (*ifeval.Checker, error) {
	if src.Assets == "" {
		return &ifeval.Checker{}, nil
	}
	return ifeval.LoadAssets(src.Assets)
}

func buildBuiltinIFEval(src Source) (*evalsuite.Task, error) {
	n := src.Size
	if n <= 0 {
		n = 100
	}
	seed := src.Seed
	if seed == 0 {
		seed = builtin.TestSeed
	}
	c, err := ifevalChecker(src)
	if err != nil {
		return nil, err
	}
	t := ifevalTask("ttis_ifeval", builtin.Instructions(n, seed, "ttis_ifeval"), c)
	t.Version = "1"
	t.Config["dataset"] = map[string]any{"generator": "builtin.Instructions", "size": n, "seed": seed}
	return t, nil
}

func ifevalTask(name string, docs []evalsuite.Doc, c *ifeval.Checker) *evalsuite.Task {
	return &evalsuite.Task{
		Name: name, Version: "4", Output: evalsuite.GenerateUntil, Docs: docs,
		DocToText: func(d evalsuite.Doc) (string, error) { return d.Str("prompt") },
		Gen:       evalsuite.GenKwargs{Until: nil, MaxGenToks: 1280, Temperature: 0},
		Process:   func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) { return processIFEval(c, d, resp) },
		Metrics: []evalsuite.MetricSpec{
			{Name: "prompt_level_strict_acc", Aggregation: "mean", HigherIsBetter: true},
			{Name: "inst_level_strict_acc", Aggregation: "agg_inst_level_acc", HigherIsBetter: true},
			{Name: "prompt_level_loose_acc", Aggregation: "mean", HigherIsBetter: true},
			{Name: "inst_level_loose_acc", Aggregation: "agg_inst_level_acc", HigherIsBetter: true},
		},
		Config: map[string]any{
			"task": name, "output_type": "generate_until", "doc_to_text": "prompt", "num_fewshot": 0,
			"generation_kwargs":      map[string]any{"until": []string{}, "do_sample": false, "temperature": 0.0, "max_gen_toks": 1280},
			"supported_instructions": ifeval.Supported(),
			"assets":                 ifevalAssetsConfig(c),
		},
	}
}

// truthy mirrors Python truthiness, which lm-eval uses to drop unset
// IFEval arguments (None, 0, "", empty lists and objects).
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case float64:
		return x != 0
	case bool:
		return x
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// ifevalAssetsConfig records which assets scored the run.
func ifevalAssetsConfig(c *ifeval.Checker) map[string]any {
	m := map[string]any{"langdetect_seed": c.Seed}
	if c.Punkt != nil {
		m["punkt_tab"] = c.PunktPath
	}
	if c.Langs != nil {
		m["langdetect_profiles"] = c.LangsPath
	}
	return m
}

func processIFEval(c *ifeval.Checker, d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	ids, err := d.Strings("instruction_id_list")
	if err != nil {
		return nil, err
	}
	raw, ok := d.Fields["kwargs"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: field \"kwargs\" must be a list of objects", d.Source)
	}
	kws := make([]ifeval.Kwargs, len(raw))
	for i, k := range raw {
		m, ok := k.(map[string]any)
		if !ok && k != nil {
			return nil, fmt.Errorf("%s: kwargs[%d] is a %T, want an object", d.Source, i, k)
		}
		kw := ifeval.Kwargs{}
		for key, v := range m {
			if truthy(v) {
				kw[key] = v
			}
		}
		kws[i] = kw
	}
	res, err := c.Check(resp, ids, kws)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Source, err)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	s := evalsuite.Scores{
		"prompt_level_strict_acc": {b(res.PromptStrict())},
		"prompt_level_loose_acc":  {b(res.PromptLoose())},
	}
	for i := range res.Strict {
		s["inst_level_strict_acc"] = append(s["inst_level_strict_acc"], b(res.Strict[i]))
		s["inst_level_loose_acc"] = append(s["inst_level_loose_acc"], b(res.Loose[i]))
	}
	return s, nil
}
