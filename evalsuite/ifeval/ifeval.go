// Package ifeval checks verifiable instructions in the style of IFEval
// (Zhou et al., 2023), as lm-eval's ifeval task scores them: each prompt
// carries instruction ids with keyword arguments; a response follows an
// instruction strictly when the check passes on the response itself, and
// loosely when it passes on any of eight relaxed variants (first and/or
// last line removed, asterisks removed). Prompt-level accuracy needs every
// instruction followed; instruction-level accuracy counts instructions.
//
// Only a documented subset of IFEval's instructions is implemented (see
// Supported). A prompt that uses another instruction is reported as an
// error, never scored as a failure. Language detection, sentence counting
// and nth-paragraph checks are left out because they depend on Python
// libraries (langdetect, nltk's sentence splitter) that we cannot match
// exactly.
package ifeval

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/dlclark/regexp2"
)

// Kwargs are one instruction's arguments (null values already removed).
type Kwargs map[string]any

type checker func(resp string, kw Kwargs) (bool, error)

var checkers = map[string]checker{
	"punctuation:no_comma":                          noComma,
	"change_case:english_lowercase":                 lowercase,
	"change_case:english_capital":                   uppercase,
	"change_case:capital_word_frequency":            capitalWordFrequency,
	"length_constraints:number_words":               numberWords,
	"length_constraints:number_paragraphs":          numberParagraphs,
	"detectable_format:number_bullet_lists":         bulletLists,
	"detectable_format:title":                       title,
	"detectable_format:json_format":                 jsonFormat,
	"detectable_format:number_highlighted_sections": highlightedSections,
	"detectable_format:multiple_sections":           multipleSections,
	"detectable_format:constrained_response":        constrainedResponse,
	"detectable_content:number_placeholders":        placeholders,
	"detectable_content:postscript":                 postscript,
	"startend:end_checker":                          endChecker,
	"startend:quotation":                            quotation,
	"keywords:existence":                            keywordsExist,
	"keywords:forbidden_words":                      forbiddenWords,
	"keywords:frequency":                            keywordFrequency,
	"keywords:letter_frequency":                     letterFrequency,
	"combination:repeat_prompt":                     repeatPrompt,
	"combination:two_responses":                     twoResponses,
}

// Supported lists the implemented instruction ids.
func Supported() []string {
	out := make([]string, 0, len(checkers))
	for k := range checkers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Result is one prompt's outcome.
type Result struct {
	Strict []bool
	Loose  []bool
}

// PromptStrict reports whether every instruction was followed strictly.
func (r Result) PromptStrict() bool { return all(r.Strict) }

// PromptLoose reports whether every instruction was followed loosely.
func (r Result) PromptLoose() bool { return all(r.Loose) }

func all(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

// Check scores response against the instructions.
func Check(response string, ids []string, kwargs []Kwargs) (Result, error) {
	if len(ids) == 0 {
		return Result{}, fmt.Errorf("ifeval: no instructions")
	}
	if len(kwargs) != len(ids) {
		return Result{}, fmt.Errorf("ifeval: %d instructions but %d kwargs entries", len(ids), len(kwargs))
	}
	variants := looseVariants(response)
	var res Result
	for i, id := range ids {
		c, ok := checkers[id]
		if !ok {
			return Result{}, fmt.Errorf("ifeval: instruction %q is not supported by this implementation", id)
		}
		kw := kwargs[i]
		strict := false
		if strings.TrimSpace(response) != "" {
			v, err := c(response, kw)
			if err != nil {
				return Result{}, fmt.Errorf("ifeval: %s: %w", id, err)
			}
			strict = v
		}
		loose := false
		for _, r := range variants {
			if strings.TrimSpace(r) == "" {
				continue
			}
			v, err := c(r, kw)
			if err != nil {
				return Result{}, fmt.Errorf("ifeval: %s: %w", id, err)
			}
			if v {
				loose = true
				break
			}
		}
		res.Strict = append(res.Strict, strict)
		res.Loose = append(res.Loose, loose)
	}
	return res, nil
}

// looseVariants are the eight relaxed forms of a response.
func looseVariants(r string) []string {
	lines := strings.Split(r, "\n")
	join := func(ls []string) string { return strings.TrimSpace(strings.Join(ls, "\n")) }
	var first, last, both string
	if len(lines) > 1 {
		first = join(lines[1:])
		last = join(lines[:len(lines)-1])
	}
	if len(lines) > 2 {
		both = join(lines[1 : len(lines)-1])
	}
	noStar := func(s string) string { return strings.ReplaceAll(s, "*", "") }
	return []string{r, noStar(r), first, last, both, noStar(first), noStar(last), noStar(both)}
}

// --- argument helpers ---

func kwString(kw Kwargs, key string) (string, error) {
	v, ok := kw[key]
	if !ok {
		return "", fmt.Errorf("missing argument %q", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q is a %T, want text", key, v)
	}
	return s, nil
}

func kwInt(kw Kwargs, key string) (int, error) {
	v, ok := kw[key]
	if !ok {
		return 0, fmt.Errorf("missing argument %q", key)
	}
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("argument %q = %v is not an integer", key, x)
		}
		return int(x), nil
	case int:
		return x, nil
	}
	return 0, fmt.Errorf("argument %q is a %T, want a number", key, v)
}

func kwStrings(kw Kwargs, key string) ([]string, error) {
	v, ok := kw[key]
	if !ok {
		return nil, fmt.Errorf("missing argument %q", key)
	}
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("argument %q[%d] is a %T, want text", key, i, e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("argument %q is a %T, want a list of text", key, v)
}

// compare applies IFEval's relation ("less than" or "at least").
func compare(n int, kw Kwargs, relKey, numKey string) (bool, error) {
	want, err := kwInt(kw, numKey)
	if err != nil {
		return false, err
	}
	rel, err := kwString(kw, relKey)
	if err != nil {
		return false, err
	}
	switch rel {
	case "less than":
		return n < want, nil
	case "at least":
		return n >= want, nil
	}
	return false, fmt.Errorf("relation %q (want \"less than\" or \"at least\")", rel)
}

func compile(p string, opts regexp2.RegexOptions) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(p, opts)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", p, err)
	}
	re.MatchTimeout = 2 * time.Second
	return re, nil
}

