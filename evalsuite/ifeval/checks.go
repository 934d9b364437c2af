package ifeval

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// registry is lm-eval's INSTRUCTION_DICT; each entry's comment names its
// class in instructions.py.
var registry = map[string]instruction{
	"keywords:existence":                            {args: []string{"keywords"}, build: keywordExistence},                         // KeywordChecker
	"keywords:frequency":                            {args: []string{"keyword", "frequency", "relation"}, build: keywordFrequency}, // KeywordFrequencyChecker
	"keywords:forbidden_words":                      {args: []string{"forbidden_words"}, build: forbiddenWords},                    // ForbiddenWords
	"keywords:letter_frequency":                     {args: []string{"letter", "let_frequency", "let_relation"}, build: letterFrequency},
	"language:response_language":                    {args: []string{"language"}, needs: needLangdetect, build: responseLanguage},
	"length_constraints:number_sentences":           {args: []string{"num_sentences", "relation"}, needs: needPunkt, build: numberSentences},
	"length_constraints:number_paragraphs":          {args: []string{"num_paragraphs"}, build: numberParagraphs},
	"length_constraints:number_words":               {args: []string{"num_words", "relation"}, build: numberWords},
	"length_constraints:nth_paragraph_first_word":   {args: []string{"num_paragraphs", "nth_paragraph", "first_word"}, build: nthParagraphFirstWord},
	"detectable_content:number_placeholders":        {args: []string{"num_placeholders"}, build: placeholders},
	"detectable_content:postscript":                 {args: []string{"postscript_marker"}, build: postscript},
	"detectable_format:number_bullet_lists":         {args: []string{"num_bullets"}, build: bulletLists},
	"detectable_format:constrained_response":        {build: constrainedResponse},
	"detectable_format:number_highlighted_sections": {args: []string{"num_highlights"}, build: highlightedSections},
	"detectable_format:multiple_sections":           {args: []string{"section_spliter", "num_sections"}, build: multipleSections},
	"detectable_format:json_format":                 {build: jsonFormat},
	"detectable_format:title":                       {build: title},
	"combination:two_responses":                     {build: twoResponses},
	"combination:repeat_prompt":                     {args: []string{"prompt_to_repeat"}, build: repeatPrompt},
	"startend:end_checker":                          {args: []string{"end_phrase"}, build: endChecker},
	"change_case:capital_word_frequency":            {args: []string{"capital_frequency", "capital_relation"}, needs: needPunkt, build: capitalWordFrequency},
	"change_case:english_capital":                   {needs: needLangdetect, build: englishCapital},
	"change_case:english_lowercase":                 {needs: needLangdetect, build: englishLowercase},
	"punctuation:no_comma":                          {build: noComma},
	"startend:quotation":                            {build: quotation},
}

// matchTimeout bounds one regular-expression search, whose pattern may
// come from the dataset.
const matchTimeout = 5 * time.Second

// compile compiles a pattern with Python re's meaning as far as regexp2
// gives it (see pyPattern).
func compile(p string, opts regexp2.RegexOptions) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(p, opts)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", p, err)
	}
	re.MatchTimeout = matchTimeout
	return re, nil
}

// pyPattern turns \s in a pattern of ours into Python's whitespace
// (regexp2's, .NET's, leaves out U+001C..U+001F). Patterns that come from
// the dataset (keywords, markers) are used as they are.
func pyPattern(p string) string { return strings.ReplaceAll(p, `\s`, `[\s\x1c-\x1f]`) }

// findAll counts re.findall's matches: non-overlapping, leftmost, an empty
// match followed by a search one character on.
func findAll(re *regexp2.Regexp, s string) (int, error) {
	n := 0
	m, err := re.FindStringMatch(s)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		n++
	}
	return n, err
}

func search(re *regexp2.Regexp, s string) (bool, error) { return re.MatchString(s) }

// --- keywords ---

