package tasks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/backend"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/runtime/openai"
)

func TestChartQA(t *testing.T) {
	task, err := Build("chartqa", Source{Dataset: "testdata/chartqa_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "chartqa.txt", reqs[0].Context)
	// The chat message is lmms-eval's: the text part, then the image.
	raw, err := json.Marshal(reqs[0].Messages)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"content":[{"type":"text","text":"What is the value of the tallest bar?\nAnswer the question with a single word."},{"type":"image_url","image_url":{"url":"data:image/png;base64,`) {
		t.Errorf("chat message %s", raw)
	}
	checkScores(t, task, task.Docs[0], "none", "relaxed_overall", []scoreCase{{"42", 1}, {"41", 1}, {"44.5", 0}, {"forty-two", 0}, {"", 0}})
	checkScores(t, task, task.Docs[1], "none", "relaxed_overall", []scoreCase{{"peru", 1}, {"Peru.", 0}})
	right := func(d evalsuite.Doc) string { return field(d, "answer") }
	wrong := func(evalsuite.Doc) string { return "banana" }
	checkOracle(t, task, openai.Chat, "relaxed_overall,none", right, wrong)
	got := runOracle(t, task, openai.Chat, right)
	if got["relaxed_human_split,none"] != 1 || got["relaxed_augmented_split,none"] != 1 {
		t.Errorf("splits %v", got)
	}
	// Images cannot go to a completions endpoint.
	srv, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := backend.New(srv, backend.Config{Model: "m", API: openai.Completions})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(context.Background(), task, cl, runner.Options{}); err == nil || !strings.Contains(err.Error(), "chat API") {
		t.Errorf("chartqa on completions: %v", err)
	}
}

func TestDocVQAVal(t *testing.T) {
	task, err := Build("docvqa_val", Source{Dataset: "testdata/docvqa_validation.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "docvqa_val.txt", reqs[0].Context)
	checkScores(t, task, task.Docs[1], "none", "anls", []scoreCase{{"ITC Limited", 1}, {"itc limited.", 1 - 1.0/12}, {"Acme", 0}, {"", 0}})
	right := func(d evalsuite.Doc) string { a, _ := d.Strings("answers"); return a[0] }
	wrong := func(evalsuite.Doc) string { return "zzzzzzzz" }
	checkOracle(t, task, openai.Chat, "anls,none", right, wrong)
}

func TestImageDataURLErrors(t *testing.T) {
	for _, v := range []any{nil, "plain text", map[string]any{"path": "a.png"}, map[string]any{"bytes": "not an image"}} {
		if _, err := ImageDataURL(v); err == nil {
			t.Errorf("%#v must be an error", v)
		}
	}
}
