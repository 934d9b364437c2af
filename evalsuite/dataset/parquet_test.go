package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// mmluRow has cais/mmlu's parquet schema.
type mmluRow struct {
	Question string   `parquet:"question"`
	Subject  *string  `parquet:"subject,optional"`
	Choices  []string `parquet:"choices,list"`
	Answer   int64    `parquet:"answer"`
}

func TestReadParquet(t *testing.T) {
	subj := "astronomy"
	var buf bytes.Buffer
	rows := []mmluRow{{"Which planet is largest?", &subj, []string{"Mars", "Jupiter", "Venus", "Earth"}, 1}, {"2+2?", nil, []string{"3", "4"}, 1}}
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "test.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := Load(p, Options{Mapping: Mapping{"topic": "subject"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d docs", len(docs))
	}
	choices, err := docs[0].Strings("choices")
	if err != nil || len(choices) != 4 || choices[1] != "Jupiter" {
		t.Errorf("choices %v %v", choices, err)
	}
	if n, err := docs[0].Int("answer"); err != nil || n != 1 {
		t.Errorf("answer %d %v", n, err)
	}
	if s, _ := docs[0].Str("topic"); s != "astronomy" {
		t.Errorf("mapped subject %q", s)
	}
	if _, err := docs[1].Str("topic"); err == nil {
		t.Error("a null optional value is a missing field")
	}
	if _, err := ReadParquet(bytes.NewReader([]byte("PAR1 not really")), 15, "bad.parquet", Options{}); err == nil {
		t.Error("want an error for a broken file")
	}
}

func FuzzReadParquet(f *testing.F) {
	var buf bytes.Buffer
	s := "x"
	if err := parquet.Write(&buf, []mmluRow{{"q", &s, []string{"a"}, 0}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := ReadParquet(bytes.NewReader(data), int64(len(data)), "f.parquet", Options{})
		if err != nil {
			return
		}
		for i, d := range docs {
			if d.ID != i {
				t.Fatalf("doc %d has id %d", i, d.ID)
			}
		}
	})
}
