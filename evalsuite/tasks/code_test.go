package tasks

import (
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/sandbox"
	"github.com/ttis-dev/ttis/runtime/openai"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := sandbox.FindPython(); err != nil {
		t.Skip(err)
	}
}

func TestMBPPInstruct(t *testing.T) {
	needPython(t)
	task, err := Build("mbpp_instruct", Source{Dataset: "testdata/mbpp_full_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "mbpp_instruct.txt", reqs[0].Context)
	if m := reqs[0].Messages; m[len(m)-1].Role != "assistant" || m[len(m)-1].Content != "\n```python\n" {
		t.Errorf("chat requests end with the gen_prefix as an assistant turn: %+v", m[len(m)-1])
	}
	if got := strings.Join(task.FilterNames(), ","); got != "extract_code" {
		t.Errorf("filters %s: the catalog grades pass_at_1,extract_code", got)
	}
	canonical := field(task.Docs[0], "code")
	checkScores(t, task, task.Docs[0], "extract_code", "pass_at_1", []scoreCase{
		{"\n" + canonical + "\n```\nThis removes the first and last occurrences.", 1},
		// extract_code_blocks reads "```" + response, so a response that
		// starts with a word loses it as the fence's language, in lm-eval
		// as here: the code left is not valid.
		{canonical + "\n```", 0},
		{"def remove_Occ(s, ch):\n    return s.replace(ch, '')\n```", 0},    // wrong: removes every occurrence
		{"def remove_Occ(s, ch):\n    return s[", 0},                        // malformed: no closing fence, no code
		{"```python\ndef remove_Occ(s, ch):\n    while True: pass\n```", 0}, // never returns
	})
	right := func(d evalsuite.Doc) string { return "\n" + field(d, "code") + "\n```" }
	wrong := func(evalsuite.Doc) string { return "def f():\n    return 1\n```" }
	checkOracle(t, task, openai.Completions, "pass_at_1,extract_code", right, wrong)
}

func TestHumanEvalInstruct(t *testing.T) {
	needPython(t)
	task, err := Build("humaneval_instruct", Source{Dataset: "testdata/humaneval_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := task.Requests(task.Docs[1])
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "humaneval_instruct.txt", reqs[0].Context)
	canonical := field(task.Docs[0], "canonical_solution")
	checkScores(t, task, task.Docs[0], "create_test", "pass@1", []scoreCase{
		{canonical, 1},
		{canonical + "```\nThat is the function.", 1},
		{"    return False\n", 0},
		{"    return (\n", 0}, // malformed
		{"    import os\n    os.system('echo hi')\n    return True\n", 0},
	})
	right := func(d evalsuite.Doc) string { return field(d, "canonical_solution") + "```" }
	wrong := func(evalsuite.Doc) string { return "    return None\n```" }
	checkOracle(t, task, openai.Chat, "pass@1,create_test", right, wrong)
}
