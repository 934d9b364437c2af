package tasks

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// RULER's needle-in-a-haystack documents follow upstream lm-eval's
// lm_eval/tasks/ruler (niah_single_1.yaml and the niah_*.yaml that include
// it, niah_utils.py, prepare_niah.py, common_utils.py). lm-eval builds them
// at run time with the model's tokenizer: a haystack of filler lines grows
// by 25 lines until the prompt plus the answers plus 128 tokens to
// generate would pass max_seq_length, then 500 samples are drawn at that
// size, each shrunk by 25 lines while its prompt plus 128 tokens does not
// fit. ttis counts the tokens with the evaluated server's own /tokenize
// (special tokens added, as a Hugging Face tokenizer call does), and draws
// keys, values, positions and distractors from a port of CPython's random
// module seeded as `lm_eval --seed S` seeds it (S = 42 by default, the
// seed tt-inference-server passes; Source.Seed overrides it).
//
// Which RULER subtasks ttis generates, and why not the others:
//   - niah_multikey_3 (uuid keys and values in a haystack of distractor
//     needles) needs nothing but the tokenizer and the random module, and
//     is reproduced as `lm_eval --tasks niah_multikey_3` generates it;
//     ruler_vt (ruler_vt.go, numpy's generator as well), ruler_fwe
//     (ruler_fwe.go, with the float caveat written there), ruler_qa_hotpot
//     and ruler_qa_squad (ruler_qa.go, Hub data) likewise.
//   - niah_single_1 (repeated filler) and niah_multikey_2 (distractor
//     needles) draw their keys from WORDS, the sorted adjective-noun pairs
//     of wonderwords' default lists (ruler_words.go). ttis does not ship
//     the lists: --dataset names the assets folder of the wonderwords
//     package the user's lm-eval would import, and the pairs then match
//     (checked on wonderwords 3.0.0's lists: 6,171,620 pairs, first
//     "Early-ATM", last "zonked-zucchini", as Python sorts them).
//     ruler_cwe (ruler_cwe.go) takes its words from the same folder.
//   - The essay tasks (niah_single_2, niah_single_3, niah_multikey_1,
//     niah_multivalue, niah_multiquery; ruler_essay.go) cut
//     baber/paul_graham_essays into sentences with NLTK's sent_tokenize,
//     which ttis reproduces with a port of the Punkt tokenizer
//     (internal/punkt) reading the user's punkt_tab files; their keys are
//     WORDS pairs too. --dataset names one folder holding the word lists
//     and the Punkt parameters; the essays are Hub data, pulled like any
//     task's split.
//   - The `ruler` group (the unweighted mean of its 13 subtasks' "4096")
//     stays not runnable. lm-eval seeds random and numpy once
//     (evaluator.py simple_evaluate, before get_task_dict) and each subtask
//     draws its documents from that shared state while it is constructed
//     (ConfigurableTask.__init__ calls download, which calls
//     custom_dataset), so a subtask's documents in the group depend on
//     every subtask built before it. The order is version-dependent:
//     lm-eval v0.4.9 (the first with RULER) to v0.4.11, and the v0.4.9
//     base of the TT fork (tstescoTT/lm-evaluation-harness branch
//     adam/rebase-elutherai, 4acd692), build a group's members as map(fn, reversed(subtask_list))
//     in lm_eval/tasks/__init__.py (ruler_qa_hotpot first, niah_single_1
//     last); v0.4.12 and later build them in list order
//     (lm_eval/tasks/_factory.py _build_group_members). The branch
//     tt-inference-server pins (evals-common) is in no source ttis could
//     read, so which order its group runs cannot be settled, and ttis
//     runs no group whose documents it cannot reproduce.
//
// Scoring is common_utils.process_results: the prediction stripped (and
// control characters turned into newlines), then the share of gold values
// found in it case-insensitively (string_match_all), reported under the
// document's max_seq_length ("4096"); every document also reports "4096"
// as -1 unless it is 4096 long, and aggregate_metrics means the values
// other than -1 (-1 when there are none), with no standard error.

// rulerNIAH is one needle-in-a-haystack configuration (the arguments its
// niah_utils function passes to generate_samples).
type rulerNIAH struct {
	name     string
	haystack string // "repeat", "needle" or "essay"
	typeK    string // "words", "numbers" or "uuids"
	typeV    string
	numK     int
	numV     int
	numQ     int
}

