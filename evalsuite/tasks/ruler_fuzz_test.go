package tasks

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadHotpot feeds arbitrary files to the HotpotQA reader: it returns
// rows or an error, never panics, and every question's paragraphs index
// the corpus.
func FuzzReadHotpot(f *testing.F) {
	seed, err := os.ReadFile("testdata/hotpot_dev_distractor_v1.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`[{"question":"q","answer":"a","context":[["t",["s"]]]}]`))
	f.Add([]byte(`[{"question":"q","answer":"a","context":[["t"]]}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "hotpot_dev_distractor_v1.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		qas, docs, err := readHotpot(path)
		if err != nil {
			return
		}
		for _, q := range qas {
			for _, i := range q.context {
				if i < 0 || i >= len(docs) {
					t.Fatalf("paragraph index %d of %d", i, len(docs))
				}
			}
		}
	})
}
