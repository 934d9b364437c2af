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

// FuzzWonderwordsPairs feeds arbitrary word lists to WORDS' builder: the
// pairs come out strictly increasing as strings (sorted, no duplicates)
// and as many as Python's sorted(set(...)) would give.
func FuzzWonderwordsPairs(f *testing.F) {
	f.Add([]byte("well\nwell-off\nup to date\n"), []byte("off-road\nroad\n"))
	f.Add([]byte("a\n"), []byte("\n\n"))
	f.Add([]byte("\xff\n"), []byte("b\r\n"))
	f.Fuzz(func(t *testing.T, adjs, nouns []byte) {
		if len(adjs)*len(nouns) > 1<<16 {
			return
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "adjectivelist.txt"), adjs, 0o644)
		os.WriteFile(filepath.Join(dir, "nounlist.txt"), nouns, 0o644)
		w, err := loadWonderwordsPairs(dir)
		if err != nil {
			return
		}
		set := map[string]bool{}
		for _, a := range w.adjs {
			for _, n := range w.nouns {
				set[a+"-"+n] = true
			}
		}
		if w.len() != len(set) {
			t.Fatalf("%d pairs, %d distinct strings", w.len(), len(set))
		}
		for i := 1; i < w.len(); i++ {
			if !(w.at(i-1) < w.at(i)) {
				t.Fatalf("%q then %q", w.at(i-1), w.at(i))
			}
		}
	})
}
