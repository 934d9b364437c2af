package metric

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestWordEdits(t *testing.T) {
	for _, tt := range []struct {
		ref, hyp string
		want     int
	}{
		{"the cat sat", "the cat sat", 0},
		{"the cat sat", "the cat", 1},           // deletion
		{"the cat sat", "the big cat sat", 1},   // insertion
		{"the cat sat", "the dog sat", 1},       // substitution
		{"the cat sat", "", 3},                  // all deleted
		{"", "a b", 2},                          // all inserted
		{"a b c d", "b c d a", 2},               // shift = delete + insert
		{"kitten sitting", "sitting kitten", 2}, // swap = 2 substitutions
	} {
		if got := WordEdits(strings.Fields(tt.ref), strings.Fields(tt.hyp)); got != tt.want {
			t.Errorf("WordEdits(%q, %q) = %d, want %d", tt.ref, tt.hyp, got, tt.want)
		}
	}
}

func TestWERWordsNormalisation(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		// LibriSpeech's references are upper case without punctuation.
		{"HE HOPED THERE WOULD BE STEW FOR DINNER", []string{"he", "hoped", "there", "would", "be", "stew", "for", "dinner"}},
		// A transcript's case, punctuation and Whisper markers go.
		{"<|startoftranscript|> He hoped there would be stew for dinner!", []string{"he", "hoped", "there", "would", "be", "stew", "for", "dinner"}},
		// Contractions and titles are expanded, fillers and brackets dropped.
		{"Mr. Smith won't go, um, [inaudible] (laughs) there.", []string{"mister", "smith", "will", "not", "go", "there"}},
		{"I'm sure they've gone", []string{"i", "am", "sure", "they", "have", "gone"}},
		// Diacritics are removed, ligatures spelled out.
		{"Café Æsir", []string{"cafe", "aesir"}},
		{"   ", nil},
	} {
		if got := WERWords(tt.in, "en"); !slices.Equal(got, tt.want) {
			t.Errorf("WERWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Other languages get the basic normaliser only: no contraction
	// expansion, apostrophes become spaces.
	if got, want := WERWords("Don't", "fr"), []string{"don", "t"}; !slices.Equal(got, want) {
		t.Errorf("basic: %q, want %q", got, want)
	}
}

func TestCorpusWER(t *testing.T) {
	docs := [][]float64{
		DocWER("HE HOPED THERE WOULD BE STEW", "He hoped there would be stew.", "en"),    // 0 of 6
		DocWER("FOR DINNER TURNIPS AND CARROTS", "for dinner turnips and parrots", "en"), // 1 of 5
		DocWER("AND BRUISED POTATOES", "", "en"),                                         // 3 of 3
	}
	if got, want := CorpusWER(docs), 100*4.0/14; math.Abs(got-want) > 1e-12 {
		t.Errorf("CorpusWER = %v, want %v (edits summed over words summed, in percent)", got, want)
	}
	if !math.IsNaN(CorpusWER(nil)) {
		t.Error("no words: want NaN")
	}
}

func TestSpearman(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	if got := Spearman(x, []float64{10, 20, 30, 40, 50}); math.Abs(got-1) > 1e-12 {
		t.Errorf("monotone: %v", got)
	}
	if got := Spearman(x, []float64{5, 4, 3, 2, 1}); math.Abs(got+1) > 1e-12 {
		t.Errorf("reversed: %v", got)
	}
	// scipy.stats.spearmanr([1,2,2,3],[1,3,2,4]) = 0.9486832980505138
	// (ties get average ranks).
	if got := Spearman([]float64{1, 2, 2, 3}, []float64{1, 3, 2, 4}); math.Abs(got-0.9486832980505138) > 1e-12 {
		t.Errorf("ties: %v", got)
	}
	if !math.IsNaN(Spearman([]float64{1, 1}, []float64{1, 2})) {
		t.Error("constant side: want NaN")
	}
	if got := CorpusSpearman([][]float64{{0.1, 1}, {0.5, 3}, {math.NaN(), 2}, {0.9, 5}}); math.Abs(got-1) > 1e-12 {
		t.Errorf("CorpusSpearman skips NaN predictions: %v", got)
	}
	if got := Cosine([]float64{1, 0}, []float64{0, 2}); got != 0 {
		t.Errorf("orthogonal cosine %v", got)
	}
	if got := Cosine([]float64{1, 2}, []float64{2, 4}); math.Abs(got-1) > 1e-12 {
		t.Errorf("parallel cosine %v", got)
	}
}

func FuzzWERWords(f *testing.F) {
	f.Add("Mr. Smith won't go, um, [x] (y) there 1,000 $5.")
	f.Add("<|en|>Ça va? Ærø")
	f.Fuzz(func(t *testing.T, s string) {
		words := WERWords(s, "en")
		for _, w := range words {
			if w == "" || strings.ContainsAny(w, " \t\n") {
				t.Fatalf("word %q from %q", w, s)
			}
		}
		if d := WordEdits(words, nil); d != len(words) {
			t.Fatalf("distance to empty %d, want %d", d, len(words))
		}
	})
}
