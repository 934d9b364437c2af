package tasks

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/mathequiv"
	"github.com/ttis-dev/ttis/evalsuite/tasks/internal/r1grade"
)

func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "leaderboard_math_hard", Output: gen,
		Description: "MATH Level 5 (Open LLM Leaderboard), 4-shot Minerva prompts, one subtask per subject; exact_match by mathequiv where lm-eval asks math-verify, exact_match_original by Minerva's normalisation (fields problem, solution, level, type)",
		Follows:     "lm-eval lm_eval/tasks/leaderboard/math/_template_yaml v3.0 and utils.py",
		Data:        []HubData{parquetSplit(RoleTest, "DigitalLearningGmbH/MATH-lighteval", "default", "test")}}, buildLeaderboardMath)
	register(Info{Name: "meta_math", Output: gen,
		Description: "MATH replaying Meta's eval details (llama-cookbook meta_math): Meta's prompt, boxed answer normalised as Minerva's and compared with mathequiv (a joined file with input_final_prompts and solution, or the details file plus the MATH test split as Files[\"original\"])",
		Follows:     "llama-cookbook meta_eval/meta_template/math_hard/math_4shot_cot.yaml v1.0 and utils.py",
		Data: append(metaDetails("math"),
			HubData{Role: "original", Repo: "DigitalLearningGmbH/MATH-lighteval", Config: "default", Split: "test", Revision: RevisionParquet, Files: "default/test/*.parquet"})}, buildMetaMath)
	register(Info{Name: "r1_aime24", Output: gen,
		Description: "AIME 2024 with a boxed reasoning answer, graded by the fork's math_equal (fields problem, answer)",
		Follows:     "lm-eval fork lm_eval/tasks/r1_evals/aime24.yaml v1.0 and utils.py",
		Data:        []HubData{parquetSplit(RoleTest, "HuggingFaceH4/aime_2024", "", "train")}}, buildR1Math("r1_aime24", false))
	register(Info{Name: "r1_math500", Output: gen,
		Description: "MATH-500 with a boxed reasoning answer, graded by the fork's math_equal (fields problem, answer)",
		Follows:     "lm-eval fork lm_eval/tasks/r1_evals/math_500.yaml v1.0 and utils.py",
		Data:        []HubData{{Role: RoleTest, Repo: "HuggingFaceH4/MATH-500", Split: "test", Files: "test.jsonl"}}}, buildR1Math("r1_math500", true))
	register(Info{Name: "aime25", Output: gen,
		Description: "AIME 2025, zero-shot \"Question: ... Answer:\", the last boxed (or $...$) answer compared as hendrycks_math's strip_string (fields problem, answer)",
		Follows:     "lm-eval lm_eval/tasks/aime/aime25.yaml v0.0 and utils.py",
		Data:        []HubData{parquetSplit(RoleTest, "math-ai/aime25", "", "test")}}, buildAIME25)
	register(Info{Name: "gsm8k_cot", Output: gen,
		Description: "GSM8K with lm-eval's eight fixed chain-of-thought examples (\"Q: ... A:\"), strict-match on \"The answer is N.\" and flexible-extract (fields question, answer)",
		Follows:     "lm-eval lm_eval/tasks/gsm8k/gsm8k-cot.yaml v3.0",
		Data:        gsm8kData[:1]}, buildGSM8KCoT)
}

// leaderboardMathSubjects maps MATH's "type" column to the subtask names
// of the leaderboard_math_hard group.
var leaderboardMathSubjects = map[string]string{
	"Algebra":                "leaderboard_math_algebra_hard",
	"Counting & Probability": "leaderboard_math_counting_and_prob_hard",
	"Geometry":               "leaderboard_math_geometry_hard",
	"Intermediate Algebra":   "leaderboard_math_intermediate_algebra_hard",
	"Number Theory":          "leaderboard_math_num_theory_hard",
	"Prealgebra":             "leaderboard_math_prealgebra_hard",
	"Precalculus":            "leaderboard_math_precalculus_hard",
}