// keywordExistence: every keyword, a regular expression, is found
// (re.search, IGNORECASE).
func keywordExistence(kw Kwargs) (check, error) {
	words, err := kwStrings(kw, "keywords")
	if err != nil {
		return nil, err
	}
	words = append([]string(nil), words...)
	sort.Strings(words)
	res := make([]*regexp2.Regexp, len(words))
	for i, w := range words {
		if res[i], err = compile(w, regexp2.IgnoreCase); err != nil {
			return nil, err
		}
	}
	return func(_ *Checker, r string) (bool, error) {
		for _, re := range res {
			if ok, err := search(re, r); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	}, nil
}

// keywordFrequency: len(re.findall(keyword.strip(), value, IGNORECASE))
// compared with frequency.
func keywordFrequency(kw Kwargs) (check, error) {
	word, err := kwString(kw, "keyword")
	if err != nil {
		return nil, err
	}
	freq, err := kwInt(kw, "frequency")
	if err != nil {
		return nil, err
	}
	rel, err := relation(kw, "relation")
	if err != nil {
		return nil, err
	}
	re, err := compile(pyStrip(word), regexp2.IgnoreCase)
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) {
		n, err := findAll(re, r)
		return err == nil && rel(n, freq), err
	}, nil
}

// forbiddenWords: no \bword\b (IGNORECASE) for any word.
func forbiddenWords(kw Kwargs) (check, error) {
	words, err := kwStrings(kw, "forbidden_words")
	if err != nil {
		return nil, err
	}
	var res []*regexp2.Regexp
	for _, w := range words {
		re, err := compile(`\b`+w+`\b`, regexp2.IgnoreCase)
		if err != nil {
			return nil, err
		}
		res = append(res, re)
	}
	return func(_ *Checker, r string) (bool, error) {
		for _, re := range res {
			if found, err := search(re, r); err != nil || found {
				return false, err
			}
		}
		return true, nil
	}, nil
}

// letterFrequency: occurrences of the letter in value.lower().
func letterFrequency(kw Kwargs) (check, error) {
	letter, err := kwString(kw, "letter")
	if err != nil {
		return nil, err
	}
	// build_description draws a random ASCII letter for anything else.
	l := []rune(pyLower(letter))
	if len([]rune(letter)) != 1 || len(l) != 1 || l[0] < 'a' || l[0] > 'z' {
		return nil, fmt.Errorf("argument \"letter\" = %q is not one ASCII letter (lm-eval would draw one at random)", letter)
	}
	freq, err := kwInt(kw, "let_frequency")
	if err != nil {
		return nil, err
	}
	rel, err := relation(kw, "let_relation")
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) {
		return rel(strings.Count(pyLower(r), string(l)), freq), nil
	}, nil
}

// --- language ---

// responseLanguage: langdetect.detect(value) == language; a text
// langdetect cannot read counts as followed.
func responseLanguage(kw Kwargs) (check, error) {
	lang, err := kwString(kw, "language")
	if err != nil {
		return nil, err
	}
	// build_description looks the code up in LANGUAGE_CODES and raises
	// KeyError for any other.
	if !contains(languageCodes, lang) {
		return nil, fmt.Errorf("argument \"language\" = %q is not one of IFEval's languages (%s)", lang, strings.Join(languageCodes, ", "))
	}
	return func(c *Checker, r string) (bool, error) {
		got, ok := c.language(r)
		return !ok || got == lang, nil
	}, nil
}

// languageCodes are instructions_util.LANGUAGE_CODES.
var languageCodes = []string{"en", "es", "pt", "ar", "hi", "fr", "ru", "de", "ja", "it", "bn", "uk", "th", "ur", "ta", "te",
	"bg", "ko", "pl", "he", "fa", "vi", "ne", "sw", "kn", "mr", "gu", "pa", "ml", "fi"}

// englishCapital: value.isupper() and detected as English.
func englishCapital(Kwargs) (check, error) {
	return func(c *Checker, r string) (bool, error) {
		if !pyIsUpper(r) {
			return false, nil
		}
		got, ok := c.language(r)
		return !ok || got == "en", nil
	}, nil
}

// englishLowercase: value.islower() and detected as English.
func englishLowercase(Kwargs) (check, error) {
	return func(c *Checker, r string) (bool, error) {
		if !pyIsLower(r) {
			return false, nil
		}
		got, ok := c.language(r)
		return !ok || got == "en", nil
	}, nil
}

// --- length constraints ---

