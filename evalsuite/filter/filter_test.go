package filter_test

import (
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/metric"
)

// gsm8kExactMatch is gsm8k's exact_match configuration.
var gsm8kExactMatch = metric.ExactMatchOptions{
	IgnoreCase:      true,
	RegexesToIgnore: []string{",", `\$`, `(?s).*#### `, `\.$`},
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestGSM8KGolden checks both gsm8k filters and exact_match against cases
// written from lm-eval's documented patterns (testdata/gsm8k_check.py
// re-derives every expectation with Python's re module).
func TestGSM8KGolden(t *testing.T) {
	var cases []struct {
		Name       string             `json:"name"`
		Response   string             `json:"response"`
		Target     string             `json:"target"`
		Filtered   map[string]string  `json:"filtered"`
		ExactMatch map[string]float64 `json:"exact_match"`
	}
	readJSON(t, "testdata/gsm8k_golden.json", &cases)
	em, err := metric.NewExactMatcher(gsm8kExactMatch)
	if err != nil {
		t.Fatal(err)
	}
	chains := []filter.Chain{filter.GSM8KStrict(), filter.GSM8KFlexible()}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for _, ch := range chains {
				got, err := ch.Apply([]string{c.Response})
				if err != nil {
					t.Fatal(err)
				}
				if want := c.Filtered[ch.Name]; got != want {
					t.Errorf("%s: filtered %q, want %q", ch.Name, got, want)
				}
				score, err := em.Score(got, c.Target)
				if err != nil {
					t.Fatal(err)
				}
				if want := c.ExactMatch[ch.Name]; score != want {
					t.Errorf("%s: exact_match %v, want %v", ch.Name, score, want)
				}
			}
		})
	}
}

func TestOtherGolden(t *testing.T) {
	chains := map[string]filter.Chain{
		"get_response":   filter.GetResponse(),
		"gpqa-strict":    {Name: "strict-match", Steps: []filter.Step{filter.MustRegex(`(?<=The answer is )(.*)(?=.)`, 0), filter.TakeFirst{}}},
		"cot-strict":     filter.GSM8KCoTStrict(),
		"optional-group": {Name: "x", Steps: []filter.Step{filter.MustRegex(`answer:(\d*)`, 0)}},
		"empty-tuple":    {Name: "x", Steps: []filter.Step{filter.MustRegex(`(a*)(b*)`, 0)}},
	}
	var cases []struct {
		Name       string                   `json:"name"`
		Chain      string                   `json:"chain"`
		Response   string                   `json:"response"`
		Target     string                   `json:"target"`
		EM         metric.ExactMatchOptions `json:"em"`
		Filtered   string                   `json:"filtered"`
		ExactMatch float64                  `json:"exact_match"`
	}
	readJSON(t, "testdata/other_golden.json", &cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ch, ok := chains[c.Chain]
			if !ok {
				t.Fatalf("unknown chain %q", c.Chain)
			}
			got, err := ch.Apply([]string{c.Response})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.Filtered {
				t.Errorf("filtered %q, want %q", got, c.Filtered)
			}
			em, err := metric.NewExactMatcher(c.EM)
			if err != nil {
				t.Fatal(err)
			}
			score, err := em.Score(got, c.Target)
			if err != nil {
				t.Fatal(err)
			}
			if score != c.ExactMatch {
				t.Errorf("exact_match %v, want %v", score, c.ExactMatch)
			}
		})
	}
}

func TestFindAllShapes(t *testing.T) {
	tests := []struct {
		pattern, input string
		want           []string
	}{
		{`\d+`, "a1b22c333", []string{"1", "22", "333"}},
		{`x(\d)`, "x1 x2 y3", []string{"1", "2"}},
		{`(a)|(b)`, "ab", []string{"a", "b"}},
		{`z*`, "ab", []string{"", "", ""}},
		{`q`, "", nil},
	}
	for _, tt := range tests {
		r := filter.MustRegex(tt.pattern, 0)
		got, err := filter.FindAll(filter.RegexpOf(r), tt.input)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%s on %q: %q, want %q", tt.pattern, tt.input, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s on %q: %q, want %q", tt.pattern, tt.input, got, tt.want)
			}
		}
	}
}

func TestRegexBadPattern(t *testing.T) {
	if _, err := filter.NewRegex(`(unclosed`, 0, ""); err == nil {
		t.Fatal("want an error for an unbalanced pattern")
	}
}

func TestGroupSelectOutOfRange(t *testing.T) {
	r := filter.MustRegex(`\d`, 5)
	got, err := r.Apply([]string{"1 2"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != filter.Fallback {
		t.Fatalf("got %q, want fallback", got[0])
	}
}

func FuzzRegexFilters(f *testing.F) {
	f.Add("#### 18")
	f.Add("The answer is $1,000.")
	f.Add("")
	f.Add("\n\n-1-2-3.4.5,6")
	chains := []filter.Chain{filter.GSM8KStrict(), filter.GSM8KFlexible(), filter.GetResponse(), filter.GSM8KCoTStrict()}
	f.Fuzz(func(t *testing.T, resp string) {
		for _, ch := range chains {
			got, err := ch.Apply([]string{resp})
			if err != nil {
				t.Fatalf("%s: %v", ch.Name, err)
			}
			// regexp2 works on runes, so invalid UTF-8 comes back as U+FFFD:
			// compare lengths in runes.
			if got != filter.Fallback && utf8.RuneCountInString(got) > utf8.RuneCountInString(resp) {
				t.Fatalf("%s: filtered %q is longer than the response %q", ch.Name, got, resp)
			}
		}
	})
}

// BenchmarkGSM8KScoring measures filtering and scoring one typical
// chain-of-thought answer with both gsm8k filters.
func BenchmarkGSM8KScoring(b *testing.B) {
	resp := " Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72\n\nQuestion: next"
	em, err := metric.NewExactMatcher(gsm8kExactMatch)
	if err != nil {
		b.Fatal(err)
	}
	chains := []filter.Chain{filter.GSM8KStrict(), filter.GSM8KFlexible()}
	b.ReportAllocs()
	for b.Loop() {
		for _, ch := range chains {
			got, err := ch.Apply([]string{resp})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := em.Score(got, "#### 72"); err != nil {
				b.Fatal(err)
			}
		}
	}
}
