package punkt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestTokenizeMatchesNLTK checks every case testdata/punkt_expected.py
// recorded from Python NLTK: hand-made and trained parameters, made-up
// edge cases, seeded random texts (word-level, and character-level ones
// with Unicode spaces, letters and digits) and the training paragraphs.
func TestTokenizeMatchesNLTK(t *testing.T) {
	data, err := os.ReadFile("testdata/punkt_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Params    string   `json:"params"`
		Text      string   `json:"text"`
		Sentences []string `json:"sentences"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	toks := map[string]*Tokenizer{}
	for _, name := range []string{"hand", "trained"} {
		p, err := Load(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		toks[name] = New(p)
	}
	failed := 0
	for i, c := range cases {
		got := toks[c.Params].Tokenize(c.Text)
		if len(got) == 0 && len(c.Sentences) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.Sentences) {
			failed++
			if failed <= 10 {
				t.Errorf("case %d (%s) %q:\n got %q\nwant %q", i, c.Params, c.Text, got, c.Sentences)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d cases differ from NLTK", failed, len(cases))
	}
	if len(cases) < 1400 {
		t.Fatalf("only %d cases recorded", len(cases))
	}
}
