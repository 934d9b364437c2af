// Package filter implements lm-evaluation-harness's response filters: the
// steps that turn a model's raw generation into the answer that is scored
// (regex extraction, take_first, whitespace removal), chained under a name
// such as "strict-match" or "flexible-extract".
//
// Patterns are compiled with dlclark/regexp2 rather than the standard library
// because lm-eval's task files use Python `re` syntax, including look-ahead
// and look-behind (`(?<=The answer is )(.*)(?=.)`), which RE2 cannot express.
package filter

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// Fallback is what a regex filter yields when its pattern does not match,
// as in lm-eval's RegexFilter.
const Fallback = "[invalid]"

// matchTimeout bounds one regex evaluation, so that a pathological response
// cannot stall a run through catastrophic backtracking.
const matchTimeout = 2 * time.Second

// Step transforms the responses of one document (one per repeat; the runner
// always asks for one).
type Step interface {
	// Name is lm-eval's filter function name ("regex", "take_first").
	Name() string
	// Apply returns the transformed responses.
	Apply(resps []string) ([]string, error)
}

// Chain is a named filter pipeline; its name is the second half of a
// result key ("exact_match,strict-match").
type Chain struct {
	Name  string
	Steps []Step
}

// None is lm-eval's implicit chain for tasks without filters: take the
// first response unchanged.
func None() Chain { return Chain{Name: "none", Steps: []Step{TakeFirst{}}} }

// Apply runs every step in order and returns the first remaining response
// (lm-eval's take_first); an empty list yields the empty string.
func (c Chain) Apply(resps []string) (string, error) {
	return c.ApplyChoices(resps, nil)
}

// Regex extracts an answer with a Python-syntax pattern, mirroring
// lm-eval's RegexFilter: it collects every match the way `re.findall` does
// (the whole match when the pattern has no groups, the group when it has
// one, the first non-empty group when it has several), picks the match at
// GroupSelect (negative counts from the end), strips surrounding
// whitespace, and yields Fallback when nothing matches.
type Regex struct {
	re          *regexp2.Regexp
	GroupSelect int
	FallbackStr string
}

// NewRegex compiles pattern (Python `re` syntax). fallback "" means Fallback.
func NewRegex(pattern string, groupSelect int, fallback string) (*Regex, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("compile regex %q: %w", pattern, err)
	}
	re.MatchTimeout = matchTimeout
	if fallback == "" {
		fallback = Fallback
	}
	return &Regex{re: re, GroupSelect: groupSelect, FallbackStr: fallback}, nil
}

// MustRegex is NewRegex for patterns fixed in the source; it panics on a
// pattern that does not compile, which is a programming error.
func MustRegex(pattern string, groupSelect int) *Regex {
	r, err := NewRegex(pattern, groupSelect, "")
	if err != nil {
		panic(err)
	}
	return r
}

// Name implements Step.
func (r *Regex) Name() string { return "regex" }

// Pattern is the source pattern.
func (r *Regex) Pattern() string { return r.re.String() }

// Apply implements Step.
func (r *Regex) Apply(resps []string) ([]string, error) {
	out := make([]string, len(resps))
	for i, resp := range resps {
		matches, err := FindAll(r.re, resp)
		if err != nil {
			return nil, err
		}
		idx := r.GroupSelect
		if idx < 0 {
			idx += len(matches)
		}
		if len(matches) == 0 || idx < 0 || idx >= len(matches) {
			// Python would raise IndexError for an out-of-range selection
			// of a non-empty list; treating it as "no usable match" keeps
			// one odd response from aborting the run.
			out[i] = r.FallbackStr
			continue
		}
		if matches[idx] == "" && r.tuples() {
			// lm-eval keeps the first non-empty group of a tuple and falls
			// back when every group is empty.
			out[i] = r.FallbackStr
			continue
		}
		out[i] = strings.TrimSpace(matches[idx])
	}
	return out, nil
}

// tuples reports whether findall yields tuples (two or more capturing
// groups; GetGroupNumbers includes group 0).
func (r *Regex) tuples() bool { return len(r.re.GetGroupNumbers()) > 2 }

// FindAll returns what Python's re.findall would for re on s: whole matches
// when the pattern has no capturing groups, group 1 when it has exactly one,
// and otherwise the first non-empty group of each match (lm-eval reduces
// findall's tuples that way).
func FindAll(re *regexp2.Regexp, s string) ([]string, error) {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		groups := m.Groups()
		switch len(groups) {
		case 1:
			out = append(out, m.String())
		case 2:
			out = append(out, groups[1].String())
		default:
			first := ""
			for _, g := range groups[1:] {
				if v := g.String(); v != "" {
					first = v
					break
				}
			}
			out = append(out, first)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("regex %q on a %d-byte response: %w", re.String(), len(s), err)
	}
	return out, nil
}

// TakeFirst keeps the first response (lm-eval's take_first).
type TakeFirst struct{}

// Name implements Step.
func (TakeFirst) Name() string { return "take_first" }

// Apply implements Step.
func (TakeFirst) Apply(resps []string) ([]string, error) {
	if len(resps) == 0 {
		return resps, nil
	}
	return resps[:1], nil
}

// RemoveWhitespace drops leading whitespace (lm-eval's remove_whitespace).
type RemoveWhitespace struct{}

// Name implements Step.
func (RemoveWhitespace) Name() string { return "remove_whitespace" }

// Apply implements Step.
func (RemoveWhitespace) Apply(resps []string) ([]string, error) {
	out := make([]string, len(resps))
	for i, r := range resps {
		out[i] = strings.TrimLeft(r, " \t\n\r\v\f")
	}
	return out, nil
}

// Lowercase lower-cases every response (lm-eval's lowercase).
type Lowercase struct{}

// Name implements Step.
func (Lowercase) Name() string { return "lowercase" }

// Apply implements Step.
func (Lowercase) Apply(resps []string) ([]string, error) {
	out := make([]string, len(resps))
	for i, r := range resps {
		out[i] = strings.ToLower(r)
	}
	return out, nil
}

// The chains below are lm-eval's task filters, with its exact patterns.

// GSM8KStrict is gsm8k's "strict-match": the number after "#### ".
func GSM8KStrict() Chain {
	return Chain{Name: "strict-match", Steps: []Step{MustRegex(`#### (\-?[0-9\.\,]+)`, 0), TakeFirst{}}}
}

// GSM8KFlexible is gsm8k's "flexible-extract": the last number-like run.
func GSM8KFlexible() Chain {
	return Chain{Name: "flexible-extract", Steps: []Step{MustRegex(`(-?[$0-9.,]{2,})|(-?[0-9]+)`, -1), TakeFirst{}}}
}

// GSM8KCoTStrict is gsm8k_cot's "strict-match" ("The answer is N.").
func GSM8KCoTStrict() Chain {
	return Chain{Name: "strict-match", Steps: []Step{MustRegex(`The answer is (\-?[0-9\.\,]+).`, 0), TakeFirst{}}}
}

// GetResponse is mmlu_generative's "get_response": the text up to the first
// line break, without surrounding whitespace.
func GetResponse() Chain {
	return Chain{Name: "get_response", Steps: []Step{MustRegex(`^(.*?)(?=\n|$)`, 0), RemoveWhitespace{}, TakeFirst{}}}
}
