package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/metric"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// letterBackend scores continuation " X" highest when X is the letter
// written after "Favour:" in the question, so the test decides each answer.
type letterBackend struct{}

func (letterBackend) Model() string   { return "fake" }
func (letterBackend) API() openai.API { return openai.Completions }
func (letterBackend) Do(_ context.Context, inst evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	i := strings.LastIndex(inst.Context, "Favour:")
	fav := strings.TrimSpace(inst.Context[i+len("Favour:") : i+len("Favour:")+2])
	if strings.TrimSpace(inst.Continuation) == fav {
		return evalsuite.Response{LogLikelihood: -0.1}, nil, nil
	}
	return evalsuite.Response{LogLikelihood: -3}, nil, nil
}

func TestGroupedMMLU(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("question,A,B,C,D,answer,subject\n")
	// subject x: 3 docs, 2 right; subject y: 5 docs, 1 right.
	rows := []struct{ subj, fav string }{{"x", "A"}, {"x", "A"}, {"x", "B"}, {"y", "A"}, {"y", "C"}, {"y", "C"}, {"y", "D"}, {"y", "B"}}
	for i, r := range rows {
		fmt.Fprintf(&b, "Q%d Favour: %s,1,2,3,4,A,%s\n", i, r.fav, r.subj)
	}
	p := filepath.Join(dir, "m.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Build("mmlu", tasks.Source{Dataset: p, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), task, letterBackend{}, runner.Options{Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{1, 1, 0}
	y := []float64{1, 0, 0, 0, 0}
	if len(res.Subtasks) != 2 || res.Subtasks[0].Name != "mmlu_x" || res.Subtasks[1].Size != 5 {
		t.Fatalf("subtasks %+v", res.Subtasks)
	}
	acc := value(t, res, "acc,none")
	subs := []metric.Subtask{{Value: metric.Mean(x), Stderr: metric.MeanStderr(x), Size: 3}, {Value: metric.Mean(y), Stderr: metric.MeanStderr(y), Size: 5}}
	if acc.Value != 3.0/8 || math.Abs(acc.Stderr-metric.PooledStderr(subs)) > 1e-12 || acc.N != 8 {
		t.Errorf("group acc %+v, want 0.375 ± %v", acc, metric.PooledStderr(subs))
	}
}

func TestBadRowsAreReportedNotDropped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "g.jsonl")
	data := `{"question": "Q1", "answer": "#### 1"}
{"question": "Q2"
{"question": "Q3"}
`
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Build("gsm8k", tasks.Source{Dataset: p, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	be := fixedBackend{text: "#### 1"}
	res, err := runner.Run(context.Background(), task, be, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.Errored != 2 || res.Errors.ByKind["bad_doc"] != 2 {
		t.Fatalf("errors %+v", res.Errors)
	}
	if a := value(t, res, "exact_match,strict-match"); a.N != 3 || math.Abs(a.Value-1.0/3) > 1e-12 {
		t.Errorf("strict %+v: bad rows count as wrong by default", a)
	}
	if !strings.Contains(res.Samples[1].Err.Message, "g.jsonl:2") || !strings.Contains(res.Samples[2].Err.Message, `missing field "answer"`) {
		t.Errorf("messages %q / %q", res.Samples[1].Err.Message, res.Samples[2].Err.Message)
	}
}

type fixedBackend struct{ text string }

func (fixedBackend) Model() string   { return "fake" }
func (fixedBackend) API() openai.API { return openai.Completions }
func (b fixedBackend) Do(context.Context, evalsuite.Instance) (evalsuite.Response, json.RawMessage, error) {
	return evalsuite.Response{Text: b.text}, nil, nil
}

func TestThinkEndToken(t *testing.T) {
	task, err := tasks.Build("ttis_arith", tasks.Source{Size: 1, NumFewShot: 0})
	if err != nil {
		t.Fatal(err)
	}
	ans, _ := task.Docs[0].Str("answer")
	final := ans[strings.LastIndex(ans, "#### "):]
	be := fixedBackend{text: "<think>maybe #### 99999</think> " + final}
	for _, tc := range []struct {
		token string
		want  float64
	}{{"", 0}, {"</think>", 1}} {
		res, err := runner.Run(context.Background(), task, be, runner.Options{ThinkEndToken: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		if got := value(t, res, "exact_match,strict-match").Value; got != tc.want {
			t.Errorf("token %q: strict %v, want %v", tc.token, got, tc.want)
		}
		if !strings.HasPrefix(res.Samples[0].Responses[0].Text, "<think>") {
			t.Error("the raw response must be kept")
		}
	}
}
