package tasks

import (
	"os"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
)

func TestGSM8KPromptAndScoring(t *testing.T) {
	task, err := Build("gsm8k", Source{Dataset: "testdata/gsm8k_test.jsonl", FewShotDataset: "testdata/gsm8k_train.jsonl", NumFewShot: 2})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := "Question: What is 1 + 1?\nAnswer: 1 + 1 = 2\n#### 2\n\n" +
		"Question: What is 2 + 2?\nAnswer: 2 + 2 = 4\n#### 4\n\n" +
		"Question: Tom has 3 apples and buys 4 more. How many apples does he have?\nAnswer:"
	if reqs[0].Context != want {
		t.Errorf("context:\n%q\nwant\n%q", reqs[0].Context, want)
	}
	if g := reqs[0].Gen; g.MaxGenToks != 256 || strings.Join(g.Until, "|") != "Question:|</s>|<|im_end|>" {
		t.Errorf("gen kwargs %+v", g)
	}
	scored, err := task.Score(task.Docs[0], []evalsuite.Response{{Text: " 3 + 4 = 7\n#### 7"}})
	if err != nil {
		t.Fatal(err)
	}
	if scored[0].Filter != "strict-match" || scored[0].Scores["exact_match"][0] != 1 || scored[1].Scores["exact_match"][0] != 1 {
		t.Errorf("scored %+v", scored)
	}
	// The second row has no answer: the error names file, line and field.
	if _, err := task.Target(task.Docs[1]); err == nil || !strings.Contains(err.Error(), `gsm8k_test.jsonl:2: missing field "answer"`) {
		t.Errorf("missing answer: %v", err)
	}
}

