// Package wordtok splits text into words as NLTK 3.9.1's word_tokenize
// does: Punkt sentences (evalsuite/internal/punkt with the user's English
// parameters), each cut by NLTKWordTokenizer, the improved Treebank
// tokenizer of nltk/tokenize/destructive.py (convert_parentheses off).
//
// The tokenizer is a fixed pipeline of regular-expression substitutions;
// each is written here with the same pattern, run by regexp2, whose syntax
// and backtracking are those of Python's re for these patterns. Python's
// \w, \s and \b follow its own Unicode tables where regexp2 follows .NET's
// (\w also takes combining marks and connector punctuation, \s leaves out
// U+001C..U+001F): the two agree on text without those characters.
package wordtok

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2"

	"github.com/ttis-dev/ttis/evalsuite/internal/punkt"
)

type rule struct {
	re   *regexp2.Regexp
	repl string
}

// matchTimeout bounds one substitution; the patterns are linear, so only a
// pathological input of megabytes could reach it.
const matchTimeout = 5 * time.Second

func mustRule(pattern, repl string) rule {
	re := regexp2.MustCompile(pattern, regexp2.None)
	re.MatchTimeout = matchTimeout
	return rule{re, repl}
}

// The substitutions of NLTKWordTokenizer, in its order; replacements use
// regexp2's ${n} for Python's \n and \g<n>.
var (
	startingQuotes = []rule{
		mustRule("([«“‘„]|[`]+)", " ${1} "),
		mustRule(`^"`, "``"),
		mustRule("(``)", " ${1} "),
		mustRule(`([ \(\[{<])("|'{2})`, "${1} `` "),
		mustRule(`(?i)(')(?!re|ve|ll|m|t|s|d|n)(\w)\b`, "${1} ${2}"),
	}
	endingQuotes = []rule{
		mustRule("([»”’])", " ${1} "),
		mustRule(`''`, " '' "),
		mustRule(`"`, " '' "),
		mustRule(`\s+`, " "),
		mustRule(`([^' ])('[sS]|'[mM]|'[dD]|') `, "${1} ${2} "),
		mustRule(`([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) `, "${1} ${2} "),
	}
	punctuation = []rule{
		mustRule(`([^\.])(\.)([\]\)}>"'»”’ ]*)\s*$`, "${1} ${2} ${3} "),
		mustRule(`([:,])([^\d])`, " ${1} ${2}"),
		mustRule(`([:,])$`, " ${1} "),
		mustRule(`\.{2,}`, " ${0} "),
		mustRule(`[;@#$%&]`, " ${0} "),
		mustRule(`([^\.])(\.)([\]\)}>"']*)\s*$`, "${1} ${2}${3} "),
		mustRule(`[?!]`, " ${0} "),
		mustRule(`([^'])' `, "${1} ' "),
		mustRule(`[*]`, " ${0} "),
	}
	parensBrackets = mustRule(`[\]\[\(\)\{\}\<\>]`, " ${0} ")
	doubleDashes   = mustRule(`--`, " -- ")
	contractions   = []rule{
		// MacIntyreContractions.CONTRACTIONS2 and CONTRACTIONS3 (the
		// (?#X) comments dropped).
		mustRule(`(?i)\b(can)(not)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(d)('ye)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(gim)(me)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(gon)(na)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(got)(ta)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(lem)(me)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(more)('n)\b`, " ${1} ${2} "),
		mustRule(`(?i)\b(wan)(na)(?=\s)`, " ${1} ${2} "),
		mustRule(`(?i) ('t)(is)\b`, " ${1} ${2} "),
		mustRule(`(?i) ('t)(was)\b`, " ${1} ${2} "),
	}
)

func (r rule) apply(s string) (string, error) {
	out, err := r.re.Replace(s, r.repl, -1, -1)
	if err != nil {
		return "", fmt.Errorf("wordtok: %w", err)
	}
	return out, nil
}

// Tokenize is NLTKWordTokenizer().tokenize(text): the words of one
// sentence.
func Tokenize(text string) ([]string, error) {
	var err error
	apply := func(rs ...rule) {
		for _, r := range rs {
			if err == nil {
				text, err = r.apply(text)
			}
		}
	}
	apply(startingQuotes...)
	apply(punctuation...)
	apply(parensBrackets, doubleDashes)
	text = " " + text + " "
	apply(endingQuotes...)
	apply(contractions...)
	if err != nil {
		return nil, err
	}
	return pyFields(text), nil
}

// pyFields is Python's str.split(): runs of whitespace (str.isspace)
// separate the words.
func pyFields(s string) []string {
	return strings.FieldsFunc(s, punkt.IsSpace)
}

// WordTokenize is nltk.word_tokenize(text): the words of each Punkt
// sentence, in order.
func WordTokenize(sent *punkt.Tokenizer, text string) ([]string, error) {
	var out []string
	for _, s := range sent.Tokenize(text) {
		words, err := Tokenize(s)
		if err != nil {
			return nil, err
		}
		out = append(out, words...)
	}
	return out, nil
}