func countMatches(pattern string, opts regexp2.RegexOptions, s string) (int, []string, error) {
	re, err := compile(pattern, opts)
	if err != nil {
		return 0, nil, err
	}
	var found []string
	m, err := re.FindStringMatch(s)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		found = append(found, m.String())
	}
	if err != nil {
		return 0, nil, err
	}
	return len(found), found, nil
}

// --- checks ---

func noComma(r string, _ Kwargs) (bool, error) { return !strings.Contains(r, ","), nil }

// hasCased mirrors Python's str.islower/isupper requirement of at least one
// cased character.
func hasCased(r string) bool {
	for _, c := range r {
		if unicode.IsUpper(c) || unicode.IsLower(c) {
			return true
		}
	}
	return false
}

func lowercase(r string, _ Kwargs) (bool, error) {
	return hasCased(r) && strings.ToLower(r) == r, nil
}

func uppercase(r string, _ Kwargs) (bool, error) {
	return hasCased(r) && strings.ToUpper(r) == r, nil
}

func capitalWordFrequency(r string, kw Kwargs) (bool, error) {
	_, words, err := countMatches(`\w+`, regexp2.None, r)
	if err != nil {
		return false, err
	}
	n := 0
	for _, w := range words {
		if hasCased(w) && strings.ToUpper(w) == w {
			n++
		}
	}
	return compare(n, kw, "capital_relation", "capital_frequency")
}

func numberWords(r string, kw Kwargs) (bool, error) {
	n, _, err := countMatches(`\w+`, regexp2.None, r)
	if err != nil {
		return false, err
	}
	return compare(n, kw, "relation", "num_words")
}

func numberParagraphs(r string, kw Kwargs) (bool, error) {
	want, err := kwInt(kw, "num_paragraphs")
	if err != nil {
		return false, err
	}
	re, err := compile(`\s?\*\*\*\s?`, regexp2.None)
	if err != nil {
		return false, err
	}
	parts, err := split(re, r)
	if err != nil {
		return false, err
	}
	n := len(parts)
	for i, p := range parts {
		if strings.TrimSpace(p) == "" {
			if i == 0 || i == len(parts)-1 {
				n--
			} else {
				return false, nil
			}
		}
	}
	return n == want, nil
}

// split is Python's re.split without capturing groups.
func split(re *regexp2.Regexp, s string) ([]string, error) {
	rs := []rune(s)
	var out []string
	prev := 0
	m, err := re.FindStringMatch(s)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		if m.Length == 0 {
			continue
		}
		out = append(out, string(rs[prev:m.Index]))
		prev = m.Index + m.Length
	}
	if err != nil {
		return nil, err
	}
	return append(out, string(rs[prev:])), nil
}

func bulletLists(r string, kw Kwargs) (bool, error) {
	want, err := kwInt(kw, "num_bullets")
	if err != nil {
		return false, err
	}
	a, _, err := countMatches(`^\s*\*[^\*].*$`, regexp2.Multiline, r)
	if err != nil {
		return false, err
	}
	b, _, err := countMatches(`^\s*-.*$`, regexp2.Multiline, r)
	if err != nil {
		return false, err
	}
	return a+b == want, nil
}

func title(r string, _ Kwargs) (bool, error) {
	_, found, err := countMatches(`<<[^\n]+>>`, regexp2.None, r)
	if err != nil {
		return false, err
	}
	for _, f := range found {
		if strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(f, "<<"), ">>")) != "" {
			return true, nil
		}
	}
	return false, nil
}