const (
	rulerTemplate = "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
	rulerNeedle   = "One of the special magic {type_needle_v} for {key} is: {value}."
	rulerRepeat   = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
	// rulerToGenerate is generate_samples' tokens_to_generate, which the
	// niah functions leave at its default.
	rulerToGenerate = 128
	// rulerNumSamples is num_samples per sequence length.
	rulerNumSamples = 500
	// rulerShuffleSeed is generate_samples' random_seed, which seeds only
	// the needles' shuffle (random.Random(42)).
	rulerShuffleSeed = 42
	// rulerDefaultSeed is the global generator's seed: tt-inference-server
	// runs lm_eval with --seed 42.
	rulerDefaultSeed = 42
)

// rulerMetricLengths are the metric_list of niah_single_1.yaml.
var rulerMetricLengths = []int{4096, 8192, 16384, 32768, 65536, 131072}

var rulerTasks = []rulerNIAH{
	{name: "niah_single_1", haystack: "repeat", typeK: "words", typeV: "numbers", numK: 1, numV: 1, numQ: 1},
	{name: "niah_multikey_2", haystack: "needle", typeK: "words", typeV: "numbers", numK: 1, numV: 1, numQ: 1},
	{name: "niah_multikey_3", haystack: "needle", typeK: "uuids", typeV: "uuids", numK: 1, numV: 1, numQ: 1},
	{name: "niah_single_2", haystack: "essay", typeK: "words", typeV: "numbers", numK: 1, numV: 1, numQ: 1},
	{name: "niah_single_3", haystack: "essay", typeK: "words", typeV: "uuids", numK: 1, numV: 1, numQ: 1},
	{name: "niah_multikey_1", haystack: "essay", typeK: "words", typeV: "numbers", numK: 4, numV: 1, numQ: 1},
	{name: "niah_multivalue", haystack: "essay", typeK: "words", typeV: "numbers", numK: 1, numV: 4, numQ: 1},
	{name: "niah_multiquery", haystack: "essay", typeK: "words", typeV: "numbers", numK: 1, numV: 1, numQ: 4},
}

// usesWords says the task's keys or values are wonderwords pairs.
func (s rulerNIAH) usesWords() bool { return s.typeK == "words" || s.typeV == "words" }

func init() {
	for _, spec := range rulerTasks {
		desc := "RULER " + spec.name + ": documents generated at run time, cut to max_seq_length (default 4096) with the server's own /tokenize; string_match_all reported under the length (\"4096\")"
		if spec.haystack == "essay" {
			desc += "; its haystack is baber/paul_graham_essays (pulled from the Hub) cut into sentences by NLTK's Punkt: --dataset " + spec.name + "=DIR names a folder holding " + essayWordsDir + "/ (wonderwords' assets) and " + essayPunktDir + "/ (NLTK's tokenizers/punkt_tab/english), neither shipped"
		} else if spec.usesWords() {
			desc += "; its keys come from wonderwords' word lists, not shipped: --dataset " + spec.name + "=DIR names the installed package's assets folder"
		}
		var data []HubData
		if spec.haystack == "essay" {
			data = essayData
		}
		register(Info{Name: spec.name, Output: evalsuite.GenerateUntil, Builtin: true,
			Description: desc, Data: data,
			Follows: "lm-eval lm_eval/tasks/ruler/" + spec.name + ".yaml v1.0, niah_utils.py, prepare_niah.py, common_utils.py"},
			buildRulerNIAH(spec))
	}
}

// niahGen draws one task's documents.
type niahGen struct {
	spec  rulerNIAH
	rnd   *pyrand.Rand
	count func(string) (int, error)
	words *wonderwordsPairs
	essay *essayHaystack
}

