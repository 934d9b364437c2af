package tasks

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

func firstAnswer(d evalsuite.Doc) string {
	a, err := d.Strings("answers")
	if err != nil {
		panic(err)
	}
	return a[0]
}

func TestLongBenchSingle(t *testing.T) {
	task, err := Build("longbench_single_e", Source{NumFewShot: -1, Files: map[string]string{
		"test:qasper_e": "testdata/longbench_qasper_e.jsonl", "test:multifieldqa_en_e": "testdata/longbench_multifieldqa_en_e.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != 3 {
		t.Fatalf("%d documents", len(task.Docs))
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "longbench_single_e.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 64 || len(g.Until) != 0 || g.Temperature != 1 {
		t.Errorf("multifieldqa_en_e's generation settings: %+v", g) // files load in role order: multifieldqa first
	}
	checkScores(t, task, task.Docs[0], "none", "score", []scoreCase{
		{" Osnabrück and Münster.", 1},
		{"Münster", 0.5}, // one of three gold words
		{"Paris", 0},
		{"", 0},
	})
	right := func(d evalsuite.Doc) string { return firstAnswer(d) }
	wrong := func(evalsuite.Doc) string { return "zebra" }
	checkOracle(t, task, openai.Completions, "score,none", right, wrong)
	// The group value is the plain mean of the subtasks: one of two
	// qasper rows right and the multifieldqa row right is (0.5+1)/2.
	half := func(d evalsuite.Doc) string {
		if field(d, "_id") == "q2" {
			return "no"
		}
		return firstAnswer(d)
	}
	if got := runOracle(t, task, openai.Completions, half)["score,none"]; got != 0.75 {
		t.Errorf("group score %v, want the unweighted mean 0.75", got)
	}
}

func TestLongBenchFewShotAndCode(t *testing.T) {
	task, err := Build("longbench_fewshot_e", Source{Dataset: "testdata/longbench_trec_e.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "longbench_fewshot_e.txt", reqs[0].Context)
	if g := reqs[0].Gen; g.MaxGenToks != 64 || strings.Join(g.Until, "|") != "\n" {
		t.Errorf("trec_e's generation settings: %+v", g)
	}
	checkScores(t, task, task.Docs[0], "none", "score", []scoreCase{{" City", 1}, {"City or Country", 0.5}, {"Date", 0}, {"", 0}})
	checkOracle(t, task, openai.Completions, "score,none", firstAnswer, func(evalsuite.Doc) string { return "Date" })

	code, err := Build("longbench_code_e", Source{NumFewShot: -1, Files: map[string]string{"test:lcc_e": "testdata/longbench_lcc_e.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err = code.Requests(code.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "longbench_code_e.txt", reqs[0].Context)
	checkScores(t, code, code.Docs[0], "none", "score", []scoreCase{{"```python\n    return math.pi * r * r\n```", 1}, {"", 0}})
	checkOracle(t, code, openai.Completions, "score,none", firstAnswer, func(evalsuite.Doc) string { return "}" })
	if _, err := Build("longbench_code_e", Source{NumFewShot: -1, Files: map[string]string{"test:trec_e": "testdata/longbench_trec_e.jsonl"}}); err == nil {
		t.Error("a file for another group's subtask must be refused")
	}
}

func TestLongBenchRowsNameTheirDataset(t *testing.T) {
	// Rows name their dataset: qasper rows are no summarization rows.
	_, err := Build("longbench_summarization_e", Source{Dataset: "testdata/longbench_qasper_e.jsonl", NumFewShot: -1})
	if err == nil || !strings.Contains(err.Error(), "no documents") {
		t.Fatalf("qasper rows for the summarization group: %v", err)
	}
}
