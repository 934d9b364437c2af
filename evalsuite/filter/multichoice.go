package filter

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/dlclark/regexp2"
)

// ChoiceStep is a Step that can also read the document's answer choices,
// as lm-eval's multi_choice_regex does. A caller that knows the document
// uses Chain.ApplyChoices; plain Apply runs the step without the choices.
type ChoiceStep interface {
	Step
	// ApplyChoices is Apply with the document's answer choices in order
	// (the first is labelled A); nil means they are unknown, as in Apply.
	ApplyChoices(resps, choices []string) ([]string, error)
}

// ApplyChoices is Apply for a document whose answer choices are known:
// steps implementing ChoiceStep receive them (nil choices behave as Apply).
func (c Chain) ApplyChoices(resps, choices []string) (string, error) {
	cur := resps
	for _, s := range c.Steps {
		var next []string
		var err error
		if cs, ok := s.(ChoiceStep); ok {
			next, err = cs.ApplyChoices(cur, choices)
		} else {
			next, err = s.Apply(cur)
		}
		if err != nil {
			return "", fmt.Errorf("filter %s step %s: %w", c.Name, s.Name(), err)
		}
		cur = next
	}
	if len(cur) == 0 {
		return "", nil
	}
	return cur[0], nil
}

// MultiChoiceRegex is lm-eval's multi_choice_regex filter for answers
// labelled "(A)", "(B)", ...: it tries the pattern first; when that finds
// nothing it looks for a choice's text in the response (after the ignore
// options are applied to both) and maps it to its label; when that also
// fails it looks for a bare letter after a colon (": B" gives "(B)").
// Every stage picks the match at GroupSelect. Without the document's
// choices (plain Apply) the choice-text stage is skipped and the bare
// letters run from A over NumChoices labels.
type MultiChoiceRegex struct {
	re                *regexp2.Regexp
	GroupSelect       int
	IgnoreCase        bool
	IgnorePunctuation bool
	ignores           []*regexp2.Regexp
	// NumChoices is the label count assumed when the choices are unknown.
	NumChoices  int
	FallbackStr string
}

// MultiChoiceOptions configure NewMultiChoiceRegex.
type MultiChoiceOptions struct {
	GroupSelect       int
	IgnoreCase        bool
	IgnorePunctuation bool
	RegexesToIgnore   []string
	NumChoices        int
	Fallback          string
}

// NewMultiChoiceRegex compiles pattern and the ignore patterns (Python `re`
// syntax).
func NewMultiChoiceRegex(pattern string, opts MultiChoiceOptions) (*MultiChoiceRegex, error) {
	re, err := compile(pattern)
	if err != nil {
		return nil, err
	}
	m := &MultiChoiceRegex{re: re, GroupSelect: opts.GroupSelect, IgnoreCase: opts.IgnoreCase,
		IgnorePunctuation: opts.IgnorePunctuation, NumChoices: opts.NumChoices, FallbackStr: opts.Fallback}
	if m.FallbackStr == "" {
		m.FallbackStr = Fallback
	}
	if m.NumChoices <= 0 || m.NumChoices > 26 {
		return nil, fmt.Errorf("multi_choice_regex: %d choices, want 1..26", m.NumChoices)
	}
	for _, p := range opts.RegexesToIgnore {
		ig, err := compile(p)
		if err != nil {
			return nil, err
		}
		m.ignores = append(m.ignores, ig)
	}
	return m, nil
}

func compile(pattern string) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("compile regex %q: %w", pattern, err)
	}
	re.MatchTimeout = matchTimeout
	return re, nil
}

// Name implements Step.
func (m *MultiChoiceRegex) Name() string { return "multi_choice_regex" }

// Apply implements Step without the document's choices.
func (m *MultiChoiceRegex) Apply(resps []string) ([]string, error) {
	return m.apply(resps, nil)
}

// ApplyChoices implements ChoiceStep.
func (m *MultiChoiceRegex) ApplyChoices(resps, choices []string) ([]string, error) {
	if len(choices) > 26 {
		return nil, fmt.Errorf("multi_choice_regex: %d choices, at most 26 can be labelled", len(choices))
	}
	return m.apply(resps, choices) // nil choices: unknown, as in Apply
}