// numberSentences: Punkt's sentences compared with num_sentences.
func numberSentences(kw Kwargs) (check, error) {
	n, err := kwInt(kw, "num_sentences")
	if err != nil {
		return nil, err
	}
	rel, err := relation(kw, "relation")
	if err != nil {
		return nil, err
	}
	return func(c *Checker, r string) (bool, error) { return rel(c.sentences(r), n), nil }, nil
}

// numberParagraphs: re.split(r"\s?\*\*\*\s?", value) has num_paragraphs
// non-empty parts, empty ones only first or last.
func numberParagraphs(kw Kwargs) (check, error) {
	want, err := kwInt(kw, "num_paragraphs")
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) {
		parts := splitStars(r)
		n := len(parts)
		for i, p := range parts {
			if pyStrip(p) == "" {
				if i == 0 || i == len(parts)-1 {
					n--
				} else {
					return false, nil
				}
			}
		}
		return n == want, nil
	}, nil
}

// splitStars is re.split(r"\s?\*\*\*\s?", s): at each position, one
// optional whitespace character, "***", one optional whitespace
// character.
func splitStars(s string) []string {
	rs := []rune(s)
	var out []string
	prev := 0
	for i := 0; i < len(rs); {
		j := i
		if pyIsSpace(rs[j]) && hasStars(rs, j+1) {
			j++
		}
		if !hasStars(rs, j) {
			i++
			continue
		}
		end := j + 3
		if end < len(rs) && pyIsSpace(rs[end]) {
			end++
		}
		out = append(out, string(rs[prev:i]))
		prev, i = end, end
	}
	return append(out, string(rs[prev:]))
}

func hasStars(rs []rune, i int) bool {
	return i+3 <= len(rs) && rs[i] == '*' && rs[i+1] == '*' && rs[i+2] == '*'
}

// numberWords: instructions_util.count_words, the \w+ runs.
func numberWords(kw Kwargs) (check, error) {
	n, err := kwInt(kw, "num_words")
	if err != nil {
		return nil, err
	}
	rel, err := relation(kw, "relation")
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) { return rel(countWords(r), n), nil }, nil
}

func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := pyIsWordRune(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// nthParagraphFirstWord: paragraphs split on "\n\n", the empty ones not
// counted (but still indexed, as lm-eval indexes them), and the nth one's
// first word, up to its first punctuation mark, lowered.
func nthParagraphFirstWord(kw Kwargs) (check, error) {
	num, err := kwInt(kw, "num_paragraphs")
	if err != nil {
		return nil, err
	}
	nth, err := kwInt(kw, "nth_paragraph")
	if err != nil {
		return nil, err
	}
	if nth == 0 || nth > num {
		return nil, fmt.Errorf("argument \"nth_paragraph\" = %d is outside 1..num_paragraphs (%d) (lm-eval would draw one at random)", nth, num)
	}
	first, err := kwString(kw, "first_word")
	if err != nil {
		return nil, err
	}
	first = pyLower(first)
	return func(_ *Checker, r string) (bool, error) {
		paragraphs := strings.Split(r, "\n\n")
		n := len(paragraphs)
		for _, p := range paragraphs {
			if pyStrip(p) == "" {
				n--
			}
		}
		if nth > n {
			return false, nil
		}
		p := pyStrip(paragraphs[nth-1])
		if p == "" {
			return false, nil
		}
		word := pyStrip(pyFields(p)[0])
		word = strings.TrimLeft(word, "'")
		word = strings.TrimLeft(word, `"`)
		var got strings.Builder
		for _, l := range word {
			if strings.ContainsRune(`.,?!'"`, l) {
				break
			}
			got.WriteString(pyLower(string(l)))
		}
		return n == num && got.String() == first, nil
	}, nil
}

// --- detectable content ---

// placeholders: re.findall(r"\[.*?\]", value) reaches num_placeholders.
func placeholders(kw Kwargs) (check, error) {
	want, err := kwInt(kw, "num_placeholders")
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) {
		rs := []rune(r)
		n := 0
		for i := 0; i < len(rs); i++ {
			if rs[i] != '[' {
				continue
			}
			for j := i + 1; j < len(rs) && rs[j] != '\n'; j++ {
				if rs[j] == ']' {
					n++
					i = j
					break
				}
			}
		}
		return n >= want, nil
	}, nil
}

