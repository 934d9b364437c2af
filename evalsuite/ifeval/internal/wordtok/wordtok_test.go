package wordtok

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/internal/punkt"
)

// englishPunkt are NLTK's English punkt_tab parameters, kept beside the
// ifeval tests (see ../../testdata/punkt_tab/README.md).
func englishPunkt(t testing.TB) *punkt.Tokenizer {
	t.Helper()
	p, err := punkt.Load("../../testdata/punkt_tab")
	if err != nil {
		t.Fatal(err)
	}
	return punkt.New(p)
}

// TestMatchesNLTK compares NLTKWordTokenizer().tokenize and word_tokenize
// with what testdata/wordtok_expected.py recorded from NLTK 3.9.1.
func TestMatchesNLTK(t *testing.T) {
	sent := englishPunkt(t)
	data, err := os.ReadFile("testdata/wordtok_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text         string   `json:"text"`
		Tokenize     []string `json:"tokenize"`
		WordTokenize []string `json:"word_tokenize"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 400 {
		t.Fatalf("only %d cases recorded", len(cases))
	}
	failed := 0
	for i, c := range cases {
		got, err := Tokenize(c.Text)
		if err != nil {
			t.Fatal(err)
		}
		words, err := WordTokenize(sent, c.Text)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(c.Tokenize) == 0 && len(words) == 0 && len(c.WordTokenize) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.Tokenize) || !reflect.DeepEqual(words, c.WordTokenize) {
			failed++
			if failed <= 10 {
				t.Errorf("case %d %q:\n tokenize      %q\n want          %q\n word_tokenize %q\n want          %q", i, c.Text, got, c.Tokenize, words, c.WordTokenize)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d cases differ from NLTK", failed, len(cases))
	}
}

func FuzzTokenize(f *testing.F) {
	sent := englishPunkt(f)
	f.Add("They'll save and invest more. I can't.")
	f.Add("\"Quoted,\" ``x'' (a) [b] -- c...")
	f.Fuzz(func(t *testing.T, s string) {
		words, err := WordTokenize(sent, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words {
			if w == "" {
				t.Fatalf("%q: an empty word in %q", s, words)
			}
		}
	})
}
