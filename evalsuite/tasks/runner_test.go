package tasks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// scriptedBackend answers a generate request with the reply whose key
// occurs in the prompt's last question, and "no idea" otherwise.
type scriptedBackend struct{ replies map[string]string }

func (b scriptedBackend) Do(_ context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	last := inst.Context
	if i := strings.LastIndex(last, "Question"); i >= 0 {
		last = last[i:]
	}
	for key, reply := range b.replies {
		if strings.Contains(last, key) {
			return evalsuite.Response{Text: reply}, json.RawMessage(`{}`), nil
		}
	}
	return evalsuite.Response{Text: "no idea"}, json.RawMessage(`{}`), nil
}

func (scriptedBackend) Model() string   { return "scripted" }
func (scriptedBackend) API() openai.API { return openai.Completions }

func aggregateKeys(aggs []evalsuite.Aggregate) map[string]float64 {
	out := map[string]float64{}
	for _, a := range aggs {
		out[a.Key()] = a.Value
	}
	return out
}

// TestRunnerEndToEnd runs the new tasks through the runner and checks the
// result keys the catalog grades on.
func TestRunnerEndToEnd(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		task    string
		src     Source
		replies map[string]string
		key     string
		want    float64
		subtask map[string]float64
	}{
		{
			task: "gpqa_diamond_cot_zeroshot", src: Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1},
			replies: map[string]string{
				"zorbium":    "Step by step... The answer is (C).",   // right on both filters
				"Glimmerfin": "It is the lumen sac, so: A",           // flexible only (bare letter)
				"Vantor":     "The answer is (A).",                   // wrong
				"Orrin":      "The answer is (D). Just kidding: (B)", // strict right, flexible wrong
			},
			key: "exact_match,flexible-extract", want: 2.0 / 5,
		},
		{
			task: "r1_gpqa_diamond", src: Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1},
			replies: map[string]string{"zorbium": "<think>hm</think>\\boxed{C}", "kappa": "\\boxed{C}", "Orrin": "\\boxed{A}"},
			key:     "exact_match,none", want: 2.0 / 5,
		},
		{
			task: "mmlu_pro", src: Source{Dataset: "testdata/mmlu_pro_test.jsonl", FewShotDataset: "testdata/mmlu_pro_validation.jsonl", NumFewShot: 2},
			replies: map[string]string{"Trellisort": " Linear. The answer is (A).", "Quibland": " The answer is (B).", "Glanz": " The answer is (A)."},
			key:     "exact_match,custom-extract", want: 2.0 / 3,
			subtask: map[string]float64{"mmlu_pro_computer_science": 0.5, "mmlu_pro_economics": 1},
		},
	}
	for _, c := range cases {
		t.Run(c.task, func(t *testing.T) {
			task, err := Build(c.task, c.src)
			if err != nil {
				t.Fatal(err)
			}
			res, err := runner.Run(ctx, task, scriptedBackend{c.replies}, runner.Options{Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			keys := aggregateKeys(res.Aggregates)
			if got, ok := keys[c.key]; !ok || got != c.want {
				t.Errorf("%s = %v (present %v), want %v; all %v", c.key, got, ok, c.want, keys)
			}
			for _, s := range res.Subtasks {
				if want, ok := c.subtask[s.Name]; !ok || aggregateKeys(s.Aggregates)[c.key] != want {
					t.Errorf("subtask %s: %v, want %v", s.Name, aggregateKeys(s.Aggregates), want)
				}
			}
			if len(res.Subtasks) != len(c.subtask) {
				t.Errorf("%d subtasks, want %d", len(res.Subtasks), len(c.subtask))
			}
		})
	}
}
