package tasks

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
)

func TestR1GPQA(t *testing.T) {
	task, err := Build("r1_gpqa_diamond", Source{Dataset: "testdata/gpqa.csv", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[1])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "r1_gpqa_diamond.txt", reqs[0].Context)
	if g := task.Gen; g.MaxGenToks != 32768 || g.Temperature != 0.6 || len(g.Until) != 3 {
		t.Errorf("gen kwargs %+v", g)
	}
	if got := strings.Join(task.FilterNames(), ","); got != "none" {
		t.Errorf("filters %s: the catalog grades r1_gpqa_diamond on exact_match,none", got)
	}
	// Document 0's answer is (C).
	perFilter := map[string][]evalsuite.Scores{}
	for _, c := range []struct {
		resp string
		want float64
	}{
		{"<think>412 Q is listed third.</think>\n\nThe answer is \\boxed{C}", 1},
		{"\\boxed{(C)}", 1},
		{"\\boxed{A} no wait \\boxed{c}", 1}, // the last box counts; letters are case-folded
		{"The answer is (B).", 0},
		{"It melts at 412 Q", 0}, // no box, no "answer is": the last number is taken
		{"", 0},
	} {
		sc, err := task.Score(task.Docs[0], []evalsuite.Response{{Text: c.resp}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sc[0].Scores["exact_match"][0]; got != c.want {
			t.Errorf("%q: %v, want %v", c.resp, got, c.want)
		}
		perFilter[sc[0].Filter] = append(perFilter[sc[0].Filter], sc[0].Scores)
	}
	aggs := evalsuite.AggregateScores(task.Metrics, task.FilterNames(), perFilter)
	if len(aggs) != 1 || aggs[0].Key() != "exact_match,none" || aggs[0].Value != 0.5 {
		t.Errorf("aggregates %+v", aggs)
	}
}
