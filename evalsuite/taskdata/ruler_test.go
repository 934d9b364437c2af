package taskdata_test

import (
	"bufio"
	"context"
	"encoding/json"
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