func TestMMLUGroupsBySubject(t *testing.T) {
	task, err := Build("mmlu", Source{Dataset: "testdata/mmlu.csv", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if task.SubtaskOf == nil || task.SubtaskOf(task.Docs[2]) != "mmlu_geography" {
		t.Fatal("documents with several subjects must form per-subject subtasks")
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	wantCtx := "The following are multiple choice questions (with answers) about arithmetic.\n\nWhat is 2+2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:"
	if len(reqs) != 4 || reqs[0].Context != wantCtx || reqs[1].Continuation != " B" {
		t.Errorf("requests %+v", reqs)
	}
	scored, err := task.Score(task.Docs[0], []evalsuite.Response{{LogLikelihood: -3}, {LogLikelihood: -0.5}, {LogLikelihood: -2}, {LogLikelihood: -4}})
	if err != nil || scored[0].Scores["acc"][0] != 1 {
		t.Errorf("scored %+v %v", scored, err)
	}
	gen, err := Build("mmlu_generative", Source{Dataset: "testdata/mmlu.csv", NumFewShot: 0})
	if err != nil {
		t.Fatal(err)
	}
	// get_response ignores case and punctuation; letter-extract wants a
	// standalone capital letter anywhere in the answer.
	for _, tc := range []struct {
		resp        string
		get, letter float64
	}{
		{" b.\nBecause 3*3=9", 1, 0},
		{"The answer is B", 0, 1},
		{"(B) 9", 0, 1},
		{"I think B", 0, 1}, // only A-D count as answer letters
		{"E", 0, 0},
	} {
		sc, err := gen.Score(gen.Docs[1], []evalsuite.Response{{Text: tc.resp}})
		if err != nil || sc[0].Scores["exact_match"][0] != tc.get || sc[1].Scores["exact_match"][0] != tc.letter {
			t.Errorf("generative %q: %+v %v", tc.resp, sc, err)
		}
	}
}

func TestIFEvalTask(t *testing.T) {
	task, err := Build("ifeval", Source{Dataset: "testdata/ifeval.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := task.Score(task.Docs[1], []evalsuite.Response{{Text: "Sure, here it is"}})
	if err != nil {
		t.Fatal(err)
	}
	s := sc[0].Scores
	if s["prompt_level_strict_acc"][0] != 0 || len(s["inst_level_strict_acc"]) != 2 || s["inst_level_strict_acc"][1] != 1 {
		t.Errorf("scores %+v", s)
	}
	if _, err := task.Score(task.Docs[2], []evalsuite.Response{{Text: "Hallo"}}); err == nil || !strings.Contains(err.Error(), "ifeval.jsonl:3") {
		t.Errorf("unsupported instruction must be an error naming the row: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build("nope", Source{}); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := Build("gsm8k", Source{}); err == nil || !strings.Contains(err.Error(), "openai/gsm8k") {
		t.Errorf("missing dataset: %v", err)
	}
	if _, err := Build("gsm8k", Source{Dataset: "testdata/gsm8k_test.jsonl", FewShotDataset: "testdata/gsm8k_train.jsonl", NumFewShot: 5}); err == nil {
		t.Error("5-shot from a 2-example pool must be refused")
	}
}

func TestBuiltinsAreDeterministic(t *testing.T) {
	a, _ := Build("ttis_arith", Source{Size: 5, NumFewShot: -1})
	b, _ := Build("ttis_arith", Source{Size: 5, NumFewShot: -1})
	for i := range a.Docs {
		qa, _ := a.Docs[i].Str("question")
		qb, _ := b.Docs[i].Str("question")
		if qa != qb {
			t.Fatalf("doc %d differs between builds", i)
		}
	}
	// The generated answers parse with gsm8k's own strict filter.
	for _, d := range a.Docs {
		ans, _ := d.Str("answer")
		got, err := a.Filters[0].Apply([]string{ans})
		if err != nil || got == "[invalid]" {
			t.Errorf("answer %q does not end in #### N", ans)
		}
	}
}

// TestBuiltinIFEval checks that every generated prompt uses supported
// instructions with valid arguments, and that a response written to follow
// them is scored as following them.
func TestBuiltinIFEval(t *testing.T) {
	task, err := Build("ttis_ifeval", Source{Size: 60, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range task.Docs {
		sc, err := task.Score(d, []evalsuite.Response{{Text: "a plain answer"}})
		if err != nil {
			t.Fatalf("%s: %v", d.Source, err)
		}
		ids, _ := d.Strings("instruction_id_list")
		if len(sc[0].Scores["inst_level_strict_acc"]) != len(ids) {
			t.Fatalf("%s: %d instruction scores for %d instructions", d.Source, len(sc[0].Scores["inst_level_strict_acc"]), len(ids))
		}
	}
	// Find a prompt with only the no-comma rule and check both outcomes.
	for _, d := range task.Docs {
		ids, _ := d.Strings("instruction_id_list")
		if len(ids) != 1 || ids[0] != "punctuation:no_comma" {
			continue
		}
		good, _ := task.Score(d, []evalsuite.Response{{Text: "Rain fell all day and we stayed in"}})
		bad, _ := task.Score(d, []evalsuite.Response{{Text: "Rain fell, and we stayed in"}})
		if good[0].Scores["prompt_level_strict_acc"][0] != 1 || bad[0].Scores["prompt_level_strict_acc"][0] != 0 {
			t.Errorf("no_comma scoring: good %v bad %v", good[0].Scores, bad[0].Scores)
		}
		return
	}
	t.Fatal("no single no-comma prompt among 60 generated ones")
}

func TestEmptyDatasetIsAnError(t *testing.T) {
	p := t.TempDir() + "/empty.jsonl"
	if err := os.WriteFile(p, []byte("\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Build("gsm8k", Source{Dataset: p, NumFewShot: -1}); err == nil || !strings.Contains(err.Error(), "no documents") {
		t.Errorf("empty dataset: %v", err)
	}
}

func TestTruthy(t *testing.T) {
	for _, v := range []any{nil, "", 0.0, false, []any{}, map[string]any{}} {
		if truthy(v) {
			t.Errorf("%#v should be falsy", v)
		}
	}
	for _, v := range []any{"x", 1.0, true, []any{"a"}, map[string]any{"a": 1}} {
		if !truthy(v) {
			t.Errorf("%#v should be truthy", v)
		}
	}
}