// leaderboardMathFewShot are utils.list_fewshot_samples, verbatim
// (including the stray "}" of the first problem).
var leaderboardMathFewShot = [][2]string{
	{"Find the domain of the expression  $\\frac{\\sqrt{x-2}}{\\sqrt{5-x}}$.}", "The expressions inside each square root must be non-negative. Therefore, $x-2 \\ge 0$, so $x\\ge2$, and $5 - x \\ge 0$, so $x \\le 5$. Also, the denominator cannot be equal to zero, so $5-x>0$, which gives $x<5$. Therefore, the domain of the expression is $\\boxed{[2,5)}$.\nFinal Answer: The final answer is $[2,5)$. I hope it is correct."},
	{"If $\\det \\mathbf{A} = 2$ and $\\det \\mathbf{B} = 12,$ then find $\\det (\\mathbf{A} \\mathbf{B}).$", "We have that $\\det (\\mathbf{A} \\mathbf{B}) = (\\det \\mathbf{A})(\\det \\mathbf{B}) = (2)(12) = \\boxed{24}.$\nFinal Answer: The final answer is $24$. I hope it is correct."},
	{"Terrell usually lifts two 20-pound weights 12 times. If he uses two 15-pound weights instead, how many times must Terrell lift them in order to lift the same total weight?", "If Terrell lifts two 20-pound weights 12 times, he lifts a total of $2\\cdot 12\\cdot20=480$ pounds of weight.  If he lifts two 15-pound weights instead for $n$ times, he will lift a total of $2\\cdot15\\cdot n=30n$ pounds of weight.  Equating this to 480 pounds, we can solve for $n$:\n\\begin{align*}\n30n&=480\\\n\\Rightarrow\\qquad n&=480/30=\\boxed{16}\n\\end{align*}\nFinal Answer: The final answer is $16$. I hope it is correct."},
	{"If the system of equations\n\n\\begin{align*}\n6x-4y&=a,\\\n6y-9x &=b.\n\\end{align*}has a solution $(x, y)$ where $x$ and $y$ are both nonzero,\nfind $\\frac{a}{b},$ assuming $b$ is nonzero.", "If we multiply the first equation by $-\\frac{3}{2}$, we obtain\n\n$$6y-9x=-\\frac{3}{2}a.$$Since we also know that $6y-9x=b$, we have\n\n$$-\\frac{3}{2}a=b\\Rightarrow\\frac{a}{b}=\\boxed{-\\frac{2}{3}}.$$\nFinal Answer: The final answer is $-\\frac{2}{3}$. I hope it is correct."},
}

func buildLeaderboardMath(src Source) (*evalsuite.Task, error) {
	raw, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	var docs []evalsuite.Doc
	for _, d := range raw {
		if d.Invalid == nil {
			level, err := d.Str("level")
			if err != nil {
				return nil, err
			}
			if level != "Level 5" { // process_docs keeps Level 5 only
				continue
			}
			sol, err := d.Str("solution")
			if err != nil {
				return nil, err
			}
			fields := copyFields(d.Fields)
			fields["answer"] = mathequiv.BoxedAnswer(sol)
			d.Fields = fields
		}
		d.ID = len(docs)
		docs = append(docs, d)
	}
	pool := make([]evalsuite.Doc, len(leaderboardMathFewShot))
	for i, s := range leaderboardMathFewShot {
		pool[i] = evalsuite.Doc{ID: i, Source: fmt.Sprintf("list_fewshot_samples[%d]", i),
			Fields: map[string]any{"problem": s[0], "solution": s[1], "few_shot": "1", "level": "Level 5"}}
	}
	shots := 4
	if src.NumFewShot >= 0 {
		shots = min(src.NumFewShot, len(pool))
	}
	until := []string{"Problem:"}
	return &evalsuite.Task{
		Name: "leaderboard_math_hard", Version: "3.0", Output: evalsuite.GenerateUntil,
		Docs: docs, FewShot: pool, NumFewShot: shots,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToText: func(d evalsuite.Doc) (string, error) {
			p, err := d.Str("problem")
			return "Problem:\n" + p + "\n\nSolution:", err
		},
		// "{{answer if few_shot is undefined else solution}}"
		DocToTarget: func(d evalsuite.Doc) (string, error) {
			if _, ok := d.Fields["few_shot"]; ok {
				return d.Str("solution")
			}
			return d.Str("answer")
		},
		Gen:     evalsuite.GenKwargs{Until: until, MaxGenToks: 1024, Temperature: 0},
		Process: processLeaderboardMath,
		Metrics: []evalsuite.MetricSpec{
			{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true},
			{Name: "exact_match_original", Aggregation: "mean", HigherIsBetter: true},
		},
		SubtaskOf: func(d evalsuite.Doc) string {
			t, _ := d.Fields["type"].(string)
			if name, ok := leaderboardMathSubjects[t]; ok {
				return name
			}
			return "leaderboard_math_unknown_type_hard"
		},
		Config: map[string]any{
			"task": "leaderboard_math_hard", "output_type": "generate_until", "num_fewshot": shots,
			"process_docs":      "level == \"Level 5\"; answer = remove_boxed(last_boxed_only_string(solution))",
			"doc_to_text":       "Problem:\n{{problem}}\n\nSolution:",
			"doc_to_target":     "{{answer if few_shot is undefined else solution}}",
			"fewshot_config":    map[string]any{"sampler": "first_n", "samples": "utils.list_fewshot_samples"},
			"generation_kwargs": map[string]any{"until": until, "do_sample": false, "temperature": 0, "max_gen_toks": 1024},
			"process_results":   "exact_match: mathequiv.Equal of the gold's boxed answer and the response's final answer (lm-eval: math-verify); exact_match_original: Minerva normalisation, then equal text or mathequiv.IsEquiv",
			"metric_list":       []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true}, {"metric": "exact_match_original", "aggregation": "mean", "higher_is_better": true}},
			"group":             map[string]any{"aggregate_metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "weight_by_size": true}}},
		},
	}, nil
}