// postscript: a line of value.lower() with the marker (P.S. and P.P.S
// with their spacing variants; another marker as a regular expression,
// as lm-eval writes it in).
func postscript(kw Kwargs) (check, error) {
	marker, err := kwString(kw, "postscript_marker")
	if err != nil {
		return nil, err
	}
	marker = pyStrip(marker)
	var p string
	switch marker {
	case "P.P.S":
		p = pyPattern(`\s*p\.\s?p\.\s?s.*$`)
	case "P.S.":
		p = pyPattern(`\s*p\.\s?s\..*$`)
	default:
		p = pyPattern(`\s*`) + pyLower(marker) + `.*$`
	}
	re, err := compile(p, regexp2.Multiline)
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) { return search(re, pyLower(r)) }, nil
}

// --- detectable format ---

var (
	bulletStar = regexp2.MustCompile(pyPattern(`^\s*\*[^\*].*$`), regexp2.Multiline)
	bulletDash = regexp2.MustCompile(pyPattern(`^\s*-.*$`), regexp2.Multiline)
)

// bulletLists: lines starting with "* " or "-" (as lm-eval's patterns
// match them, \s* crossing blank lines) number exactly num_bullets.
func bulletLists(kw Kwargs) (check, error) {
	want, err := kwInt(kw, "num_bullets")
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) {
		a, err := findAll(bulletStar, r)
		if err != nil {
			return false, err
		}
		b, err := findAll(bulletDash, r)
		return a+b == want, err
	}, nil
}

// constrainedResponse: one of the three answers appears.
func constrainedResponse(Kwargs) (check, error) {
	return func(_ *Checker, r string) (bool, error) {
		r = pyStrip(r)
		for _, opt := range []string{"My answer is yes.", "My answer is no.", "My answer is maybe."} {
			if strings.Contains(r, opt) {
				return true, nil
			}
		}
		return false, nil
	}, nil
}

// highlightedSections: *x* spans and **x** spans with text, both counted.
func highlightedSections(kw Kwargs) (check, error) {
	want, err := kwInt(kw, "num_highlights")
	if err != nil {
		return nil, err
	}
	return func(_ *Checker, r string) (bool, error) {
		rs := []rune(r)
		n := 0
		for _, m := range starSpans(rs, 1) {
			if pyStrip(strings.Trim(m, "*")) != "" {
				n++
			}
		}
		for _, m := range starSpans(rs, 2) {
			if pyStrip(strings.TrimSuffix(strings.TrimPrefix(m, "**"), "**")) != "" {
				n++
			}
		}
		return n >= want, nil
	}, nil
}

// starSpans is re.findall of \*[^\n\*]*\* (k = 1) or \*\*[^\n\*]*\*\*
// (k = 2).
func starSpans(rs []rune, k int) []string {
	var out []string
	for i := 0; i+2*k <= len(rs); i++ {
		if !stars(rs, i, k) {
			continue
		}
		j := i + k
		for j < len(rs) && rs[j] != '\n' && rs[j] != '*' {
			j++
		}
		if stars(rs, j, k) {
			out = append(out, string(rs[i:j+k]))
			i = j + k - 1
		}
	}
	return out
}

func stars(rs []rune, i, k int) bool {
	if i+k > len(rs) {
		return false
	}
	for x := i; x < i+k; x++ {
		if rs[x] != '*' {
			return false
		}
	}
	return true
}

// multipleSections: re.split(r"\s?" + spliter + r"\s?\d+\s?", value) has
// at least num_sections + 1 parts. The splitter is a regular expression
// as lm-eval writes it in; its groups add parts, as re.split adds them.
func multipleSections(kw Kwargs) (check, error) {
	sp, err := kwString(kw, "section_spliter")
	if err != nil {
		return nil, err
	}
	want, err := kwInt(kw, "num_sections")
	if err != nil {
		return nil, err
	}
	re, err := compile(pyPattern(`\s?`)+pyStrip(sp)+pyPattern(`\s?\d+\s?`), regexp2.None)
	if err != nil {
		return nil, err
	}
	groups := len(re.GetGroupNumbers()) - 1
	return func(_ *Checker, r string) (bool, error) {
		n, err := findAll(re, r)
		return err == nil && n*(1+groups) >= want, err
	}, nil
}

