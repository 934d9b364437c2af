package ifeval

import (
	"strings"
	"testing"
)

func TestChecks(t *testing.T) {
	tests := []struct {
		id     string
		kw     Kwargs
		resp   string
		strict bool
		loose  bool
	}{
		{"punctuation:no_comma", nil, "no commas here", true, true},
		{"punctuation:no_comma", nil, "one, two", false, false},
		{"change_case:english_lowercase", nil, "all lower case.", true, true},
		{"change_case:english_lowercase", nil, "Sure!\nall lower case.", false, true}, // loose drops the first line
		{"change_case:english_lowercase", nil, "1234", false, false},                  // no cased letter
		{"change_case:english_capital", nil, "THE WEATHER IS NICE TODAY AND WE WILL GO TO THE PARK", true, true},
		{"change_case:english_capital", nil, "SHOUTING TEXT", false, false}, // langdetect (seed 0) reads it as German
		{"change_case:capital_word_frequency", Kwargs{"capital_frequency": 2.0, "capital_relation": "at least"}, "NASA and the ESA", true, true},
		{"change_case:capital_word_frequency", Kwargs{"capital_frequency": 2.0, "capital_relation": "less than"}, "NASA and the ESA", false, false},
		{"length_constraints:number_words", Kwargs{"num_words": 5.0, "relation": "less than"}, "just four words here", true, true},
		{"length_constraints:number_words", Kwargs{"num_words": 5.0, "relation": "at least"}, "just four words here", false, false},
		{"length_constraints:number_paragraphs", Kwargs{"num_paragraphs": 2.0}, "first\n***\nsecond", true, true},
		{"length_constraints:number_paragraphs", Kwargs{"num_paragraphs": 2.0}, "first\n***\n\n***\nsecond", false, false},
		{"detectable_format:number_bullet_lists", Kwargs{"num_bullets": 2.0}, "* one\n* two", true, true},
		{"detectable_format:number_bullet_lists", Kwargs{"num_bullets": 2.0}, "* one\n- two\n* three", false, true}, // loose: dropping the last line leaves two
		{"detectable_format:title", nil, "<<My Title>>\nbody", true, true},
		{"detectable_format:title", nil, "<< >> body", false, false},
		{"detectable_format:json_format", nil, "```json\n{\"a\": 1}\n```", true, true},
		{"detectable_format:json_format", nil, "{\"a\": }", false, false},
		{"detectable_format:number_highlighted_sections", Kwargs{"num_highlights": 2.0}, "*one* and **two**", true, true},
		{"detectable_format:multiple_sections", Kwargs{"section_spliter": "Section", "num_sections": 2.0}, "Section 1\nfoo\nSection 2\nbar", true, true},
		{"detectable_format:constrained_response", nil, "My answer is yes.", true, true},
		{"detectable_content:number_placeholders", Kwargs{"num_placeholders": 2.0}, "Dear [name], at [address]", true, true},
		{"detectable_content:postscript", Kwargs{"postscript_marker": "P.S."}, "Hello\nP.S. see you", true, true},
		{"detectable_content:postscript", Kwargs{"postscript_marker": "P.P.S"}, "Hello\nP.S. see you", false, false},
		{"startend:end_checker", Kwargs{"end_phrase": "Is there anything else?"}, "Done. Is there anything else?  ", true, true},
		{"startend:quotation", nil, "\"quoted\"", true, true},
		{"startend:quotation", nil, "Here:\n\"quoted\"", false, true},
		{"keywords:existence", Kwargs{"keywords": []any{"apple", "Pear"}}, "An APPLE and a pear", true, true},
		{"keywords:forbidden_words", Kwargs{"forbidden_words": []any{"cat"}}, "concatenate is fine", true, true},
		{"keywords:forbidden_words", Kwargs{"forbidden_words": []any{"cat"}}, "the Cat sat", false, false},
		{"keywords:frequency", Kwargs{"keyword": "data", "frequency": 2.0, "relation": "at least"}, "Data about data", true, true},
		{"keywords:letter_frequency", Kwargs{"letter": "z", "let_frequency": 2.0, "let_relation": "less than"}, "pizza", false, false},
		{"combination:repeat_prompt", Kwargs{"prompt_to_repeat": "Say hi."}, "say hi. Hi!", true, true},
		{"combination:two_responses", nil, "first\n******\nsecond", true, true},
		{"combination:two_responses", nil, "same\n******\nsame", false, false},
		{"punctuation:no_comma", nil, "", false, false}, // an empty response follows nothing
	}
	c := testChecker(t)
	if c.Langs == nil {
		t.Skipf("langdetect's profiles are not installed at %s (apt-get install python3-langdetect)", debianProfiles)
	}
	for _, tt := range tests {
		if tt.kw == nil {
			tt.kw = Kwargs{}
		}
		res, err := c.Check(tt.resp, []string{tt.id}, []Kwargs{tt.kw})
		if err != nil {
			t.Errorf("%s on %q: %v", tt.id, tt.resp, err)
			continue
		}
		if res.Strict[0] != tt.strict || res.Loose[0] != tt.loose {
			t.Errorf("%s on %q: strict %v loose %v, want %v %v", tt.id, tt.resp, res.Strict[0], res.Loose[0], tt.strict, tt.loose)
		}
	}
}