func copyFields(f map[string]any) map[string]any {
	out := make(map[string]any, len(f)+2)
	for k, v := range f {
		out[k] = v
	}
	return out
}

var (
	finalAnswerIsRe = regexp.MustCompile(`(?i)final answer is:?\s*\$([^$]+)\$`)
	lastMathRe      = regexp.MustCompile(`\$([^$]+)\$|\\\((.+?)\\\)`)
	lastNumberRe    = regexp.MustCompile(`-?\d[\d,]*(\.\d+)?|-?\.\d+`)
)

// FinalAnswer extracts the answer a response commits to, in the order
// math-verify prefers: the last \boxed{}, a "final answer is $X$", the
// last inline math, else the last number; "" when there is none.
func FinalAnswer(resp string) string {
	if b := mathequiv.BoxedAnswer(resp); b != mathequiv.InvalidAnswer {
		return b
	}
	if m := finalAnswerIsRe.FindAllStringSubmatch(resp, -1); len(m) > 0 {
		return m[len(m)-1][1]
	}
	if m := lastMathRe.FindAllStringSubmatch(resp, -1); len(m) > 0 {
		last := m[len(m)-1]
		return last[1] + last[2]
	}
	if m := lastNumberRe.FindAllString(resp, -1); len(m) > 0 {
		return strings.ReplaceAll(m[len(m)-1], ",", "")
	}
	return ""
}

func processLeaderboardMath(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	sol, err := d.Str("solution")
	if err != nil {
		return nil, err
	}
	gold, err := d.Str("answer")
	if err != nil {
		return nil, err
	}
	em := 0.0
	if cand := FinalAnswer(resp); cand != "" && mathequiv.Equal(mathequiv.BoxedAnswer(sol), cand) {
		em = 1
	}
	orig := 0.0 // process_result_v1
	answer := mathequiv.NormalizeFinalAnswer(mathequiv.UnnormalizedAnswer(resp))
	normGold := mathequiv.NormalizeFinalAnswer(gold)
	if answer != mathequiv.InvalidAnswer && (strings.TrimSpace(answer) == strings.TrimSpace(normGold) || mathequiv.IsEquiv(answer, normGold)) {
		orig = 1
	}
	return evalsuite.Scores{"exact_match": {em}, "exact_match_original": {orig}}, nil
}