// random is prepare_niah's generate_random.
func (g *niahGen) random(kind string) (string, error) {
	switch kind {
	case "numbers":
		return strconv.Itoa(g.rnd.RandInt(1000000, 9999999)), nil
	case "words":
		if g.words == nil {
			break
		}
		return g.words.at(int(g.rnd.Below(uint32(g.words.len())))), nil
	case "uuids":
		hi, lo := g.rnd.GetRandBits128()
		// uuid.UUID(int=..., version=4): variant 10, version 4.
		lo = lo&^(0xc000<<48) | 0x8000<<48
		hi = hi&^(0xf000) | 0x4000
		s := fmt.Sprintf("%016x%016x", hi, lo)
		return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:], nil
	}
	return "", fmt.Errorf("ruler: needles of type %q are not generated by ttis", kind)
}

// errTooFewLines is Python's ValueError from random.sample when the
// haystack has fewer lines than there are needles.
var errTooFewLines = fmt.Errorf("ruler: haystack has fewer lines than needles")

// inputOutput is prepare_niah's generate_input_output for the repeat and
// needle haystacks.
func (g *niahGen) inputOutput(numHaystack int) (input string, answers []string, query string, err error) {
	s := g.spec
	numK := max(s.numK, s.numQ)
	var keys []string
	var values [][]string
	var needles []string
	for range numK {
		k, err := g.random(s.typeK)
		if err != nil {
			return "", nil, "", err
		}
		keys = append(keys, k)
		var vals []string
		for range s.numV {
			v, err := g.random(s.typeV)
			if err != nil {
				return "", nil, "", err
			}
			vals = append(vals, v)
			needles = append(needles, rulerFill(rulerNeedle, s.typeV, k, v))
		}
		values = append(values, vals)
	}
	pyrand.New(rulerShuffleSeed).Shuffle(len(needles), func(i, j int) { needles[i], needles[j] = needles[j], needles[i] })

	var context string
	var lines []string
	switch s.haystack {
	case "essay":
		context = g.essayContext(numHaystack, needles)
	case "repeat":
		for range numHaystack {
			lines = append(lines, rulerRepeat)
		}
	case "needle":
		for range numHaystack {
			k, err := g.random(s.typeK)
			if err != nil {
				return "", nil, "", err
			}
			v, err := g.random(s.typeV)
			if err != nil {
				return "", nil, "", err
			}
			lines = append(lines, rulerFill(rulerNeedle, s.typeV, k, v))
		}
	default:
		return "", nil, "", fmt.Errorf("ruler: haystack %q is not generated by ttis", s.haystack)
	}
	if s.haystack != "essay" {
		if len(needles) > numHaystack || numHaystack < 0 {
			return "", nil, "", errTooFewLines
		}
		idx := g.rnd.Sample(numHaystack, len(needles))
		sortDesc(idx)
		for i, at := range idx {
			lines = append(lines[:at], append([]string{needles[i]}, lines[at:]...)...)
		}
		context = strings.Join(lines, "\n")
	}

	picked := g.rnd.Sample(numK, s.numQ)
	var queries []string
	for _, i := range picked {
		queries = append(queries, keys[i])
		answers = append(answers, values[i]...)
	}
	query = queries[0]
	if len(queries) > 1 {
		query = strings.Join(queries[:len(queries)-1], ", ") + ", and " + queries[len(queries)-1]
	}
	tpl, typeV := rulerTemplate, s.typeV
	if s.numQ*s.numV == 1 {
		for _, r := range [][2]string{{"Some", "A"}, {"are all", "is"}, {"are", "is"}, {"answers", "answer"}} {
			tpl = strings.ReplaceAll(tpl, r[0], r[1])
		}
		typeV = typeV[:len(typeV)-1]
	}
	input = strings.NewReplacer("{type_needle_v}", typeV, "{context}", context, "{query}", query).Replace(tpl)
	return input, answers, query, nil
}

// rulerFill formats the needle sentence in one pass, as str.format does.
func rulerFill(tpl, typeV, key, value string) string {
	return strings.NewReplacer("{type_needle_v}", typeV, "{key}", key, "{value}", value).Replace(tpl)
}

