package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ttis-dev/ttis/evalsuite"
)

func init() {
	gen := evalsuite.GenerateUntil
	register(Info{Name: "leaderboard_ifeval", Output: gen,
		Description: "IFEval as the Open LLM Leaderboard runs it (wis-k/instruction-following-eval), the checks of ifeval; same fields and assets folder (--dataset leaderboard_ifeval=DIR)",
		Follows:     "lm-eval lm_eval/tasks/leaderboard/ifeval/ifeval.yaml v3.0 (its utils use lm_eval/tasks/ifeval's instructions)",
		Data:        []HubData{parquetSplit(RoleTest, "wis-k/instruction-following-eval", "", "train")}}, buildLeaderboardIFEval)
	register(Info{Name: "meta_ifeval", Output: gen,
		Description: "IFEval replaying Meta's eval details (llama-cookbook meta_ifeval): Meta's final prompt, IFEval's checks (a joined file with prompt, instruction_id_list, kwargs, or the details file plus wis-k/instruction-following-eval as Files[\"original\"]); assets folder as ifeval's (--dataset meta_ifeval=DIR)",
		Follows:     "llama-cookbook meta_eval/meta_template/ifeval/ifeval.yaml v2.0 and utils.py; prepare_meta_eval.py get_ifeval_data",
		Data: append([]HubData{parquetGated(parquetSplit(RoleTest, "meta-llama/{model}-evals", "{model}-evals__ifeval__strict__details", "latest"))},
			parquetSplit("original", "wis-k/instruction-following-eval", "", "train"))}, buildMetaIFEval)
}

func buildLeaderboardIFEval(src Source) (*evalsuite.Task, error) {
	c, err := ifevalChecker(src)
	if err != nil {
		return nil, err
	}
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	t := ifevalTask("leaderboard_ifeval", docs, c)
	t.Version = "3.0"
	return t, nil
}

// buildMetaIFEval reads the cookbook's joined_ifeval.parquet layout, or
// joins Meta's details with the original IFEval rows as
// prepare_meta_eval.py does.
func buildMetaIFEval(src Source) (*evalsuite.Task, error) {
	c, err := ifevalChecker(src)
	if err != nil {
		return nil, err
	}
	docs, err := load(src.Dataset, src)
	if err != nil {
		return nil, err
	}
	if orig := src.Files["original"]; orig != "" {
		rows, err := load(orig, src)
		if err != nil {
			return nil, fmt.Errorf("original dataset: %w", err)
		}
		if docs, err = joinMetaIFEval(docs, rows); err != nil {
			return nil, err
		}
	}
	for i, d := range docs {
		if d.Invalid != nil {
			continue
		}
		// process_results: int(nth_paragraph) where it is set.
		raw, ok := d.Fields["kwargs"].([]any)
		if !ok {
			continue
		}
		fields := copyFields(d.Fields)
		kws := make([]any, len(raw))
		for k, kw := range raw {
			m, ok := kw.(map[string]any)
			if !ok {
				kws[k] = kw
				continue
			}
			c := make(map[string]any, len(m))
			for key, v := range m {
				c[key] = v
			}
			if s, ok := c["nth_paragraph"].(string); ok && s != "" {
				var n float64
				if _, err := fmt.Sscanf(s, "%g", &n); err == nil {
					c["nth_paragraph"] = n
				}
			}
			kws[k] = c
		}
		fields["kwargs"] = kws
		docs[i].Fields = fields
	}
	t := ifevalTask("meta_ifeval", docs, c)
	t.Version = "2.0"
	t.Config["test_split"] = "train"
	t.Config["dataset"] = "joined_ifeval.parquet: Meta's ifeval__strict__details joined with wis-k/instruction-following-eval on the question"
	return t, nil
}

// metaQuestion is prepare_meta_eval.py's get_question: the first dialog
// turn's body of the details' input_question, with the text changes its
// Python-literal rewrite makes (null, true and false capitalised, two
// phrases put back).
func metaQuestion(raw string) (string, error) {
	var q struct {
		Dialog []struct {
			Body string `json:"body"`
		} `json:"dialog"`
	}
	if err := json.Unmarshal([]byte(raw), &q); err != nil || len(q.Dialog) == 0 {
		return "", fmt.Errorf("input_question is not a dialog object: %v", err)
	}
	body := strings.NewReplacer("null", "None", "true", "True", "false", "False").Replace(q.Dialog[0].Body)
	body = strings.ReplaceAll(body, "Is it True that the first song", "Is it true that the first song")
	return strings.ReplaceAll(body, "Is the following True", "Is the following true"), nil
}

// joinMetaIFEval joins details rows with the original IFEval rows on the
// question text: prompt becomes input_final_prompts[0], and the original's
// instruction_id_list, kwargs and key are added.
func joinMetaIFEval(details, original []evalsuite.Doc) ([]evalsuite.Doc, error) {
	out := make([]evalsuite.Doc, len(details))
	for i, d := range details {
		out[i] = d
		if d.Invalid != nil {
			continue
		}
		raw, err := d.Str("input_question")
		if err != nil {
			return nil, err
		}
		q, err := metaQuestion(raw)
		if err != nil {
			out[i].Invalid = fmt.Errorf("%s: %w", d.Source, err)
			continue
		}
		prompt, err := metaFirst(d, "input_final_prompts")
		if err != nil {
			return nil, err
		}
		fields := copyFields(d.Fields)
		fields["input_question"] = q
		fields["prompt"] = prompt
		out[i].Fields = fields
	}
	joined, err := joinOnQuestion(out, original, "prompt", []string{"instruction_id_list", "kwargs", "key"})
	if err != nil {
		return nil, err
	}
	return joined, nil
}
