package tasks

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/internal/pyrand"
)

// mmmu_val follows lmms-eval v0.4.1 lmms_eval/tasks/mmmu/mmmu_val.yaml,
// _default_template_yaml and utils.py, run by tt-inference-server with
// --model openai_compatible (the chat model, which sends
// mmmu_doc_to_messages) and --seed 42.
//
// The prompt is construct_prompt with the "format" kwargs: the question,
// for multiple choice the options lettered "A. ..." and the
// multiple-choice instruction, else the open-ended one. doc_to_messages
// turns <image 1>..<image 7> into <image>, splits the text there, and
// builds one user message of the stripped text pieces (blank ones
// dropped) each followed by an image, in the order of the sorted distinct
// image fields, then the stripped last piece (sent even when empty);
// images go as PNG data URLs. max_new_tokens 16, temperature 0.
//
// Scoring is mmmu_process_results and mmmu_aggregate_results: a
// multiple-choice answer is parsed by parse_multi_choice_response, and
// when it names no option lmms-eval picks one with random.choice from
// Python's global generator, which lmms-eval's simple_evaluate seeds with
// --seed's first value (tt-inference-server passes 42; lmms-eval's own
// default is 0). ttis draws those choices with a CPython-compatible
// MT19937 seeded the same way, in document order, at aggregation (the
// order lmms-eval calls process_results in): this equals lmms-eval's
// draws when mmmu_val is the first user of the freshly seeded generator
// (one task per run, as tt-inference-server runs it). Source.Seed
// overrides the seed. Open questions are scored as v0.4.1 scores them,
// which is never correct unless the gold answer is blank (see
// mmmuOpenCorrect). The result is mmmu_acc,none: the accuracy over all
// documents, computed as calculate_ins_level_acc over the subjects and
// rounded to 5 decimals; MMMUBreakdown gives lmms-eval's printed
// per-subject and per-domain table.
//
// Differences: a document whose request failed counts as wrong (ttis's
// error policy) where lmms-eval would parse an empty answer, though it
// still takes the random draw that empty answer takes, so later draws
// stay aligned; with the exclude policy it takes none.
const mmmuDefaultSeed = 42

const (
	mmmuMCPrompt   = "Answer with the option's letter from the given choices directly."
	mmmuOpenPrompt = "Answer the question using a single word or phrase."
)

// mmmuDomains is DOMAIN_CAT2SUB_CAT, in its order.
var mmmuDomains = []struct {
	Name     string
	Subjects []string
}{
	{"Art and Design", []string{"Art", "Art_Theory", "Design", "Music"}},
	{"Business", []string{"Accounting", "Economics", "Finance", "Manage", "Marketing"}},
	{"Science", []string{"Biology", "Chemistry", "Geography", "Math", "Physics"}},
	{"Health and Medicine", []string{"Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine", "Pharmacy", "Public_Health"}},
	{"Humanities and Social Science", []string{"History", "Literature", "Sociology", "Psychology"}},
	{"Tech and Engineering", []string{"Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics", "Energy_and_Power", "Materials", "Mechanical_Engineering"}},
}

var mmmuImageToken = regexp.MustCompile(`<image \d+>`)

func init() {
	register(Info{Name: "mmmu_val", Output: evalsuite.GenerateUntil,
		Description: "MMMU validation (lmms-lab/MMMU), lmms-eval's mmmu_val: question and lettered options with images interleaved at their <image N> markers as PNG data URLs, mmmu_acc (multiple-choice fallback drawn like Python's random seeded 42); chat API only (fields id, question, options, answer, question_type, image_1..image_7)",
		Follows:     "lmms-eval v0.4.1 lmms_eval/tasks/mmmu/mmmu_val.yaml, _default_template_yaml and utils.py",
		Data:        []HubData{parquetSplit(RoleTest, "lmms-lab/MMMU", "", "validation")}}, buildMMMUVal)
}

