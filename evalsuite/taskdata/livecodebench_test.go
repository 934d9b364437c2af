package taskdata_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/sandbox"
	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
)

// TestLiveCodeBenchFromTheHub: livecodebench/code_generation_lite's
// JSONL files are pulled as one split; the task reads release_v6's files
// (not a later test7.jsonl) and grades against the private tests
// read back from the cache.
func TestLiveCodeBenchFromTheHub(t *testing.T) {
	rows := strings.SplitAfter(strings.TrimSpace(string(fixture(t, "livecodebench_test.jsonl"))), "\n")
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "livecodebench/code_generation_lite", "main", []hubtest.File{
		{Path: "README.md", Content: []byte("# LiveCodeBench\n")},
		{Path: "code_generation_lite.py", Content: []byte("# loading script, not read\n")},
		{Path: "test.jsonl", Content: []byte(rows[0]), LFS: true},
		{Path: "test6.jsonl", Content: []byte(rows[1]), LFS: true},
		{Path: "test7.jsonl", Content: []byte(rows[2]), LFS: true},
	})
	data, err := taskdata.Pull(context.Background(), client(t, fake, t.TempDir(), nil), "livecodebench", "")
	if err != nil {
		t.Fatal(err)
	}
	src := tasks.Source{NumFewShot: -1}
	data.Apply(&src)
	task, err := tasks.Build("livecodebench", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != 2 {
		t.Fatalf("%d documents, want test.jsonl's and test6.jsonl's", len(task.Docs))
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r.Path, "test7") {
			t.Errorf("pulled a later release's file: %s", r.Path)
		}
	}
	if _, err := sandbox.FindPython(); err != nil {
		t.Skip(err)
	}
	sc, err := task.Process(task.Docs[1], "```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        return num + 2 * t\n```")
	if err != nil || sc["acc"][0] != 1 {
		t.Fatalf("the right answer scores %v, %v", sc, err)
	}
	sc, err = task.Process(task.Docs[1], "```python\nclass Solution:\n    def theMaximumAchievableX(self, num, t):\n        return 6 if num == 4 else 0\n```")
	if err != nil || sc["acc"][0] != 0 {
		t.Fatalf("an answer that passes only the public test scores %v, %v", sc, err)
	}
}