// buildMetaMath is llama-cookbook's meta_math: each row carries Meta's
// final prompt and the MATH solution whose boxed answer, normalised, is
// the gold. The cookbook joins Meta's details with MATH-lighteval's test
// split on the question text; a local file that is already joined is read
// as it is, otherwise Source.Files["original"] supplies the MATH rows.
func buildMetaMath(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	if orig := src.Files["original"]; orig != "" {
		rows, err := load(orig, src)
		if err != nil {
			return nil, fmt.Errorf("original dataset: %w", err)
		}
		if docs, err = joinOnQuestion(docs, rows, "problem", []string{"solution"}); err != nil {
			return nil, err
		}
	}
	for i, d := range docs {
		if d.Invalid != nil {
			continue
		}
		sol, err := d.Str("solution")
		if err != nil {
			return nil, fmt.Errorf("%w (meta_math needs the MATH solution: a joined file, or the MATH test split as the original file)", err)
		}
		fields := copyFields(d.Fields)
		gold := mathequiv.InvalidAnswer
		if b, ok := mathequiv.LastBoxedOnlyString(sol); ok {
			if inner, ok := mathequiv.RemoveBoxed(b); ok {
				gold = mathequiv.NormalizeFinalAnswer(inner)
			}
		}
		fields["answer"] = gold
		docs[i].Fields = fields
	}
	return &evalsuite.Task{
		Name: "meta_math", Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
		DocToText:   func(d evalsuite.Doc) (string, error) { return metaFirst(d, "input_final_prompts") },
		DocToTarget: func(d evalsuite.Doc) (string, error) { return d.Str("answer") },
		Gen:         evalsuite.GenKwargs{MaxGenToks: 512, Temperature: 0},
		Process:     processMetaMath,
		Metrics:     []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "meta_math", "output_type": "generate_until", "num_fewshot": 0, "test_split": "train",
			"doc_to_text": "input_final_prompts[0]", "doc_to_target": "answer",
			"process_docs":      "answer = normalize_final_answer(remove_boxed(last_boxed_only_string(solution)))",
			"process_results":   "last boxed answer, normalize_final_answer, equal text or mathequiv.IsEquiv (lm-eval: sympy)",
			"generation_kwargs": map[string]any{"until": []string{}, "do_sample": false, "temperature": 0, "max_gen_toks": 512},
			"metric_list":       []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true}},
		},
	}, nil
}

func processMetaMath(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	gold, err := d.Str("answer")
	if err != nil {
		return nil, err
	}
	zero := evalsuite.Scores{"exact_match": {0}}
	b, ok := mathequiv.LastBoxedOnlyString(resp)
	if !ok {
		return zero, nil
	}
	inner, ok := mathequiv.RemoveBoxed(b)
	if !ok { // the cookbook's assertion fails on "\fbox{...}"; scored as wrong
		return zero, nil
	}
	answer := mathequiv.NormalizeFinalAnswer(inner)
	if strings.TrimSpace(answer) == strings.TrimSpace(gold) || mathequiv.IsEquiv(answer, gold) {
		return evalsuite.Scores{"exact_match": {1}}, nil
	}
	return zero, nil
}

// joinOnQuestion is the cookbook's pandas join of Meta's details with an
// original dataset: each detail row's input_question is looked up in the
// original rows' key column and the named columns are added (left join:
// a question without a match keeps the row, without those columns).
func joinOnQuestion(details, original []evalsuite.Doc, key string, cols []string) ([]evalsuite.Doc, error) {
	index := map[string]map[string]any{}
	for _, o := range original {
		if o.Invalid != nil {
			continue
		}
		k, err := o.Str(key)
		if err != nil {
			return nil, fmt.Errorf("original dataset: %w", err)
		}
		if _, dup := index[k]; !dup {
			index[k] = o.Fields
		}
	}
	out := make([]evalsuite.Doc, len(details))
	for i, d := range details {
		out[i] = d
		if d.Invalid != nil {
			continue
		}
		q, err := d.Str("input_question")
		if err != nil {
			return nil, err
		}
		fields := copyFields(d.Fields)
		if o, ok := index[q]; ok {
			for _, c := range cols {
				fields[c] = o[c]
			}
		}
		out[i].Fields = fields
	}
	return out, nil
}

// r1MathTail asks for the boxed answer; the YAML's "\\boxed" is one
// backslash in the prompt.
const r1MathTail = "\nPlease reason step by step, and put your final answer within\\boxed\nAnswer:"