func jsonFormat(r string, _ Kwargs) (bool, error) {
	s := strings.TrimSpace(r)
	for _, p := range []string{"```json", "```Json", "```JSON", "```"} {
		if strings.HasPrefix(s, p) {
			s = strings.TrimPrefix(s, p)
			break
		}
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	return json.Valid([]byte(s)), nil
}

func highlightedSections(r string, kw Kwargs) (bool, error) {
	want, err := kwInt(kw, "num_highlights")
	if err != nil {
		return false, err
	}
	n := 0
	for _, p := range []string{`\*[^\n\*]*\*`, `\*\*[^\n\*]*\*\*`} {
		_, found, err := countMatches(p, regexp2.None, r)
		if err != nil {
			return false, err
		}
		for _, f := range found {
			if strings.TrimSpace(strings.Trim(f, "*")) != "" {
				n++
			}
		}
	}
	return n >= want, nil
}

func multipleSections(r string, kw Kwargs) (bool, error) {
	sp, err := kwString(kw, "section_spliter")
	if err != nil {
		return false, err
	}
	want, err := kwInt(kw, "num_sections")
	if err != nil {
		return false, err
	}
	re, err := compile(`\s?`+regexp2.Escape(strings.TrimSpace(sp))+`\s?\d+\s?`, regexp2.None)
	if err != nil {
		return false, err
	}
	parts, err := split(re, r)
	if err != nil {
		return false, err
	}
	return len(parts)-1 >= want, nil
}

func constrainedResponse(r string, _ Kwargs) (bool, error) {
	r = strings.TrimSpace(r)
	for _, opt := range []string{"My answer is yes.", "My answer is no.", "My answer is maybe."} {
		if strings.Contains(r, opt) {
			return true, nil
		}
	}
	return false, nil
}

func placeholders(r string, kw Kwargs) (bool, error) {
	want, err := kwInt(kw, "num_placeholders")
	if err != nil {
		return false, err
	}
	n, _, err := countMatches(`\[.*?\]`, regexp2.None, r)
	if err != nil {
		return false, err
	}
	return n >= want, nil
}

func postscript(r string, kw Kwargs) (bool, error) {
	marker, err := kwString(kw, "postscript_marker")
	if err != nil {
		return false, err
	}
	var p string
	switch marker {
	case "P.P.S":
		p = `\s*p\.\s?p\.\s?s.*$`
	case "P.S.":
		p = `\s*p\.\s?s\..*$`
	default:
		p = `\s*` + regexp2.Escape(strings.ToLower(marker)) + `.*$`
	}
	n, _, err := countMatches(p, regexp2.Multiline, strings.ToLower(r))
	return n > 0, err
}

func endChecker(r string, kw Kwargs) (bool, error) {
	end, err := kwString(kw, "end_phrase")
	if err != nil {
		return false, err
	}
	return strings.HasSuffix(strings.ToLower(strings.TrimSpace(r)), strings.ToLower(strings.TrimSpace(end))), nil
}

func quotation(r string, _ Kwargs) (bool, error) {
	s := strings.TrimSpace(r)
	return len(s) > 1 && s[0] == '"' && s[len(s)-1] == '"', nil
}

func keywordsExist(r string, kw Kwargs) (bool, error) {
	words, err := kwStrings(kw, "keywords")
	if err != nil {
		return false, err
	}
	for _, w := range words {
		n, _, err := countMatches(w, regexp2.IgnoreCase, r)
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
	}
	return true, nil
}

func forbiddenWords(r string, kw Kwargs) (bool, error) {
	words, err := kwStrings(kw, "forbidden_words")
	if err != nil {
		return false, err
	}
	for _, w := range words {
		n, _, err := countMatches(`\b`+w+`\b`, regexp2.IgnoreCase, r)
		if err != nil {
			return false, err
		}
		if n > 0 {
			return false, nil
		}
	}
	return true, nil
}

func keywordFrequency(r string, kw Kwargs) (bool, error) {
	word, err := kwString(kw, "keyword")
	if err != nil {
		return false, err
	}
	n, _, err := countMatches(word, regexp2.IgnoreCase, r)
	if err != nil {
		return false, err
	}
	return compare(n, kw, "relation", "frequency")
}

func letterFrequency(r string, kw Kwargs) (bool, error) {
	letter, err := kwString(kw, "letter")
	if err != nil {
		return false, err
	}
	if len([]rune(letter)) != 1 {
		return false, fmt.Errorf("argument \"letter\" = %q is not one letter", letter)
	}
	n := strings.Count(strings.ToLower(r), strings.ToLower(letter))
	return compare(n, kw, "let_relation", "let_frequency")
}

func repeatPrompt(r string, kw Kwargs) (bool, error) {
	p, err := kwString(kw, "prompt_to_repeat")
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(r)), strings.ToLower(strings.TrimSpace(p))), nil
}

func twoResponses(r string, _ Kwargs) (bool, error) {
	var valid []string
	for i, part := range strings.Split(r, "******") {
		p := strings.TrimSpace(part)
		if p == "" {
			if i != 0 && i != len(strings.Split(r, "******"))-1 {
				return false, nil
			}
			continue
		}
		valid = append(valid, p)
	}
	return len(valid) == 2 && valid[0] != valid[1], nil
}