// jsonFormat: the stripped response, without one ```json, ```Json,
// ```JSON and ``` prefix each (in that order) and a ``` suffix, is what
// json.loads accepts.
func jsonFormat(Kwargs) (check, error) {
	return func(_ *Checker, r string) (bool, error) {
		s := pyStrip(r)
		for _, p := range []string{"```json", "```Json", "```JSON", "```"} {
			s = strings.TrimPrefix(s, p)
		}
		s = pyStrip(strings.TrimSuffix(s, "```"))
		return pyJSONValid(s), nil
	}, nil
}

// title: some <<...>> on one line with text inside.
func title(Kwargs) (check, error) {
	return func(_ *Checker, r string) (bool, error) {
		rs := []rune(r)
		for i := 0; i+1 < len(rs); i++ {
			if rs[i] != '<' || rs[i+1] != '<' {
				continue
			}
			end := i + 2
			for end < len(rs) && rs[end] != '\n' {
				end++
			}
			// [^\n]+ is greedy: the match ends at the line's last ">>"
			// that leaves it a character.
			k := end - 2
			for k >= i+3 && !(rs[k] == '>' && rs[k+1] == '>') {
				k--
			}
			if k < i+3 {
				continue
			}
			t := strings.TrimRight(strings.TrimLeft(string(rs[i:k+2]), "<"), ">")
			if pyStrip(t) != "" {
				return true, nil
			}
			i = k + 1
		}
		return false, nil
	}, nil
}

// --- combination ---

// twoResponses: two different non-empty responses around "******".
func twoResponses(Kwargs) (check, error) {
	return func(_ *Checker, r string) (bool, error) {
		parts := strings.Split(r, "******")
		var valid []string
		for i, p := range parts {
			if pyStrip(p) == "" {
				if i != 0 && i != len(parts)-1 {
					return false, nil
				}
				continue
			}
			valid = append(valid, p)
		}
		return len(valid) == 2 && pyStrip(valid[0]) != pyStrip(valid[1]), nil
	}, nil
}

// repeatPrompt: the response starts with the prompt (both stripped and
// lowered).
func repeatPrompt(kw Kwargs) (check, error) {
	p, err := kwString(kw, "prompt_to_repeat")
	if err != nil {
		return nil, err
	}
	want := pyLower(pyStrip(p))
	return func(_ *Checker, r string) (bool, error) {
		return strings.HasPrefix(pyLower(pyStrip(r)), want), nil
	}, nil
}

// endChecker: the response, stripped of whitespace and then of double
// quotes, lowered, ends with the phrase.
func endChecker(kw Kwargs) (check, error) {
	end, err := kwString(kw, "end_phrase")
	if err != nil {
		return nil, err
	}
	want := pyLower(pyStrip(pyStrip(end)))
	return func(_ *Checker, r string) (bool, error) {
		v := pyLower(strings.Trim(pyStrip(r), `"`))
		return strings.HasSuffix(v, want), nil
	}, nil
}

// --- change case, punctuation ---

// capitalWordFrequency: the words of nltk.word_tokenize that are
// str.isupper().
func capitalWordFrequency(kw Kwargs) (check, error) {
	n, err := kwInt(kw, "capital_frequency")
	if err != nil {
		return nil, err
	}
	rel, err := relation(kw, "capital_relation")
	if err != nil {
		return nil, err
	}
	return func(c *Checker, r string) (bool, error) {
		words, err := c.words(r)
		if err != nil {
			return false, err
		}
		caps := 0
		for _, w := range words {
			if pyIsUpper(w) {
				caps++
			}
		}
		return rel(caps, n), nil
	}, nil
}

func noComma(Kwargs) (check, error) {
	return func(_ *Checker, r string) (bool, error) { return !strings.Contains(r, ","), nil }, nil
}

// quotation: the stripped response is wrapped in double quotes.
func quotation(Kwargs) (check, error) {
	return func(_ *Checker, r string) (bool, error) {
		rs := []rune(pyStrip(r))
		return len(rs) > 1 && rs[0] == '"' && rs[len(rs)-1] == '"', nil
	}, nil
}
