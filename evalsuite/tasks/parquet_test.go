package tasks

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// hubImage is the Parquet layout of Hugging Face's Image feature.
type hubImage struct {
	Bytes []byte  `parquet:"bytes"`
	Path  *string `parquet:"path,optional"`
}

// chartQARow is lmms-lab/ChartQA's Parquet schema.
type chartQARow struct {
	Type     string   `parquet:"type"`
	Question string   `parquet:"question"`
	Answer   string   `parquet:"answer"`
	Image    hubImage `parquet:"image"`
}

// mbppRow is google-research-datasets/mbpp's Parquet schema (config full).
type mbppRow struct {
	TaskID            int64    `parquet:"task_id"`
	Text              string   `parquet:"text"`
	Code              string   `parquet:"code"`
	TestList          []string `parquet:"test_list,list"`
	TestSetupCode     string   `parquet:"test_setup_code"`
	ChallengeTestList []string `parquet:"challenge_test_list,list"`
}

func writeParquet[T any](t *testing.T, rows []T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "test-00000-of-00001.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// samePrompts builds name from the JSON Lines fixture and from its Parquet
// copy and checks that every request is the same.
func samePrompts(t *testing.T, name, jsonl, pq string) {
	t.Helper()
	a, err := Build(name, Source{Dataset: jsonl, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(name, Source{Dataset: pq, NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Docs) != len(b.Docs) {
		t.Fatalf("%s: %d documents from JSON Lines, %d from Parquet", name, len(a.Docs), len(b.Docs))
	}
	for i := range a.Docs {
		ra, err := a.Requests(a.Docs[i])
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Requests(b.Docs[i])
		if err != nil {
			t.Fatal(err)
		}
		if ra[0].Context != rb[0].Context {
			t.Errorf("%s doc %d: prompts differ between JSON Lines and Parquet", name, i)
		}
		ma, mb := ra[0].Messages, rb[0].Messages
		if len(ma[len(ma)-1].Images) != len(mb[len(mb)-1].Images) {
			t.Errorf("%s doc %d: images differ", name, i)
		}
		for k := range ma[len(ma)-1].Images {
			if ma[len(ma)-1].Images[k] != mb[len(mb)-1].Images[k] {
				t.Errorf("%s doc %d: image %d differs", name, i, k)
			}
		}
	}
}

// TestHubParquetLayout reads the fixtures' rows in the Hub's Parquet
// layout (images as {bytes, path} structs with raw bytes, lists as lists)
// and checks the tasks send exactly what the JSON Lines copies give.
func TestHubParquetLayout(t *testing.T) {
	chart, err := Build("chartqa", Source{Dataset: "testdata/chartqa_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	var rows []chartQARow
	for _, d := range chart.Docs {
		img := d.Fields["image"].(map[string]any)
		raw, err := base64.StdEncoding.DecodeString(img["bytes"].(string))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, chartQARow{field(d, "type"), field(d, "question"), field(d, "answer"), hubImage{Bytes: raw}})
	}
	samePrompts(t, "chartqa", "testdata/chartqa_test.jsonl", writeParquet(t, rows))

	mbpp, err := Build("mbpp_instruct", Source{Dataset: "testdata/mbpp_full_test.jsonl", NumFewShot: -1})
	if err != nil {
		t.Fatal(err)
	}
	var mrows []mbppRow
	for _, d := range mbpp.Docs {
		tests, _ := d.Strings("test_list")
		ch, _ := d.Strings("challenge_test_list")
		id, _ := d.Int("task_id")
		mrows = append(mrows, mbppRow{int64(id), field(d, "text"), field(d, "code"), tests, field(d, "test_setup_code"), ch})
	}
	samePrompts(t, "mbpp_instruct", "testdata/mbpp_full_test.jsonl", writeParquet(t, mrows))
}