// mmmuQuestion is construct_prompt.
func mmmuQuestion(d evalsuite.Doc, mc, open string) (string, error) {
	q, err := d.Str("question")
	if err != nil {
		return "", err
	}
	kind, err := d.Str("question_type")
	if err != nil {
		return "", err
	}
	if kind != "multiple-choice" {
		return q + "\n\n" + open, nil
	}
	opts, err := mmmuOptions(d)
	if err != nil {
		return "", err
	}
	lines := make([]string, len(opts))
	for i, o := range opts {
		lines[i] = string(rune('A'+i)) + ". " + o
	}
	return q + "\n" + strings.Join(lines, "\n") + "\n\n" + mc, nil
}

func mmmuOptions(d evalsuite.Doc) ([]string, error) {
	raw, err := d.Str("options")
	if err != nil {
		return nil, err
	}
	opts, err := pyListOfStrings(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: field \"options\": %w", d.Source, err)
	}
	return opts, nil
}

// mmmuText is mmmu_doc_to_text once doc_to_messages has switched on the
// interleaved format: <image 1>..<image 7> become <image>.
func mmmuText(d evalsuite.Doc) (string, error) {
	q, err := mmmuQuestion(d, mmmuMCPrompt, mmmuOpenPrompt)
	if err != nil {
		return "", err
	}
	for i := 1; i < 8; i++ {
		q = strings.ReplaceAll(q, "<image "+strconv.Itoa(i)+">", "<image>")
	}
	return q, nil
}

// mmmuVisualFields is mmmu_doc_to_visual's field list: the distinct
// <image N> markers of the prompt, as image_N, sorted as text.
func mmmuVisualFields(d evalsuite.Doc) ([]string, error) {
	q, err := mmmuQuestion(d, "", "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, tok := range mmmuImageToken.FindAllString(q, -1) {
		f := strings.ReplaceAll(strings.Trim(tok, "<>"), " ", "_")
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil
}

// mmmuParts is mmmu_doc_to_messages' content.
func mmmuParts(d evalsuite.Doc) ([]evalsuite.ContentPart, error) {
	text, err := mmmuText(d)
	if err != nil {
		return nil, err
	}
	fields, err := mmmuVisualFields(d)
	if err != nil {
		return nil, err
	}
	pieces := strings.Split(text, "<image>")
	var parts []evalsuite.ContentPart
	for i := 0; i < len(fields) && i < len(pieces); i++ {
		if t := pyStrip(pieces[i]); t != "" {
			parts = append(parts, evalsuite.ContentPart{Text: t})
		}
		v, ok := d.Fields[fields[i]]
		if !ok || v == nil {
			return nil, fmt.Errorf("%s: the prompt shows <%s> but field %q has no image", d.Source, strings.ReplaceAll(fields[i], "_", " "), fields[i])
		}
		u, err := ImageDataURL(v)
		if err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", d.Source, fields[i], err)
		}
		parts = append(parts, evalsuite.ContentPart{ImageURL: u})
	}
	return append(parts, evalsuite.ContentPart{Text: pyStrip(pieces[len(pieces)-1])}), nil
}

// mmmuSubject is extract_subset_name: "validation_Art_Theory_12" gives
// "Art_Theory".
func mmmuSubject(id string) (string, error) {
	prefix, rest, ok := strings.Cut(id, "_")
	if ok {
		if k := strings.LastIndex(rest, "_"); k > 0 {
			num := rest[k+1:]
			if num != "" && strings.IndexFunc(num, func(r rune) bool { return !pyIsDigit(r) }) < 0 && !strings.Contains(rest[:k], "\n") {
				return rest[:k], nil
			}
		}
	}
	return "", fmt.Errorf("id %q is not %s_<subject>_<number>", id, prefix)
}

// The outcome slot of a document's mmmu_acc values.
const (
	mmmuWrong   = 0
	mmmuCorrect = 1
	// mmmuDraw: no option named; random.choice decides.
	mmmuDraw = -1
	// mmmuDrawWrong: the request failed; the draw is taken (lmms-eval's
	// empty answer would take it) but the document counts as wrong.
	mmmuDrawWrong = -2
)