// quoteLiteral escapes s for use as a literal in a pattern (Python's
// re.escape). Every ASCII punctuation character gets a backslash, which
// .NET syntax reads as that character; other runes are left as they are
// (regexp2.Escape writes some of them as \u escapes it cannot parse back).
func quoteLiteral(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (unicode.IsPunct(r) || unicode.IsSymbol(r)) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func label(i int) string { return "(" + string(rune('A'+i)) + ")" }

func (m *MultiChoiceRegex) apply(resps, choices []string) ([]string, error) {
	var textRe *regexp2.Regexp
	toLabel := map[string]string{}
	n := m.NumChoices
	if choices != nil {
		n = len(choices)
		alts := make([]string, len(choices))
		for i, c := range choices {
			norm, err := m.normalize(strings.TrimSpace(c))
			if err != nil {
				return nil, err
			}
			alts[i] = quoteLiteral(norm)
			toLabel[norm] = label(i)
		}
		if len(alts) > 0 {
			re, err := compile(strings.Join(alts, "|"))
			if err != nil {
				return nil, err
			}
			textRe = re
		}
	}
	letters := make([]string, n)
	bare := map[string]string{}
	for i := range letters {
		letters[i] = string(rune('A' + i))
		bare[letters[i]] = label(i)
	}
	var bareRe *regexp2.Regexp
	if n > 0 {
		re, err := compile(`:[\s]*(` + strings.Join(letters, "|") + `)`)
		if err != nil {
			return nil, err
		}
		bareRe = re
	}
	out := make([]string, len(resps))
	for i, resp := range resps {
		got, err := m.find(m.re, resp, nil)
		if err != nil {
			return nil, err
		}
		if got == "" && textRe != nil {
			norm, err := m.normalize(resp)
			if err != nil {
				return nil, err
			}
			if got, err = m.find(textRe, norm, toLabel); err != nil {
				return nil, err
			}
		}
		if got == "" && bareRe != nil {
			if got, err = m.find(bareRe, resp, bare); err != nil {
				return nil, err
			}
		}
		if got == "" {
			got = m.FallbackStr
		}
		out[i] = got
	}
	return out, nil
}

// find is lm-eval's find_match: the selected findall match, stripped and
// mapped through convert when it is a key; "" when nothing usable matched.
func (m *MultiChoiceRegex) find(re *regexp2.Regexp, s string, convert map[string]string) (string, error) {
	matches, err := FindAll(re, s)
	if err != nil {
		return "", err
	}
	idx := m.GroupSelect
	if idx < 0 {
		idx += len(matches)
	}
	if idx < 0 || idx >= len(matches) {
		return "", nil
	}
	got := strings.TrimSpace(matches[idx])
	if v, ok := convert[got]; ok && got != "" {
		got = v
	}
	return got, nil
}

// normalize applies the ignore options: regexes removed, lower case, and
// every Unicode punctuation character (category P) removed.
func (m *MultiChoiceRegex) normalize(s string) (string, error) {
	for _, re := range m.ignores {
		out, err := re.Replace(s, "", -1, -1)
		if err != nil {
			return "", fmt.Errorf("regexes_to_ignore %q: %w", re.String(), err)
		}
		s = out
	}
	if m.IgnoreCase {
		s = strings.ToLower(s)
	}
	if m.IgnorePunctuation {
		s = strings.Map(func(r rune) rune {
			if unicode.IsPunct(r) {
				return -1
			}
			return r
		}, s)
	}
	return s, nil
}

// GPQAStrict is the GPQA generative tasks' "strict-match": the text after
// "The answer is " up to the last character of its line.
func GPQAStrict() Chain {
	return Chain{Name: "strict-match", Steps: []Step{MustRegex(`(?<=The answer is )(.*)(?=.)`, 0), TakeFirst{}}}
}

// GPQAFlexible is the GPQA generative tasks' "flexible-extract": the last
// "(X)" label, else the last choice text quoted, else the last ": X".
func GPQAFlexible() Chain {
	m, err := NewMultiChoiceRegex(`(\([A-Z]\))`, MultiChoiceOptions{GroupSelect: -1, IgnoreCase: true, IgnorePunctuation: true, NumChoices: 4})
	if err != nil {
		panic(err) // fixed pattern: a failure is a programming error
	}
	return Chain{Name: "flexible-extract", Steps: []Step{m, TakeFirst{}}}
}

// MMLUProCustomExtract is mmlu_pro's "custom-extract": the first letter
// A-J after "answer is", with or without parentheses.
func MMLUProCustomExtract() Chain {
	return Chain{Name: "custom-extract", Steps: []Step{MustRegex(`answer is \(?([ABCDEFGHIJ])\)?`, 0), TakeFirst{}}}
}
