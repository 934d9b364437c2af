package taskdata_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/hub"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
)

// gsm8kRow is openai/gsm8k's Parquet schema (config main).
type gsm8kRow struct {
	Question string `parquet:"question"`
	Answer   string `parquet:"answer"`
}

func parquetBytes[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tasks", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func client(t *testing.T, fake *hubtest.Server, dir string, mod func(*hub.Config)) *hub.Client {
	t.Helper()
	cfg := hub.Config{Endpoint: fake.URL, CacheDir: dir, MaxAttempts: 2, MaxRetryWait: time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := hub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPullBuildsTheTaskFromShardsAndFewShotPool(t *testing.T) {
	fake := hubtest.New(t)
	// The test split in two shards, as the Hub keeps large splits.
	fake.SetBranch("dataset", "openai/gsm8k", "main", []hubtest.File{
		{Path: "main/test-00000-of-00002.parquet", Content: parquetBytes(t, []gsm8kRow{{"What is 1+1?", "1+1=2\n#### 2"}}), LFS: true},
		{Path: "main/test-00001-of-00002.parquet", Content: parquetBytes(t, []gsm8kRow{{"What is 2+3?", "2+3=5\n#### 5"}, {"What is 4*2?", "4*2=8\n#### 8"}}), LFS: true},
		{Path: "main/train-00000-of-00001.parquet", Content: parquetBytes(t, []gsm8kRow{{"Q1?", "A\n#### 1"}, {"Q2?", "B\n#### 2"}, {"Q3?", "C\n#### 3"}, {"Q4?", "D\n#### 4"}, {"Q5?", "E\n#### 5"}, {"Q6?", "F\n#### 6"}}), LFS: true},
		{Path: "socratic/test-00000-of-00001.parquet", Content: []byte("not read"), LFS: true},
	})
	c := client(t, fake, t.TempDir(), nil)
	data, err := taskdata.Pull(context.Background(), c, "gsm8k", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Splits) != 2 || data.Splits[0].Revision != "main" || len(data.Splits[0].Files) != 2 || data.Splits[0].Commit == "" {
		t.Fatalf("pulled %+v", data.Splits)
	}
	src := tasks.Source{NumFewShot: -1}
	data.Apply(&src)
	task, err := tasks.Build("gsm8k", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != 3 || task.NumFewShot != 5 || len(task.FewShot) != 6 {
		t.Fatalf("task has %d docs, %d shots from a pool of %d", len(task.Docs), task.NumFewShot, len(task.FewShot))
	}
	for i, d := range task.Docs {
		if d.ID != i {
			t.Errorf("doc %d has id %d", i, d.ID)
		}
	}
	// A local file the user gave wins over the pulled one.
	local := filepath.Join(t.TempDir(), "mine.jsonl")
	os.WriteFile(local, []byte(`{"question":"Mine?","answer":"#### 7"}`+"\n"), 0o600)
	src = tasks.Source{Dataset: local, NumFewShot: -1}
	data.Apply(&src)
	if src.Dataset != local || src.FewShotDataset == "" {
		t.Fatalf("apply over a local file: %+v", src)
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r.Path, "socratic") {
			t.Errorf("pulled another config: %s", r.Path)
		}
	}
}

func TestModelSetsAndJSONLSplits(t *testing.T) {
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "HuggingFaceH4/MATH-500", "main", []hubtest.File{{Path: "test.jsonl", Content: fixture(t, "math500_test.jsonl")}})
	c := client(t, fake, t.TempDir(), nil)
	data, err := taskdata.Pull(context.Background(), c, "r1_math500", "")
	if err != nil {
		t.Fatal(err)
	}
	src := tasks.Source{NumFewShot: -1}
	data.Apply(&src)
	if _, err := tasks.Build("r1_math500", src); err != nil {
		t.Fatal(err)
	}

	splits, err := taskdata.Plan("meta_gpqa_cot", "meta-llama/Llama-3.1-8B-Instruct")
	if err != nil || len(splits) != 1 {
		t.Fatal(err)
	}
	s := splits[0]
	if s.Repo != "meta-llama/Llama-3.1-8B-Instruct-evals" || s.Revision != tasks.RevisionParquet ||
		s.Files != "Llama-3.1-8B-Instruct-evals__gpqa__details/latest/*.parquet" || !s.Gated {
		t.Errorf("meta_gpqa_cot split %+v", s)
	}
	if _, err := taskdata.Plan("meta_gpqa_cot", ""); err == nil || !strings.Contains(err.Error(), "catalog model") {
		t.Errorf("no model: %v", err)
	}
	if got := taskdata.PullCommand("meta_gpqa_cot", "Llama-3.1-8B-Instruct"); got != "ttisctl dataset pull meta_gpqa_cot --catalog-model Llama-3.1-8B-Instruct" {
		t.Errorf("pull command %q", got)
	}
	if _, err := taskdata.Plan("ruler", ""); err == nil || !strings.Contains(err.Error(), "cannot run") {
		t.Errorf("ruler: %v", err)
	}
	if !taskdata.Pullable("gsm8k") || taskdata.Pullable("ruler") || taskdata.Pullable("ttis_arith") || taskdata.Pullable("nope") {
		t.Error("Pullable")
	}
}

func TestGatedAndOffline(t *testing.T) {
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "Idavidrein/gpqa", "main", []hubtest.File{{Path: "gpqa_diamond.csv", Content: fixture(t, "gpqa.csv"), LFS: true}})
	fake.Gate("dataset", "Idavidrein/gpqa", "hf_ok")
	dir := t.TempDir()
	_, err := taskdata.Pull(context.Background(), client(t, fake, dir, nil), "gpqa_diamond_cot_zeroshot", "")
	if !errors.Is(err, hub.ErrGated) || !strings.Contains(err.Error(), "task gpqa_diamond_cot_zeroshot") || !strings.Contains(err.Error(), "hf-token-file") {
		t.Fatalf("gated without a token: %v", err)
	}
	offline := client(t, fake, dir, func(c *hub.Config) { c.Offline = true })
	_, err = taskdata.Pull(context.Background(), offline, "gpqa_diamond_cot_zeroshot", "")
	if !taskdata.IsMissing(err) || !strings.Contains(err.Error(), "Idavidrein/gpqa") {
		t.Fatalf("offline before a pull: %v", err)
	}
	if _, err := taskdata.Pull(context.Background(), client(t, fake, dir, func(c *hub.Config) { c.Token = "hf_ok" }), "gpqa_diamond_cot_zeroshot", ""); err != nil {
		t.Fatal(err)
	}
	data, err := taskdata.Pull(context.Background(), offline, "gpqa_diamond_cot_zeroshot", "")
	if err != nil {
		t.Fatalf("offline after a pull: %v", err)
	}
	src := tasks.Source{NumFewShot: -1}
	data.Apply(&src)
	if _, err := tasks.Build("gpqa_diamond_cot_zeroshot", src); err != nil {
		t.Fatal(err)
	}
}

