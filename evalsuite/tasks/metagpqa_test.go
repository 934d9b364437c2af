package tasks

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
)

func TestMetaGPQA(t *testing.T) {
	plain, err := Build("meta_gpqa", Source{Dataset: "testdata/meta_gpqa_details.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	cot, err := Build("meta_gpqa_cot", Source{Dataset: "testdata/meta_gpqa_details.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	// meta_gpqa sends Meta's prompt unchanged; meta_gpqa_cot renames the
	// header tokens as the cookbook's doc_to_text does.
	p, err := plain.Requests(plain.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := cot.Requests(cot.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p[0].Context, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nPick one") ||
		!strings.HasSuffix(p[0].Context, "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n") {
		t.Errorf("meta_gpqa prompt %q", p[0].Context)
	}
	if want := "<|begin_of_text|><|header_start|>user<|header_end|>\n\nPick one"; !strings.HasPrefix(c[0].Context, want) ||
		!strings.HasSuffix(c[0].Context, "<|eot|><|header_start|>assistant<|header_end|>\n\n") {
		t.Errorf("meta_gpqa_cot prompt %q", c[0].Context)
	}
	if g := cot.Gen; g.MaxGenToks != 2048 || len(g.Until) != 0 || g.Temperature != 0 {
		t.Errorf("gen kwargs %+v", g)
	}
	for _, tc := range []struct {
		task      *evalsuite.Task
		doc       int
		resp      string
		want      float64
		extracted string
	}{
		{cot, 0, "Lumex glows. The best answer is C.", 1, "C"},
		{cot, 0, "The best answer is B. No wait, the best answer is C", 1, "C"}, // the last match
		{cot, 0, "It is C", 0, "[invalid]"},
		{plain, 0, "I think B. The best answer is C", 1, "C"},
		{plain, 1, " A", 1, "A"},
		{plain, 1, "A", 0, "[invalid]"}, // the letter must follow a space
	} {
		sc, err := tc.task.Score(tc.task.Docs[tc.doc], []evalsuite.Response{{Text: tc.resp}})
		if err != nil {
			t.Fatal(err)
		}
		if sc[0].Filter != "strict-match" || sc[0].Scores["exact_match"][0] != tc.want || sc[0].Filtered != tc.extracted {
			t.Errorf("%s %q: %+v, want %v (%q)", tc.task.Name, tc.resp, sc[0], tc.want, tc.extracted)
		}
	}
	// A row with an empty prompt list is an error naming it.
	if _, err := plain.Requests(plain.Docs[2]); err == nil || !strings.Contains(err.Error(), `meta_gpqa_details.jsonl:3: field "input_final_prompts" is an empty list`) {
		t.Errorf("empty prompts: %v", err)
	}
}
