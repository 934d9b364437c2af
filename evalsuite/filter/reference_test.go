package filter_test

import (
	"testing"

	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// TestMatchesLMEvalCode compares the filters and exact_match with what
// lm-eval's own classes (RegexFilter, WhitespaceFilter, TakeFirstFilter,
// exact_match_hf_evaluate at lm-eval 4e7e0d47) gave on the inputs of
// gsm8k_golden.json and other_golden.json (testdata/lmeval_reference.py),
// not with a re-statement of them.
func TestMatchesLMEvalCode(t *testing.T) {
	var ref struct {
		GSM8K []struct {
			Name       string             `json:"name"`
			Filtered   map[string]string  `json:"filtered"`
			ExactMatch map[string]float64 `json:"exact_match"`
		} `json:"gsm8k"`
		Other []struct {
			Name       string  `json:"name"`
			Filtered   string  `json:"filtered"`
			ExactMatch float64 `json:"exact_match"`
		} `json:"other"`
	}
	readJSON(t, "testdata/lmeval_reference.json", &ref)
	var gsm []struct {
		Name     string `json:"name"`
		Response string `json:"response"`
		Target   string `json:"target"`
	}
	readJSON(t, "testdata/gsm8k_golden.json", &gsm)
	if len(gsm) != len(ref.GSM8K) || len(gsm) == 0 {
		t.Fatalf("%d gsm8k cases, %d from lm-eval", len(gsm), len(ref.GSM8K))
	}
	em, err := metric.NewExactMatcher(gsm8kExactMatch)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range gsm {
		r := ref.GSM8K[i]
		for _, ch := range []filter.Chain{filter.GSM8KStrict(), filter.GSM8KFlexible()} {
			got, err := ch.Apply([]string{c.Response})
			if err != nil {
				t.Fatal(err)
			}
			score, err := em.Score(got, c.Target)
			if err != nil {
				t.Fatal(err)
			}
			if got != r.Filtered[ch.Name] || score != r.ExactMatch[ch.Name] {
				t.Errorf("gsm8k %q %s: %q %v, lm-eval %q %v", c.Name, ch.Name, got, score, r.Filtered[ch.Name], r.ExactMatch[ch.Name])
			}
		}
	}
	chains := map[string]filter.Chain{
		"get_response":   filter.GetResponse(),
		"gpqa-strict":    {Name: "strict-match", Steps: []filter.Step{filter.MustRegex(`(?<=The answer is )(.*)(?=.)`, 0), filter.TakeFirst{}}},
		"cot-strict":     filter.GSM8KCoTStrict(),
		"optional-group": {Name: "x", Steps: []filter.Step{filter.MustRegex(`answer:(\d*)`, 0)}},
		"empty-tuple":    {Name: "x", Steps: []filter.Step{filter.MustRegex(`(a*)(b*)`, 0)}},
	}
	var other []struct {
		Name     string                   `json:"name"`
		Chain    string                   `json:"chain"`
		Response string                   `json:"response"`
		Target   string                   `json:"target"`
		EM       metric.ExactMatchOptions `json:"em"`
	}
	readJSON(t, "testdata/other_golden.json", &other)
	if len(other) != len(ref.Other) || len(other) == 0 {
		t.Fatalf("%d other cases, %d from lm-eval", len(other), len(ref.Other))
	}
	for i, c := range other {
		got, err := chains[c.Chain].Apply([]string{c.Response})
		if err != nil {
			t.Fatal(err)
		}
		m, err := metric.NewExactMatcher(c.EM)
		if err != nil {
			t.Fatal(err)
		}
		score, err := m.Score(got, c.Target)
		if err != nil {
			t.Fatal(err)
		}
		if r := ref.Other[i]; got != r.Filtered || score != r.ExactMatch {
			t.Errorf("%q (%s): %q %v, lm-eval %q %v", c.Name, c.Chain, got, score, r.Filtered, r.ExactMatch)
		}
	}
}
