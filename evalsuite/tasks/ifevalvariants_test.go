package tasks

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/runtime/openai"
)

// ifevalReplies follow the two fixture rows' instructions (no commas; at
// least 12 placeholders) or break them.
var (
	ifevalRight = map[string]string{
		"Japan":  "Day one we sail to Tokyo and there we feast",
		"resume": strings.Repeat("[field] ", 12),
	}
	ifevalWrong = map[string]string{
		"Japan":  "Day one, we sail to Tokyo, and there we feast",
		"resume": "[name] [address]",
	}
)

func ifevalReply(replies map[string]string) func(evalsuite.Doc) string {
	return func(d evalsuite.Doc) string {
		p := field(d, "prompt")
		for k, v := range replies {
			if strings.Contains(p, k) {
				return v
			}
		}
		return ""
	}
}

func TestLeaderboardIFEval(t *testing.T) {
	task, err := Build("leaderboard_ifeval", Source{Dataset: "testdata/ifeval_wisk_train.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "leaderboard_ifeval.txt", reqs[0].Context)
	checkScores(t, task, task.Docs[0], "none", "prompt_level_strict_acc", []scoreCase{
		{ifevalRight["Japan"], 1}, {ifevalWrong["Japan"], 0}, {"   ", 0}, // an empty response follows nothing
	})
	checkOracle(t, task, openai.Completions, "prompt_level_strict_acc,none", ifevalReply(ifevalRight), ifevalReply(ifevalWrong))
}

func TestMetaIFEval(t *testing.T) {
	task, err := Build("meta_ifeval", Source{Dataset: "testdata/meta_ifeval_details.jsonl", NumFewShot: -1,
		Files: map[string]string{"original": "testdata/ifeval_wisk_train.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[1])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "meta_ifeval.txt", reqs[0].Context)
	if !strings.HasPrefix(reqs[0].Context, "<|begin_of_text|>") {
		t.Error("meta_ifeval sends Meta's final prompt as it is")
	}
	checkScores(t, task, task.Docs[1], "none", "inst_level_loose_acc", []scoreCase{
		{ifevalRight["resume"], 1}, {ifevalWrong["resume"], 0}, {"", 0},
	})
	for _, key := range []string{"prompt_level_strict_acc,none", "inst_level_strict_acc,none", "prompt_level_loose_acc,none", "inst_level_loose_acc,none"} {
		checkOracle(t, task, openai.Completions, key, ifevalReply(ifevalRight), ifevalReply(ifevalWrong))
	}
}

func TestMetaQuestion(t *testing.T) {
	q, err := metaQuestion(`{"dialog": [{"source": "user", "body": "Is the following true? It is false and null."}], "x": true}`)
	if err != nil {
		t.Fatal(err)
	}
	// The cookbook's Python-literal rewrite changes the words; only two
	// phrases are put back.
	if want := "Is the following true? It is False and None."; q != want {
		t.Errorf("%q, want %q", q, want)
	}
	if _, err := metaQuestion("not json"); err == nil {
		t.Error("a malformed input_question must be an error")
	}
}
