package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
)

func TestMMLUProPromptGolden(t *testing.T) {
	task, err := Build("mmlu_pro", Source{Dataset: "testdata/mmlu_pro_test.jsonl", FewShotDataset: "testdata/mmlu_pro_validation.jsonl", NumFewShot: 2})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, d := range task.Docs {
		reqs, err := task.Requests(d)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			b.WriteString("\n=== next document\n")
		}
		b.WriteString(reqs[0].Context)
	}
	// Computer-science documents get the computer-science examples, the
	// economics document the economics ones; the eleventh option is not
	// shown, and options keep their spaces (" O(1) "). The golden text was
	// cross-checked against the mmlu_pro utils.py of tt-inference-server's
	// lm-eval fork (task version 2.1) run on the same fixture rows.
	checkGolden(t, "mmlu_pro.txt", b.String())
	if g := task.Gen; g.MaxGenToks != 2048 || strings.Join(g.Until, "|") != "Question:" || g.Temperature != 0 {
		t.Errorf("gen kwargs %+v", g)
	}
	if task.SubtaskOf(task.Docs[0]) != "mmlu_pro_computer_science" || task.SubtaskOf(task.Docs[1]) != "mmlu_pro_economics" {
		t.Errorf("subtasks %s %s", task.SubtaskOf(task.Docs[0]), task.SubtaskOf(task.Docs[1]))
	}
}

func TestMMLUProScoring(t *testing.T) {
	task, err := Build("mmlu_pro", Source{Dataset: "testdata/mmlu_pro_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(task.FilterNames(), ","); got != "custom-extract" {
		t.Fatalf("filters %s", got)
	}
	cases := []struct {
		doc   int
		resp  string
		score float64
	}{
		{0, " Sorted input is linear. The answer is (A).", 1},
		{0, " the answer is A", 1},
		{0, " The answer is (B). Oh wait, the answer is (A).", 0}, // the first match counts
		{1, " Prices double. The answer is (B)", 1},
		{1, " I pick B", 0},
		{2, " Three handshakes: the answer is C.", 1}, // gold from answer_index
	}
	perFilter := map[string][]evalsuite.Scores{}
	for _, c := range cases {
		sc, err := task.Score(task.Docs[c.doc], []evalsuite.Response{{Text: c.resp}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sc[0].Scores["exact_match"][0]; got != c.score {
			t.Errorf("doc %d %q: %v (filtered %q), want %v", c.doc, c.resp, got, sc[0].Filtered, c.score)
		}
		perFilter[sc[0].Filter] = append(perFilter[sc[0].Filter], sc[0].Scores)
	}
	aggs := evalsuite.AggregateScores(task.Metrics, task.FilterNames(), perFilter)
	// The catalog grades mmlu_pro on "exact_match,custom-extract".
	if len(aggs) != 1 || aggs[0].Key() != "exact_match,custom-extract" || aggs[0].Value != 4.0/6 {
		t.Errorf("aggregates %+v", aggs)
	}
}

func TestMMLUProErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Too few examples of a category for the shot count.
	_, err := Build("mmlu_pro", Source{Dataset: "testdata/mmlu_pro_test.jsonl", FewShotDataset: "testdata/mmlu_pro_validation.jsonl", NumFewShot: 3})
	if err == nil || !strings.Contains(err.Error(), `2 examples of category "economics"`) {
		t.Errorf("short few-shot pool: %v", err)
	}
	// A document without a category names its line.
	p := write("nocat.jsonl", `{"question": "q", "options": ["a", "b"], "answer": "A"}`+"\n")
	if _, err := Build("mmlu_pro", Source{Dataset: p, NumFewShot: -1}); err == nil || !strings.Contains(err.Error(), `nocat.jsonl:1: missing field "category"`) {
		t.Errorf("missing category: %v", err)
	}
	// A bad answer is reported when the document is scored.
	p = write("badanswer.jsonl", `{"question": "q", "options": ["a", "b"], "answer": "Z", "category": "math"}`+"\n"+
		`{"question": "q", "options": ["a", "b"], "category": "math"}`+"\n")
	task, err := Build("mmlu_pro", Source{Dataset: p, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Target(task.Docs[0]); err == nil || !strings.Contains(err.Error(), `badanswer.jsonl:1: field "answer" = "Z"`) {
		t.Errorf("bad answer: %v", err)
	}
	if _, err := task.Target(task.Docs[1]); err == nil || !strings.Contains(err.Error(), "answer_index") {
		t.Errorf("no answer: %v", err)
	}
	// A few-shot row without cot_content names its line.
	fs := write("nocot.jsonl", `{"question": "q", "options": ["a", "b"], "answer": "A", "category": "economics"}`+"\n")
	if _, err := Build("mmlu_pro", Source{Dataset: "testdata/mmlu_pro_test.jsonl", FewShotDataset: fs, NumFewShot: 1}); err == nil {
		t.Error("few-shot row without cot_content accepted")
	}
}
