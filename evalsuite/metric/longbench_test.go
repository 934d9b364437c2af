package metric

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

func TestLongBenchMatchesPython(t *testing.T) {
	raw, err := os.ReadFile("testdata/longbench_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		A       string  `json:"a"`
		B       string  `json:"b"`
		RougeL  float64 `json:"rouge_l"`
		RougeOK bool    `json:"rouge_ok"`
		Ratio   float64 `json:"ratio"`
		NormA   string  `json:"norm_a"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		got, ok := RougeL(r.A, r.B)
		if ok != r.RougeOK || math.Abs(got-r.RougeL) > 1e-12 {
			t.Errorf("RougeL(%q, %q) = %v, %v; Python %v, %v", r.A, r.B, got, ok, r.RougeL, r.RougeOK)
		}
		if got := SequenceRatio([]rune(r.A), []rune(r.B)); math.Abs(got-r.Ratio) > 1e-12 {
			t.Errorf("SequenceRatio(%q, %q) = %v; Python %v", r.A, r.B, got, r.Ratio)
		}
		if got := NormalizeAnswer(r.A); got != r.NormA {
			t.Errorf("NormalizeAnswer(%q) = %q; Python %q", r.A, got, r.NormA)
		}
	}
}

func TestLongBenchScores(t *testing.T) {
	if got := QAF1("The Eiffel Tower, in Paris", "Eiffel Tower"); math.Abs(got-2.0/3) > 1e-12 { // 2 of 4 predicted words, both gold words
		t.Errorf("QAF1 = %v, want 2/3", got)
	}
	if CountScore("There are 12 unique paragraphs (12).", "12") != 1 || CountScore("12 or 13", "12") != 0.5 || CountScore("none", "3") != 0 {
		t.Error("count score")
	}
	if RetrievalScore("Paragraph 7", "Paragraph 7") != 1 || RetrievalScore("Paragraph 7 or 8", "Paragraph 7") != 0.5 {
		t.Error("retrieval score")
	}
	classes := []string{"Abbreviation", "Entity", "Description", "Human being", "Location", "Numeric value", "Description and abstract concept"}
	if got := ClassificationScore("Description and abstract concept", "Description and abstract concept", classes); got != 1 {
		t.Errorf("classification: the class contained in the gold is dropped, got %v", got)
	}
	if got := ClassificationScore("Location or Entity", "Location", classes); got != 0.5 {
		t.Errorf("classification of two named classes = %v", got)
	}
	if FuzzRatio("", "") != 100 || FuzzRatio("abc", "") != 0 || FuzzRatio("abcd", "abce") != 75 {
		t.Error("fuzz.ratio edge cases")
	}
	if got := CodeSim("```python\n# comment\n    return x + 1\n", "    return x + 1"); got != 1 {
		t.Errorf("code sim skips fences and comments: %v", got)
	}
}

func FuzzSequenceRatio(f *testing.F) {
	f.Add("kitten", "sitting")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 400 || len(b) > 400 {
			return
		}
		r := SequenceRatio([]rune(a), []rune(b))
		if r < 0 || r > 1 {
			t.Errorf("ratio %v", r)
		}
		_, _ = RougeL(a, b)
	})
}