func buildMMMUVal(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	seed := int64(mmmuDefaultSeed)
	if src.Seed != 0 {
		seed = int64(src.Seed)
	}
	// Subjects are numbered in order of first appearance; the numbers only
	// carry the subject through the per-document values.
	var subjects []string
	subjectIndex := map[string]int{}
	for _, d := range docs {
		if d.Invalid != nil {
			continue
		}
		id, err := d.Str("id")
		if err != nil {
			return nil, err
		}
		s, err := mmmuSubject(id)
		if err != nil {
			return nil, fmt.Errorf("%s: field \"id\": %w", d.Source, err)
		}
		if _, ok := subjectIndex[s]; !ok {
			subjectIndex[s] = len(subjects)
			subjects = append(subjects, s)
		}
	}
	// values encodes a document as (outcome, subject, number of options,
	// gold option index) for the corpus aggregation; the outcome comes
	// first so that a sample's value reads 1 (right), 0 (wrong) or
	// negative (left to the random draw).
	values := func(d evalsuite.Doc, resp *string) (evalsuite.Scores, error) {
		id, err := d.Str("id")
		if err != nil {
			return nil, err
		}
		subj, err := mmmuSubject(id)
		if err != nil {
			return nil, fmt.Errorf("%s: field \"id\": %w", d.Source, err)
		}
		gold, err := d.Str("answer")
		if err != nil {
			return nil, err
		}
		kind, err := d.Str("question_type")
		if err != nil {
			return nil, err
		}
		out := func(outcome, n, g int) evalsuite.Scores {
			return evalsuite.Scores{"mmmu_acc": {float64(outcome), float64(subjectIndex[subj]), float64(n), float64(g)}}
		}
		if kind != "multiple-choice" {
			if resp != nil && mmmuOpenCorrect(gold, *resp) {
				return out(mmmuCorrect, 0, -1), nil
			}
			return out(mmmuWrong, 0, -1), nil
		}
		opts, err := mmmuOptions(d)
		if err != nil {
			return nil, err
		}
		if len(opts) == 0 {
			return nil, fmt.Errorf("%s: a multiple-choice question with no options (lmms-eval's random.choice fails on it)", d.Source)
		}
		letters := make([]string, len(opts))
		index2ans := map[string]string{}
		goldAt := -1
		for i, o := range opts {
			letters[i] = string(rune('A' + i))
			index2ans[letters[i]] = o
			if letters[i] == gold {
				goldAt = i
			}
		}
		if resp == nil {
			return out(mmmuDrawWrong, len(opts), goldAt), nil
		}
		switch pred := mmmuMultiChoice(*resp, letters, index2ans); {
		case pred == "":
			return out(mmmuDraw, len(opts), goldAt), nil
		case pred == gold:
			return out(mmmuCorrect, len(opts), goldAt), nil
		}
		return out(mmmuWrong, len(opts), goldAt), nil
	}
	task := &evalsuite.Task{
		Name: "mmmu_val", Version: "0.0", Output: evalsuite.GenerateUntil, Docs: docs,
		DocToText:   mmmuText,
		DocToParts:  mmmuParts,
		ChatOnly:    true,
		DocToTarget: func(d evalsuite.Doc) (string, error) { return d.Str("answer") },
		Gen:         evalsuite.GenKwargs{MaxGenToks: 16, Temperature: 0},
		Process: func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
			return values(d, &resp)
		},
		ErroredScores: func(d evalsuite.Doc) (evalsuite.Scores, error) { return values(d, nil) },
		Metrics: []evalsuite.MetricSpec{{Name: "mmmu_acc", Aggregation: "mmmu_aggregate_results", HigherIsBetter: true,
			Corpus: func(perDoc [][]float64) float64 { return MMMUBreakdown(perDoc, subjects, seed).Overall }}},
		Config: map[string]any{
			"task": "mmmu_val", "dataset_path": "lmms-lab/MMMU", "test_split": "validation", "output_type": "generate_until",
			"doc_to_target": "answer",
			"model":         "openai_compatible (chat: mmmu_doc_to_messages, one user message of text and image_url parts with PNG data URLs)",
			"lmms_eval_specific_kwargs": map[string]any{"default": map[string]any{
				"prompt_type": "format", "multiple_choice_prompt": mmmuMCPrompt, "open_ended_prompt": mmmuOpenPrompt}},
			"generation_kwargs": map[string]any{"max_new_tokens": 16, "temperature": 0},
			"metric_list":       []map[string]any{{"metric": "mmmu_acc", "aggregation": "mmmu_aggregate_results", "higher_is_better": true}},
			"metadata":          map[string]any{"version": 0.0, "interleaved_format": true},
			"random_seed":       seed,
		},
	}
	return task, nil
}