func TestPromptLevel(t *testing.T) {
	res, err := Check("all lower, with a comma", []string{"startend:quotation", "punctuation:no_comma"}, []Kwargs{nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptStrict() || res.Strict[0] || res.Strict[1] || res.PromptLoose() {
		t.Errorf("got %+v", res)
	}
}

func TestUnsupportedAndBadArguments(t *testing.T) {
	if _, err := Check("x", []string{"language:response_language"}, []Kwargs{{"language": "de"}}); err == nil || !strings.Contains(err.Error(), "langdetect's profiles") {
		t.Errorf("language without profiles: %v", err)
	}
	if _, err := Check("x", []string{"length_constraints:number_sentences"}, []Kwargs{{"num_sentences": 2.0, "relation": "at least"}}); err == nil || !strings.Contains(err.Error(), "punkt_tab/") {
		t.Errorf("sentences without Punkt: %v", err)
	}
	if _, err := Check("x", []string{"multi-turn:constrained_start"}, []Kwargs{{"starter": "I"}}); err == nil || !strings.Contains(err.Error(), "not one of lm-eval's") {
		t.Errorf("unregistered instruction: %v", err)
	}
	if _, err := Check("x", []string{"punctuation:no_comma"}, []Kwargs{{"num_words": 3.0}}); err == nil || !strings.Contains(err.Error(), "not one it takes") {
		t.Errorf("unexpected argument: %v", err)
	}
	if _, err := Check("x", []string{"length_constraints:number_words"}, []Kwargs{{"relation": "about"}}); err == nil {
		t.Error("missing num_words must be an error")
	}
	if _, err := Check("x", []string{"punctuation:no_comma"}, nil); err == nil {
		t.Error("kwargs count mismatch must be an error")
	}
	if len(Supported()) != 25 {
		t.Errorf("%d instructions, lm-eval registers 25", len(Supported()))
	}
}

// fuzzKwargs gives every supported instruction valid arguments.
var fuzzKwargs = map[string]Kwargs{
	"change_case:capital_word_frequency":            {"capital_frequency": 2.0, "capital_relation": "at least"},
	"length_constraints:number_words":               {"num_words": 10.0, "relation": "less than"},
	"length_constraints:number_paragraphs":          {"num_paragraphs": 2.0},
	"detectable_format:number_bullet_lists":         {"num_bullets": 2.0},
	"detectable_format:number_highlighted_sections": {"num_highlights": 1.0},
	"detectable_format:multiple_sections":           {"section_spliter": "Section", "num_sections": 2.0},
	"detectable_content:number_placeholders":        {"num_placeholders": 1.0},
	"detectable_content:postscript":                 {"postscript_marker": "P.S."},
	"startend:end_checker":                          {"end_phrase": "Bye."},
	"keywords:existence":                            {"keywords": []any{"rain"}},
	"keywords:forbidden_words":                      {"forbidden_words": []any{"sun"}},
	"keywords:frequency":                            {"keyword": "rain", "frequency": 2.0, "relation": "at least"},
	"keywords:letter_frequency":                     {"letter": "a", "let_frequency": 3.0, "let_relation": "less than"},
	"combination:repeat_prompt":                     {"prompt_to_repeat": "Say hi."},
	"language:response_language":                    {"language": "de"},
	"length_constraints:number_sentences":           {"num_sentences": 3.0, "relation": "at least"},
	"length_constraints:nth_paragraph_first_word":   {"num_paragraphs": 2.0, "nth_paragraph": 2.0, "first_word": "rain"},
}

func FuzzCheck(f *testing.F) {
	f.Add("Section 1\n* rain\n* sun\n***\n<<t>> P.S. Bye.")
	f.Add("```json\n{\"a\": [1, 2]}\n```")
	f.Add("")
	ids := Supported()
	kws := make([]Kwargs, len(ids))
	for i, id := range ids {
		kws[i] = fuzzKwargs[id]
		if kws[i] == nil {
			kws[i] = Kwargs{}
		}
	}
	c := testChecker(f)
	if c.Langs == nil {
		f.Skipf("langdetect's profiles are not installed at %s", debianProfiles)
	}
	f.Fuzz(func(t *testing.T, resp string) {
		res, err := c.Check(resp, ids, kws)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ids {
			if res.Strict[i] && !res.Loose[i] {
				t.Fatalf("%s: followed strictly but not loosely", ids[i])
			}
		}
	})
}
