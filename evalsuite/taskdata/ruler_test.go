package taskdata_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/taskdata"
	"github.com/ttis-dev/ttis/evalsuite/tasks"
	"github.com/ttis-dev/ttis/runtime/hub/hubtest"
)

// squadRow is rajpurkar/squad_v2's Parquet schema.
type squadRow struct {
	ID       string `parquet:"id"`
	Title    string `parquet:"title"`
	Context  string `parquet:"context"`
	Question string `parquet:"question"`
	Answers  struct {
		Text        []string `parquet:"text,list"`
		AnswerStart []int32  `parquet:"answer_start,list"`
	} `parquet:"answers"`
}

// TestPullRulerQASquad pulls ruler_qa_squad's data from the fake Hub's
// converted-Parquet branch of rajpurkar/squad_v2 and builds the task,
// cut with a stand-in tokenizer.
func TestPullRulerQASquad(t *testing.T) {
	var rows []squadRow
	sc := bufio.NewScanner(strings.NewReader(string(fixture(t, "squad_v2_validation.jsonl"))))
	for sc.Scan() {
		var r struct {
			ID, Title, Context, Question string
			Answers                      struct {
				Text        []string `json:"text"`
				AnswerStart []int32  `json:"answer_start"`
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		row := squadRow{ID: r.ID, Title: r.Title, Context: r.Context, Question: r.Question}
		row.Answers.Text, row.Answers.AnswerStart = r.Answers.Text, r.Answers.AnswerStart
		rows = append(rows, row)
	}
	fake := hubtest.New(t)
	fake.SetBranch("dataset", "rajpurkar/squad_v2", "refs/convert/parquet", []hubtest.File{
		{Path: "squad_v2/validation/0000.parquet", Content: parquetBytes(t, rows), LFS: true},
		{Path: "squad_v2/train/0000.parquet", Content: []byte("not read"), LFS: true},
	})
	data, err := taskdata.Pull(context.Background(), client(t, fake, t.TempDir(), nil), "ruler_qa_squad", "")
	if err != nil {
		t.Fatal(err)
	}
	src := tasks.Source{NumFewShot: -1, Size: 2, SeqLengths: []int{1024},
		CountTokens: func(s string) (int, error) { return len(strings.Fields(s)) + 1, nil }}
	data.Apply(&src)
	task, err := tasks.Build("ruler_qa_squad", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Docs) != 2 {
		t.Fatalf("%d documents", len(task.Docs))
	}
	if got, _ := task.Docs[0].Strings("outputs"); len(got) != 2 || got[0] != "Normans part 0" {
		t.Errorf("first question's answers %v", got)
	}
}

// TestPullRulerEssays pulls the essay tasks' haystack from the fake Hub's
// converted-Parquet branch of baber/paul_graham_essays and builds
// niah_single_2 from it beside a --dataset folder holding only the
// user's wonderwords and punkt_tab folders: the documents are those built
// from the essays kept in the folder.
func TestPullRulerEssays(t *testing.T) {
	type essayRow struct {
		Text string `parquet:"text" json:"text"`
	}
	var rows []essayRow
	sc := bufio.NewScanner(strings.NewReader(string(fixture(t, "ruler_essay/paul_graham_essays/train-00000-of-00001.jsonl"))))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r essayRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("no essays in the fixture")
	}
	for _, name := range []string{"niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue", "niah_multiquery"} {
		if !taskdata.Pullable(name) || !taskdata.Supplementary(name) {
			t.Errorf("%s: pullable %v, supplementary %v", name, taskdata.Pullable(name), taskdata.Supplementary(name))
		}
	}
	if taskdata.Supplementary("ruler_qa_squad") || !taskdata.Pullable("ruler_qa_squad") || !taskdata.Pullable("ruler_qa_hotpot") {
		t.Error("the QA tasks' Hub data is their test split")
	}
	if s, err := taskdata.Plan("niah_single_1", ""); err != nil || len(s) != 0 || taskdata.Pullable("niah_single_1") {
		t.Errorf("niah_single_1 reads no Hub data: %v %v", s, err)
	}

	fake := hubtest.New(t)
	fake.SetBranch("dataset", "baber/paul_graham_essays", "refs/convert/parquet", []hubtest.File{
		{Path: "default/train/0000.parquet", Content: parquetBytes(t, rows), LFS: true},
	})
	data, err := taskdata.Pull(context.Background(), client(t, fake, t.TempDir(), nil), "niah_single_2", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Splits) != 1 || data.Splits[0].Role != tasks.RoleEssays || data.Splits[0].Revision != tasks.RevisionParquet {
		t.Fatalf("splits %+v", data.Splits)
	}
	dir := t.TempDir()
	for _, sub := range []string{"wonderwords", "punkt_tab"} {
		abs, err := filepath.Abs(filepath.Join("..", "tasks", "testdata", "ruler_essay", sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s string) (int, error) { return len(strings.Fields(s)) + 1, nil }
	src := tasks.Source{Dataset: dir, NumFewShot: -1, Size: 2, SeqLengths: []int{1024}, CountTokens: count}
	if _, err := tasks.Build("niah_single_2", src); err == nil || !strings.Contains(err.Error(), "ttisctl dataset pull niah_single_2") {
		t.Errorf("without the essays: %v", err)
	}
	data.Apply(&src)
	pulled, err := tasks.Build("niah_single_2", src)
	if err != nil {
		t.Fatal(err)
	}
	local, err := tasks.Build("niah_single_2", tasks.Source{Dataset: filepath.Join("..", "tasks", "testdata", "ruler_essay"),
		NumFewShot: -1, Size: 2, SeqLengths: []int{1024}, CountTokens: count})
	if err != nil {
		t.Fatal(err)
	}
	if len(pulled.Docs) != 2 || !reflect.DeepEqual(pulled.Docs, local.Docs) {
		t.Errorf("documents from the pulled essays differ from the local ones:\n%v\n%v", pulled.Docs, local.Docs)
	}

	// Without the user's folder the error says what to provide.
	src = tasks.Source{NumFewShot: -1, Size: 2, SeqLengths: []int{1024}, CountTokens: count}
	data.Apply(&src)
	_, err = tasks.Build("niah_single_2", src)
	if err == nil || !strings.Contains(err.Error(), "wonderwords/") || !strings.Contains(err.Error(), "punkt_tab/") {
		t.Errorf("without --dataset: %v", err)
	}
}