func sortDesc(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] > a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// samples is prepare_niah's generate_samples for one max_seq_length.
func (g *niahGen) samples(maxLen, n int) ([]map[string]any, error) {
	incremental := 25
	if g.spec.haystack == "essay" {
		incremental = essayIncremental
	} else if maxLen < 4096 {
		incremental = 5
	}
	numHaystack, total := incremental, 0
	// Each pass adds lines, so the loop ends once the prompt has grown
	// past maxLen; the bound guards against a tokenizer that counts
	// nothing.
	for pass := 0; total+rulerToGenerate < maxLen; pass++ {
		if pass > 1<<20 {
			return nil, fmt.Errorf("ruler: the prompt never reached %d tokens", maxLen)
		}
		input, answers, _, err := g.inputOutput(numHaystack)
		if err != nil {
			return nil, err
		}
		if total, err = g.count(input + strings.Join(answers, " ")); err != nil {
			return nil, err
		}
		if total+rulerToGenerate > maxLen {
			numHaystack -= incremental
			break
		}
		if g.essay != nil && numHaystack > len(g.essay.words) {
			numHaystack = len(g.essay.words)
			break
		}
		numHaystack += incremental
	}
	var out []map[string]any
	for index := range n {
		used := numHaystack
		var input, query string
		var answers []string
		var length int
		// Python retries forever at the smallest size; ttis gives up
		// after a bounded number of tries.
		for try := 0; ; try++ {
			if try > 1000 {
				return nil, fmt.Errorf("ruler: no %s sample fits in %d tokens (%d tokens to generate)", g.spec.name, maxLen, rulerToGenerate)
			}
			var err error
			input, answers, query, err = g.inputOutput(used)
			if err == nil {
				var c int
				if c, err = g.count(input); err != nil {
					return nil, err
				}
				length = c + rulerToGenerate
				if length <= maxLen {
					break
				}
			} else if err != errTooFewLines {
				return nil, err
			}
			if used > incremental {
				used -= incremental
			}
		}
		single := g.spec.numQ*g.spec.numV == 1
		prefix := "The special magic " + g.spec.typeV + " for " + query + " mentioned in the provided text are"
		if single {
			prefix = "The special magic " + g.spec.typeV[:len(g.spec.typeV)-1] + " for " + query + " mentioned in the provided text is"
		}
		outs := make([]any, len(answers))
		for i, a := range answers {
			outs[i] = a
		}
		out = append(out, map[string]any{
			"index": float64(index), "input": input, "outputs": outs, "length": float64(length),
			"max_length": float64(maxLen), "gen_prefix": prefix,
		})
	}
	return out, nil
}

// rulerDocs generates a task's documents: num samples per length, the
// lengths in order, all drawn from one generator seeded once.
func rulerDocs(spec rulerNIAH, src Source) ([]evalsuite.Doc, error) {
	if src.CountTokens == nil {
		return nil, fmt.Errorf("RULER cuts its documents to token lengths with the served model's tokenizer: evaluate against a server that answers /tokenize (vLLM, llama.cpp's server, ttis)")
	}
	lengths := rulerLengths(src)
	n := rulerNumSamples
	if src.Size > 0 {
		n = src.Size
	}
	g := &niahGen{spec: spec, rnd: pyrand.New(rulerSeed(src)), count: src.CountTokens}
	wordsDir := src.Dataset
	if spec.haystack == "essay" {
		h, err := loadEssayHaystack(spec.name, src.Dataset, src.Files[RoleEssays])
		if err != nil {
			return nil, err
		}
		g.essay = h
		wordsDir = filepath.Join(src.Dataset, essayWordsDir)
	}
	if spec.usesWords() {
		w, err := loadWonderwordsPairs(wordsDir)
		if err != nil {
			if spec.haystack == "essay" {
				return nil, fmt.Errorf("%w (for %s: %s)", err, spec.name, essayInputs(spec.name))
			}
			return nil, err
		}
		g.words = w
	}
	var docs []evalsuite.Doc
	for _, l := range lengths {
		if l <= rulerToGenerate {
			return nil, fmt.Errorf("max_seq_lengths: %d leaves no room for the %d tokens to generate", l, rulerToGenerate)
		}
		rows, err := g.samples(l, n)
		if err != nil {
			return nil, fmt.Errorf("max_seq_length %d: %w", l, err)
		}
		for i, r := range rows {
			docs = append(docs, evalsuite.Doc{ID: len(docs), Source: fmt.Sprintf("%s@%d:%d", spec.name, l, i), Fields: r})
		}
	}
	return docs, nil
}