// Every runnable task that reads a dataset declares where on the Hub it
// comes from, and every declaration plans.
func TestEveryRunnableTaskHasAHubSource(t *testing.T) {
	for _, info := range tasks.List() {
		if info.Builtin || info.NotRunnable != "" {
			continue
		}
		if len(info.Variants) > 0 {
			// Per model: a variant reads Hub splits, or names the files
			// it needs from outside the Hub.
			for _, v := range info.Variants {
				splits, err := taskdata.Plan(info.Name, v.Models[0])
				switch {
				case len(v.Data) > 0 && (err != nil || len(splits) != len(v.Data)):
					t.Errorf("%s (%s): %v (%d splits)", info.Name, v.Name, err, len(splits))
				case len(v.Data) == 0 && (err == nil || len(v.Assets) == 0 || !strings.Contains(err.Error(), v.Assets[0].File)):
					t.Errorf("%s (%s) reads no Hub data, and says %v", info.Name, v.Name, err)
				}
			}
			continue
		}
		splits, err := taskdata.Plan(info.Name, "meta-llama/Llama-3.1-8B-Instruct")
		if err != nil || len(splits) == 0 {
			t.Errorf("%s: %v (%d splits)", info.Name, err, len(splits))
		}
		for _, s := range splits {
			if err := (hub.Repo{Type: hub.Dataset, ID: s.Repo}).Validate(); err != nil {
				t.Errorf("%s: %v", info.Name, err)
			}
			if err := hub.CheckPattern(s.Files); err != nil {
				t.Errorf("%s: %v", info.Name, err)
			}
		}
	}
}

// A resumed run reads the commit it read first, even after the branch
// moved.
func TestPinsKeepTheCommit(t *testing.T) {
	fake := hubtest.New(t)
	first := fake.SetBranch("dataset", "HuggingFaceH4/MATH-500", "main", []hubtest.File{{Path: "test.jsonl", Content: fixture(t, "math500_test.jsonl")}})
	c := client(t, fake, t.TempDir(), nil)
	data, err := taskdata.Pull(context.Background(), c, "r1_math500", "")
	if err != nil {
		t.Fatal(err)
	}
	second := fake.SetBranch("dataset", "HuggingFaceH4/MATH-500", "main", []hubtest.File{{Path: "test.jsonl", Content: []byte(`{"problem":"moved","answer":"1"}` + "\n")}})
	pins := taskdata.PinsOf([]*taskdata.Data{data})
	if pins["HuggingFaceH4/MATH-500@main"] != first {
		t.Fatalf("pins %v", pins)
	}
	again, err := taskdata.PullPinned(context.Background(), c, "r1_math500", "", pins)
	if err != nil || again.Splits[0].Commit != first || again.Splits[0].Revision != "main" {
		t.Fatalf("pinned pull: %v %+v", err, again)
	}
	fresh, err := taskdata.Pull(context.Background(), c, "r1_math500", "")
	if err != nil || fresh.Splits[0].Commit != second {
		t.Fatalf("unpinned pull: %v, commit %s, want %s", err, fresh.Splits[0].Commit, second)
	}
}