// MMMUScore is one row of lmms-eval's printed MMMU table.
type MMMUScore struct {
	Name string  `json:"name"`
	Num  int     `json:"num"`
	Acc  float64 `json:"acc"`
}

// MMMUResult is mmmu_aggregate_results' printable_results: per domain
// ("Overall-<domain>") and its subjects, in DOMAIN_CAT2SUB_CAT's order,
// then Overall, whose acc is the task's mmmu_acc.
type MMMUResult struct {
	Rows    []MMMUScore `json:"rows"`
	Overall float64     `json:"overall"`
	Num     int         `json:"num"`
}

// MMMUBreakdown aggregates mmmu_val's per-document values (in document
// order) as mmmu_aggregate_results does, drawing the random choices of
// unparsed multiple-choice answers from Python's generator seeded with
// seed. subjects names the subject numbers the values carry.
func MMMUBreakdown(perDoc [][]float64, subjects []string, seed int64) MMMUResult {
	rng := pyrand.New(seed)
	type tally struct{ correct, n int }
	var order []string
	by := map[string]*tally{}
	for _, v := range perDoc {
		subj, correct := "", false
		if len(v) == 4 {
			if k := int(v[1]); k >= 0 && k < len(subjects) {
				subj = subjects[k]
			}
			switch int(v[0]) {
			case mmmuCorrect:
				correct = true
			case mmmuDraw:
				correct = int(rng.Below(uint32(v[2]))) == int(v[3])
			case mmmuDrawWrong:
				rng.Below(uint32(v[2]))
			}
		}
		t := by[subj]
		if t == nil {
			t = &tally{}
			by[subj] = t
			order = append(order, subj)
		}
		t.n++
		if correct {
			t.correct++
		}
	}
	acc := func(t *tally) float64 { return float64(t.correct) / float64(t.n) }
	// calculate_ins_level_acc: sum of acc*num over num, in the order given.
	insLevel := func(names []string) (float64, int) {
		sum, n := 0.0, 0
		for _, s := range names {
			sum += acc(by[s]) * float64(by[s].n)
			n += by[s].n
		}
		if n == 0 {
			return 0, 0
		}
		return sum / float64(n), n
	}
	var res MMMUResult
	for _, dom := range mmmuDomains {
		var present []string
		for _, s := range dom.Subjects {
			if by[s] != nil {
				present = append(present, s)
			}
		}
		a, n := insLevel(present)
		res.Rows = append(res.Rows, MMMUScore{Name: "Overall-" + dom.Name, Num: n, Acc: pyRound5(a)})
		for _, s := range present {
			res.Rows = append(res.Rows, MMMUScore{Name: s, Num: by[s].n, Acc: pyRound5(acc(by[s]))})
		}
	}
	a, n := insLevel(order)
	res.Overall, res.Num = pyRound5(a), n
	return res
}

// pyRound5 is round(x, 5), correctly rounded as CPython does.
func pyRound5(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 5, 64), 64)
	return r
}