// rulerPostprocess is common_utils.postprocess_pred.
func rulerPostprocess(s string) string {
	s = strings.TrimSpace(s)
	s = strings.Map(func(r rune) rune {
		if r <= 0x1f {
			return '\n'
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// rulerStringMatchAll is string_match_all for one prediction.
func rulerStringMatchAll(pred string, refs []string) float64 {
	if len(refs) == 0 {
		return 0
	}
	p := strings.ToLower(pred)
	hit := 0.0
	for _, r := range refs {
		if strings.Contains(p, strings.ToLower(r)) {
			hit++
		}
	}
	return hit / float64(len(refs))
}

// rulerAggregate is common_utils.aggregate_metrics: the mean of the
// values other than -1, or -1 when none is left.
func rulerAggregate(perDoc [][]float64) float64 {
	sum, n := 0.0, 0
	for _, vs := range perDoc {
		for _, v := range vs {
			if v != -1 {
				sum += v
				n++
			}
		}
	}
	if n == 0 {
		return -1
	}
	return sum / float64(n)
}

func rulerProcess(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	refs, err := d.Strings("outputs")
	if err != nil {
		return nil, err
	}
	l, err := d.Int("max_length")
	if err != nil {
		return nil, err
	}
	s := evalsuite.Scores{"4096": {-1}}
	s[strconv.Itoa(l)] = []float64{rulerStringMatchAll(rulerPostprocess(resp), refs)}
	return s, nil
}

func buildRulerNIAH(spec rulerNIAH) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		docs, err := rulerDocs(spec, src)
		if err != nil {
			return nil, err
		}
		return rulerTask(spec.name, "niah_utils."+spec.name, 128, docs, src), nil
	}
}

// rulerSeed is the seed of lm-eval's global generators (--seed S sets
// Python's and numpy's alike).
func rulerSeed(src Source) int64 {
	if src.Seed != 0 {
		return int64(src.Seed)
	}
	return rulerDefaultSeed
}

// rulerLengths is the max_seq_lengths metadata, 4096 by default.
func rulerLengths(src Source) []int {
	if len(src.SeqLengths) == 0 {
		return []int{4096}
	}
	return src.SeqLengths
}

// rulerTask is niah_single_1.yaml's task, which every RULER task
// includes, with its own documents and generation budget.
func rulerTask(name, customDataset string, maxGen int, docs []evalsuite.Doc, src Source) *evalsuite.Task {
	var metrics []evalsuite.MetricSpec
	var metricCfg []map[string]any
	for _, l := range rulerMetricLengths {
		name := strconv.Itoa(l)
		metrics = append(metrics, evalsuite.MetricSpec{Name: name, Aggregation: "aggregate_metrics", HigherIsBetter: true, Corpus: rulerAggregate})
		metricCfg = append(metricCfg, map[string]any{"metric": name, "aggregation": "aggregate_metrics", "higher_is_better": true})
	}
	lengths := rulerLengths(src)
	return &evalsuite.Task{
		Name: name, Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
		TargetDelimiter: " ",
		DocToText:       func(d evalsuite.Doc) (string, error) { return d.Str("input") },
		// "{{outputs}}" renders the list as Python prints it.
		DocToTarget: func(d evalsuite.Doc) (string, error) {
			o, err := d.Strings("outputs")
			return pyStrListRepr(o), err
		},
		GenPrefix: func(d evalsuite.Doc) (string, error) { return d.Str("gen_prefix") },
		Gen:       evalsuite.GenKwargs{Until: []string{}, MaxGenToks: maxGen, Temperature: 0},
		Process:   rulerProcess,
		Metrics:   metrics,
		Config: map[string]any{
			"task": name, "tag": []string{"longcxt"}, "output_type": "generate_until", "test_split": "test",
			"custom_dataset": customDataset, "doc_to_text": "{{input}}", "doc_to_target": "{{outputs}}",
			"gen_prefix": "{{gen_prefix}}", "target_delimiter": " ", "num_fewshot": 0, "repeats": 1,
			"generation_kwargs": map[string]any{"do_sample": false, "temperature": 0.0, "max_gen_toks": maxGen, "until": []string{}},
			"metric_list":       metricCfg,
			"metadata":          map[string]any{"version": 1.0, "max_seq_lengths": lengths},
		},
	}
}
