package tasks

import (
	"fmt"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/filter"
)

// gsm8kCoTExamples are gsm8k-cot.yaml's fewshot_config samples (question,
// target), verbatim.
var gsm8kCoTExamples = [][2]string{
	{"There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they are done, there will be 21 trees. How many trees did the grove workers plant today?", "There are 15 trees originally. Then there were 21 trees after some more were planted. So there must have been 21 - 15 = 6. The answer is 6."},
	{"If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?", "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."},
	{"Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left in total?", "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After eating 35, they had 74 - 35 = 39. The answer is 39."},
	{"Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many lollipops did Jason give to Denny?", "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 - 12 = 8. The answer is 8."},
	{"Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys does he have now?", "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. 5 + 4 = 9. The answer is 9."},
	{"There were nine computers in the server room. Five more computers were installed each day, from monday to thursday. How many computers are now in the server room?", "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = 20 computers were added. 9 + 20 is 29. The answer is 29."},
	{"Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How many golf balls did he have at the end of wednesday?", "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After losing 2 more, he had 35 - 2 = 33 golf balls. The answer is 33."},
	{"Olivia has $23. She bought five bagels for $3 each. How much money does she have left?", "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - 15 dollars left. 23 - 15 is 8. The answer is 8."},
}

// buildGSM8KCoT is lm-eval's gsm8k_cot: eight fixed examples, "Q: ...\nA:",
// the target the number after "####" (the examples' own target text).
func buildGSM8KCoT(src Source) (*evalsuite.Task, error) {
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	pool := make([]evalsuite.Doc, len(gsm8kCoTExamples))
	for i, e := range gsm8kCoTExamples {
		pool[i] = evalsuite.Doc{ID: i, Source: fmt.Sprintf("gsm8k-cot.yaml samples[%d]", i), Fields: map[string]any{"question": e[0], "target": e[1]}}
	}
	shots := 8
	if src.NumFewShot >= 0 {
		shots = min(src.NumFewShot, len(pool))
	}
	until := []string{"Q:", "</s>", "<|im_end|>"}
	strict := filter.Chain{Name: "strict-match", Steps: []filter.Step{filter.MustRegex(`The answer is (\-?[0-9\.\,]+).`, 0), filter.TakeFirst{}}}
	t := &evalsuite.Task{
		Name: "gsm8k_cot", Version: "3.0", Output: evalsuite.GenerateUntil,
		Docs: docs, FewShot: pool, NumFewShot: shots,
		TargetDelimiter: " ", FewshotDelimiter: "\n\n",
		DocToText: func(d evalsuite.Doc) (string, error) {
			q, err := d.Str("question")
			return "Q: " + q + "\nA:", err
		},
		// "{{answer.split('####')[-1].strip() if answer is defined else target}}"
		DocToTarget: func(d evalsuite.Doc) (string, error) {
			if _, ok := d.Fields["answer"]; ok {
				a, err := d.Str("answer")
				parts := strings.Split(a, "####")
				return strings.TrimSpace(parts[len(parts)-1]), err
			}
			return d.Str("target")
		},
		Gen:     evalsuite.GenKwargs{Until: until, MaxGenToks: 256, Temperature: 0},
		Filters: []filter.Chain{strict, filter.GSM8KFlexible()},
		Metrics: []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true, ExactMatch: gsm8kExactMatch()}},
		Config: map[string]any{
			"task": "gsm8k_cot", "output_type": "generate_until", "doc_to_text": "Q: {{question}}\nA:",
			"doc_to_target": "{{answer.split('####')[-1].strip() if answer is defined else target}}", "num_fewshot": shots,
			"fewshot_config":    map[string]any{"sampler": "first_n", "samples": "the eight chain-of-thought examples of gsm8k-cot.yaml"},
			"generation_kwargs": map[string]any{"until": until, "do_sample": false},
			"filter_list": []map[string]any{
				{"name": "strict-match", "filter": []map[string]any{{"function": "regex", "regex_pattern": `The answer is (\-?[0-9\.\,]+).`}, {"function": "take_first"}}},
				{"name": "flexible-extract", "filter": []map[string]any{{"function": "regex", "group_select": -1, "regex_pattern": `(-?[$0-9.,]{2,})|(-?[0-9]+)`}, {"function": "take_first"}}},
			},
			"metric_list": []map[string]any{{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true, "ignore_case": true, "ignore_punctuation": false, "regexes_to_ignore": []string{",", `\$`, `(?s).*#### `, `\.$`}}},
		},
	}
	return t, nil
}
