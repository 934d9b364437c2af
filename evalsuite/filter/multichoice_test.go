package filter_test

import (
	"testing"
	"unicode/utf8"

	"github.com/ttis-dev/ttis/evalsuite/filter"
)

// TestMultiChoiceGolden checks the GPQA and MMLU-Pro chains against cases
// whose expectations testdata/multichoice_check.py re-derives with Python,
// following lm-eval's regex and multi_choice_regex filters.
func TestMultiChoiceGolden(t *testing.T) {
	var cases []struct {
		Name     string            `json:"name"`
		Response string            `json:"response"`
		Choices  []string          `json:"choices"`
		Filtered map[string]string `json:"filtered"`
	}
	readJSON(t, "testdata/multichoice_golden.json", &cases)
	if len(cases) < 10 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	strict, flexible, custom := filter.GPQAStrict(), filter.GPQAFlexible(), filter.MMLUProCustomExtract()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			check := func(name, got string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if want := c.Filtered[name]; got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			got, err := strict.ApplyChoices([]string{c.Response}, c.Choices)
			check("strict-match", got, err)
			got, err = flexible.ApplyChoices([]string{c.Response}, c.Choices)
			check("flexible-extract", got, err)
			got, err = flexible.Apply([]string{c.Response})
			check("flexible-extract-without-choices", got, err)
			got, err = custom.Apply([]string{c.Response})
			check("custom-extract", got, err)
		})
	}
}

func TestMultiChoiceOptionsRejected(t *testing.T) {
	if _, err := filter.NewMultiChoiceRegex(`(\([A-Z]\))`, filter.MultiChoiceOptions{NumChoices: 0}); err == nil {
		t.Error("zero choices accepted")
	}
	if _, err := filter.NewMultiChoiceRegex(`(`, filter.MultiChoiceOptions{NumChoices: 4}); err == nil {
		t.Error("bad pattern accepted")
	}
	if _, err := filter.NewMultiChoiceRegex(`x`, filter.MultiChoiceOptions{NumChoices: 4, RegexesToIgnore: []string{`[`}}); err == nil {
		t.Error("bad ignore pattern accepted")
	}
	m, err := filter.NewMultiChoiceRegex(`(\([A-Z]\))`, filter.MultiChoiceOptions{NumChoices: 4, RegexesToIgnore: []string{`\d+`}, IgnoreCase: true})
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 27)
	if _, err := m.ApplyChoices([]string{"x"}, many); err == nil {
		t.Error("27 choices accepted")
	}
	// The ignore regexes apply to choices and response alike.
	got, err := m.ApplyChoices([]string{"it is 12Beta"}, []string{"Alpha", "7beta", "Gamma"})
	if err != nil || got[0] != "(B)" {
		t.Errorf("with regexes_to_ignore: %q %v", got, err)
	}
}

// FuzzMultiChoice runs the GPQA flexible chain on arbitrary responses and
// choices: it must not fail, and it yields a label, a choice-derived text
// or the fallback.
func FuzzMultiChoice(f *testing.F) {
	f.Add("The answer is (B).", "alpha", "beta")
	f.Add("final: C", "", "(")
	f.Add("", "x", "x")
	flexible := filter.GPQAFlexible()
	f.Fuzz(func(t *testing.T, resp, c1, c2 string) {
		got, err := flexible.ApplyChoices([]string{resp}, []string{c1, c2, "gamma", "delta"})
		if err != nil {
			t.Fatal(err)
		}
		if got == "" {
			t.Fatalf("empty result for %q", resp)
		}
		if got != filter.Fallback && utf8.RuneCountInString(got) > utf8.RuneCountInString(resp)+2 {
			t.Fatalf("filtered %q is longer than the response %q", got, resp)
		}
		if _, err := flexible.Apply([]string{resp}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestApplyChoicesNil: unknown choices (nil) behave as plain Apply, with
// the bare-letter stage over the default four labels.
func TestApplyChoicesNil(t *testing.T) {
	ch := filter.GPQAFlexible()
	for _, resp := range []string{"so: C", "The answer is (B).", "the copper one"} {
		a, err := ch.Apply([]string{resp})
		if err != nil {
			t.Fatal(err)
		}
		b, err := ch.ApplyChoices([]string{resp}, nil)
		if err != nil || a != b {
			t.Errorf("%q: Apply %q, ApplyChoices(nil) %q %v", resp, a, b, err)
		}
	}
}