// buildR1Math is r1_aime24 or r1_math500 of the fork's r1_evals: zero-shot
// reasoning with a boxed answer, graded by math_equal after the fork's
// postprocess (package r1grade). math500's target is itself normalised
// (doc_to_target: postprocess_target); aime24's is the raw answer, but
// process_results normalises the gold in both.
func buildR1Math(name string, normTarget bool) func(Source) (*evalsuite.Task, error) {
	return func(src Source) (*evalsuite.Task, error) {
		docs, err := load(src.Dataset, src)
		if err != nil {
			return nil, err
		}
		until := []string{"<|end_of_text|>", "<|endoftext|>", "<|im_end|>"}
		target := "{{answer}}"
		if normTarget {
			target = "utils.doc_to_target (strip_answer_string(answer))"
		}
		return &evalsuite.Task{
			Name: name, Version: "1.0", Output: evalsuite.GenerateUntil, Docs: docs,
			DocToText: func(d evalsuite.Doc) (string, error) {
				p, err := d.Str("problem")
				return p + r1MathTail, err
			},
			DocToTarget: func(d evalsuite.Doc) (string, error) {
				a, err := d.Str("answer")
				if err != nil || !normTarget {
					return a, err
				}
				return r1grade.MathGold(a), nil
			},
			Gen: evalsuite.GenKwargs{Until: until, MaxGenToks: 32768, Temperature: 0.6},
			Process: func(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
				a, err := d.Str("answer")
				if err != nil {
					return nil, err
				}
				return evalsuite.Scores{"exact_match": {r1grade.MathScore(r1grade.MathGold(a), r1grade.MathCandidate(resp))}}, nil
			},
			Metrics: []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true}},
			Config: map[string]any{
				"task": name, "output_type": "generate_until", "num_fewshot": 0,
				"doc_to_text": "{{problem}}" + r1MathTail, "doc_to_target": target,
				"process_results": "utils.process_results_math: math_equal(postprocess(response), strip_answer_string(answer)); symbolic steps by mathequiv (fork: sympy)",
				"generation_kwargs": map[string]any{"until": until, "do_sample": false, "max_gen_toks": 32768,
					"temperature": 0.6, "top_k": 40, "top_p": 0.95, "n": 1},
				"metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true}},
			},
		}, nil
	}
}

// buildAIME25 is upstream lm-eval's aime25.
func buildAIME25(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	until := []string{"Question:", "</s>", "<|im_end|>", "<|eot_id|>"}
	return &evalsuite.Task{
		Name: "aime25", Version: "0.0", Output: evalsuite.GenerateUntil, Docs: docs,
		DocToText: func(d evalsuite.Doc) (string, error) {
			p, err := d.Str("problem")
			return "Question: " + p + "\nAnswer:", err
		},
		DocToTarget: aimeAnswer,
		Gen:         evalsuite.GenKwargs{Until: until, MaxGenToks: 32768, Temperature: 0},
		Process:     processAIME,
		Metrics:     []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true}},
		Config: map[string]any{
			"task": "aime25", "output_type": "generate_until", "num_fewshot": 0, "test_split": "test",
			"doc_to_text": "Question: {{problem}}\nAnswer:", "doc_to_target": "{{answer}}",
			"process_results":   "utils.process_results: text between the first and last $, else the last boxed answer; is_equiv by strip_string",
			"generation_kwargs": map[string]any{"until": until, "do_sample": false, "temperature": 0.0, "max_gen_toks": 32768},
			"metric_list":       []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true}},
		},
	}, nil
}

// aimeAnswer is the first field whose lower-cased name is "answer", as
// the aime utils look it up.
func aimeAnswer(d evalsuite.Doc) (string, error) {
	if _, ok := d.Fields["answer"]; ok {
		return d.Str("answer")
	}
	for k := range d.Fields {
		if strings.ToLower(k) == "answer" {
			return d.Str(k)
		}
	}
	return d.Str("answer")
}

// processAIME is lm-eval's aime process_results.
func processAIME(d evalsuite.Doc, resp string) (evalsuite.Scores, error) {
	target, err := aimeAnswer(d)
	if err != nil {
		return nil, err
	}
	answer := resp
	if first, last := strings.Index(resp, "$"), strings.LastIndex(resp, "$"); first >= 0 && last > first {
		answer = resp[first+1 : last]
	}
	if b, ok := mathequiv.LastBoxedOnlyString(resp); ok {
		if inner, ok := mathequiv.RemoveBoxed(b); ok {
			answer = inner
		}
	}
	if mathequiv.HendrycksEquiv(answer, target) {
		return evalsuite.Scores{"exact_match": {1}}, nil
	}
	return evalsuite.Scores{"exact_match": {0}}, nil
}
