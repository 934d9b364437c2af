// Package punkt splits text into sentences as NLTK's Punkt sentence
// tokenizer does with trained parameters (nltk.tokenize.punkt,
// PunktSentenceTokenizer.tokenize with realign_boundaries=True, the
// English PunktLanguageVars), so that sent_tokenize's sentences can be
// reproduced from the punkt_tab files NLTK 3.9 loads (Params, Load).
//
// Only the tokenizer is ported, not the trainer. Python's regular
// expressions use lookahead, which Go's regexp lacks, so each one is a
// hand-written scanner here; the comments name the expression it stands
// for. Text is handled as code points, as Python's str indexes it.
//
// Checked against Python NLTK 3.8 (Debian 12's python3-nltk) on
// hand-made and trained parameters (testdata/punkt_expected.py), the
// files read back as NLTK 3.9's punkt_tab loader decodes them. lm-eval's
// RULER asks for NLTK >= 3.9.1, whose punkt.py could not be installed
// here to run the same script: 3.9 is known to have changed how the
// parameters are stored (punkt_tab instead of a pickle). Character classes follow Go's Unicode tables where Python
// uses its own: the two agree except where their Unicode versions
// differ, and word types lower a capital sigma to σ even at a word's
// end, where Python's str.lower writes ς.
package punkt

import (
	"unicode"
)

// Orthographic context flags (punkt.py's _ORTHO_*): in which case and
// position a word type was seen during training.
const (
	orthoBegUC = 1 << 1
	orthoMidUC = 1 << 2
	orthoUnkUC = 1 << 3
	orthoBegLC = 1 << 4
	orthoMidLC = 1 << 5
	orthoUnkLC = 1 << 6
	orthoUC    = orthoBegUC | orthoMidUC | orthoUnkUC
	orthoLC    = orthoBegLC | orthoMidLC | orthoUnkLC
)

// Params are PunktParameters: the trained model.
type Params struct {
	AbbrevTypes  map[string]bool
	Collocations map[[2]string]bool
	SentStarters map[string]bool
	OrthoContext map[string]int64
}

// Tokenizer is a PunktSentenceTokenizer with fixed parameters; it keeps
// no state between calls.
type Tokenizer struct {
	p Params
}

// New returns a tokenizer using p, which it does not copy; p must not
// change afterwards.
func New(p Params) *Tokenizer { return &Tokenizer{p: p} }

// isSpace is Python's \s (and str.isspace) on str: Go's unicode.IsSpace
// plus the information separators U+001C..U+001F.
func isSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// IsSpace is Python's str.isspace on one character, for the callers that
// split or strip text as Python's str.split() and str.strip() do.
func IsSpace(r rune) bool { return isSpace(r) }

// isASCIISpace is membership in Python's string.whitespace.
func isASCIISpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// isDecimal is Python's \d on str (Unicode category Nd).
func isDecimal(r rune) bool { return unicode.Is(unicode.Nd, r) }

// isWordNonDigit is [^\W\d]: a word character (letter, number or
// underscore, as Python's \w) that is not a decimal digit.
func isWordNonDigit(r rune) bool {
	return unicode.IsLetter(r) || r == '_' || (unicode.IsNumber(r) && !isDecimal(r))
}

// isUpper and isLower are str.isupper and str.islower on one character.
func isUpper(r rune) bool { return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r) }
func isLower(r rune) bool { return unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r) }

// isNonWord is _re_non_word_chars for the English sentence end
// characters: punctuation that cannot appear within a word.
func isNonWord(r rune) bool {
	switch r {
	case ')', '"', ';', '}', ']', '*', ':', '@', '\'', '(', '{', '[', '!', '?':
		return true
	}
	return false
}

// isSentEnd is sent_end_chars.
func isSentEnd(r rune) bool { return r == '.' || r == '?' || r == '!' }

// startsWord is _re_word_start: characters a word token may start with.
func startsWord(r rune) bool {
	switch r {
	case '(', '"', '`', '{', '[', ':', ';', '&', '#', '*', '@', ')', '}', ']', '-', ',':
		return false
	}
	return true
}

// lower is str.lower.
func lower(s []rune) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == 0x130 { // İ lowers to i and a combining dot in Python
			out = append(out, 'i', 0x307)
			continue
		}
		out = append(out, unicode.ToLower(r))
	}
	return string(out)
}

// multiChar is _re_multi_char_punct matched at line[i]: the end of the
// match, or -1.
func multiChar(line []rune, i int) int {
	n := len(line)
	if i >= n {
		return -1
	}
	if i+1 < n && line[i] == '-' && line[i+1] == '-' { // \-{2,}
		j := i
		for j < n && line[j] == '-' {
			j++
		}
		return j
	}
	if i+1 < n && line[i] == '.' && line[i+1] == '.' { // \.{2,}
		j := i
		for j < n && line[j] == '.' {
			j++
		}
		return j
	}
	// (?:\.\s){2,}\. with the greedy repetition backing off.
	pairs := 0
	for i+2*pairs+1 < n && line[i+2*pairs] == '.' && isSpace(line[i+2*pairs+1]) {
		pairs++
	}
	if pairs >= 2 && i+2*pairs < n && line[i+2*pairs] == '.' {
		return i + 2*pairs + 1
	}
	if pairs >= 3 {
		return i + 2*pairs - 1
	}
	return -1
}

// wordEnds is the lookahead that ends a word token at line[j].
func wordEnds(line []rune, j int) bool {
	n := len(line)
	if j >= n || isSpace(line[j]) || isNonWord(line[j]) || multiChar(line, j) >= 0 {
		return true
	}
	if line[j] == ',' {
		k := j + 1
		return k >= n || isSpace(line[k]) || isNonWord(line[k]) || multiChar(line, k) >= 0
	}
	return false
}

// wordTokenize is PunktLanguageVars.word_tokenize: findall of
// _word_tokenize_fmt over one line.
func wordTokenize(line []rune) [][]rune {
	var toks [][]rune
	n := len(line)
	for i := 0; i < n; {
		if e := multiChar(line, i); e >= 0 {
			toks = append(toks, line[i:e])
			i = e
			continue
		}
		if isSpace(line[i]) {
			i++
			continue
		}
		if startsWord(line[i]) {
			j := i + 1
			for !wordEnds(line, j) {
				j++ // wordEnds is true at a space or the end, so j stays on \S
			}
			toks = append(toks, line[i:j])
			i = j
			continue
		}
		toks = append(toks, line[i:i+1])
		i++
	}
	return toks
}

// token is PunktToken with the annotations the tokenizer uses.
type token struct {
	tok         []rune
	typ         string // lowered, numbers as ##number##
	periodFinal bool
	sentbreak   bool
	abbr        bool
	ellipsis    bool
}

// isNumeric is _RE_NUMERIC on the whole string: -?[.,]?\d[\d,.-]*\.?
func isNumeric(s []rune) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		i++
	}
	// An optional '-' or '[.,]' that leaves no digit after it backs off,
	// but the character it took is then no digit either, so the match
	// fails the same way.
	if i >= len(s) || !isDecimal(s[i]) {
		return false
	}
	for _, r := range s[i+1:] {
		if !isDecimal(r) && r != ',' && r != '.' && r != '-' {
			return false
		}
	}
	return true
}

func newToken(tok []rune) *token {
	t := &token{tok: tok, periodFinal: tok[len(tok)-1] == '.'}
	low := []rune(lower(tok))
	if isNumeric(low) {
		t.typ = "##number##"
	} else {
		t.typ = string(low)
	}
	return t
}

func (t *token) typeNoPeriod() string {
	r := []rune(t.typ)
	if len(r) > 1 && r[len(r)-1] == '.' {
		return string(r[:len(r)-1])
	}
	return t.typ
}

func (t *token) typeNoSentPeriod() string {
	if t.sentbreak {
		return t.typeNoPeriod()
	}
	return t.typ
}

func (t *token) firstUpper() bool { return isUpper(t.tok[0]) }
func (t *token) firstLower() bool { return isLower(t.tok[0]) }

// isEllipsis is _RE_ELLIPSIS: two or more periods and nothing else.
func (t *token) isEllipsis() bool {
	if len(t.tok) < 2 {
		return false
	}
	for _, r := range t.tok {
		if r != '.' {
			return false
		}
	}
	return true
}

// isInitial is _RE_INITIAL: one letter and a period.
func (t *token) isInitial() bool {
	return len(t.tok) == 2 && isWordNonDigit(t.tok[0]) && t.tok[1] == '.'
}

// tokenizeWords is _tokenize_words: the word tokens of each non-blank
// line.
func tokenizeWords(text []rune) []*token {
	var out []*token
	start := 0
	for i := 0; i <= len(text); i++ {
		if i < len(text) && text[i] != '\n' {
			continue
		}
		line := text[start:i]
		start = i + 1
		for _, w := range wordTokenize(line) {
			out = append(out, newToken(w))
		}
	}
	return out
}

// firstPass is _first_pass_annotation.
func (z *Tokenizer) firstPass(t *token) {
	switch {
	case len(t.tok) == 1 && isSentEnd(t.tok[0]):
		t.sentbreak = true
	case t.isEllipsis():
		t.ellipsis = true
	case t.periodFinal && !(len(t.tok) >= 2 && t.tok[len(t.tok)-2] == '.'):
		stem := lower(t.tok[:len(t.tok)-1])
		last := stem
		for i := len(stem) - 1; i >= 0; i-- {
			if stem[i] == '-' {
				last = stem[i+1:]
				break
			}
		}
		if z.p.AbbrevTypes[stem] || z.p.AbbrevTypes[last] {
			t.abbr = true
		} else {
			t.sentbreak = true
		}
	}
}

// ortho is _ortho_heuristic's three answers.
type ortho int

const (
	orthoUnknown ortho = iota
	orthoStarter
	orthoNotStarter
)

// isPunctuation is membership in PunktSentenceTokenizer.PUNCTUATION.
func isPunctuation(tok []rune) bool {
	if len(tok) != 1 {
		return false
	}
	switch tok[0] {
	case ';', ':', ',', '.', '!', '?':
		return true
	}
	return false
}

// orthoHeuristic is _ortho_heuristic: does t start a sentence?
func (z *Tokenizer) orthoHeuristic(t *token) ortho {
	if isPunctuation(t.tok) {
		return orthoNotStarter
	}
	oc := z.p.OrthoContext[t.typeNoSentPeriod()]
	if t.firstUpper() && oc&orthoLC != 0 && oc&orthoMidUC == 0 {
		return orthoStarter
	}
	if t.firstLower() && (oc&orthoUC != 0 || oc&orthoBegLC == 0) {
		return orthoNotStarter
	}
	return orthoUnknown
}

// secondPass is _second_pass_annotation: it may revise t1's decision
// from the token that follows it.
func (z *Tokenizer) secondPass(t1, t2 *token) {
	if !t1.periodFinal {
		return
	}
	typ := t1.typeNoPeriod()
	nextTyp := t2.typeNoSentPeriod()
	initial := t1.isInitial()
	if z.p.Collocations[[2]string{typ, nextTyp}] {
		t1.sentbreak, t1.abbr = false, true
		return
	}
	if (t1.abbr || t1.ellipsis) && !initial {
		if z.orthoHeuristic(t2) == orthoStarter {
			t1.sentbreak = true
			return
		}
		if t2.firstUpper() && z.p.SentStarters[nextTyp] {
			t1.sentbreak = true
			return
		}
	}
	if initial || typ == "##number##" {
		h := z.orthoHeuristic(t2)
		if h == orthoNotStarter {
			t1.sentbreak, t1.abbr = false, true
			return
		}
		if h == orthoUnknown && initial && t2.firstUpper() && z.p.OrthoContext[nextTyp]&orthoLC == 0 {
			t1.sentbreak, t1.abbr = false, true
		}
	}
}

// containsSentBreak is text_contains_sentbreak: some token other than
// the last ends a sentence.
func (z *Tokenizer) containsSentBreak(text []rune) bool {
	toks := tokenizeWords(text)
	for _, t := range toks {
		z.firstPass(t)
	}
	for i := 0; i+1 < len(toks); i++ {
		z.secondPass(toks[i], toks[i+1])
		if toks[i].sentbreak {
			return true
		}
	}
	return false
}

// endContext is one match of period_context_re with the text
// _match_potential_end_contexts hands to text_contains_sentbreak.
type endContext struct {
	end     int // match.end(): just after the sentence end character
	nextTok int // match.start("next_tok"), or -1 when it did not take part
	context []rune
}

// periodContexts is period_context_re().finditer: every sentence end
// character followed by non-word punctuation, or by whitespace and a
// token.
func periodContexts(text []rune, yield func(start int, afterEnd int, nextTok int)) {
	n := len(text)
	for i := 0; i < n; i++ {
		if !isSentEnd(text[i]) || i+1 >= n {
			continue
		}
		if isNonWord(text[i+1]) {
			yield(i, i+2, -1)
			continue
		}
		if !isSpace(text[i+1]) {
			continue
		}
		j := i + 1
		for j < n && isSpace(text[j]) {
			j++
		}
		if j == n {
			continue
		}
		k := j
		for k < n && !isSpace(text[k]) {
			k++
		}
		yield(i, k, j)
	}
}

// lastWhitespace is _get_last_whitespace_index: the index of the last
// ASCII whitespace in s, 0 when there is none.
func lastWhitespace(s []rune) int {
	for i := len(s) - 1; i >= 0; i-- {
		if isASCIISpace(s[i]) {
			return i
		}
	}
	return 0
}

// endContexts is _match_potential_end_contexts: each candidate with the
// word before it, dropping candidates whose word overlaps the next one's.
func endContexts(text []rune) []endContext {
	var out []endContext
	prevStart, prevStop := 0, 0
	have := false
	var prev struct{ start, afterEnd, nextTok int }
	emit := func() {
		ctx := make([]rune, 0, prevStop-prevStart+prev.afterEnd-prev.start)
		ctx = append(ctx, text[prevStart:prevStop]...)
		ctx = append(ctx, text[prev.start:prev.afterEnd]...)
		out = append(out, endContext{end: prev.start + 1, nextTok: prev.nextTok, context: ctx})
	}
	periodContexts(text, func(start, afterEnd, nextTok int) {
		before := text[min(prevStop, start):start]
		idx := lastWhitespace(before)
		if idx != 0 {
			idx += prevStop + 1
		} else {
			idx = prevStart
		}
		if have && prevStop <= idx {
			emit()
		}
		have = true
		prev.start, prev.afterEnd, prev.nextTok = start, afterEnd, nextTok
		prevStart, prevStop = idx, start
	})
	if have {
		emit()
	}
	return out
}

// span is a Python slice of the text.
type span struct{ start, stop int }

// slicesFromText is _slices_from_text.
func (z *Tokenizer) slicesFromText(text []rune) []span {
	var out []span
	last := 0
	for _, c := range endContexts(text) {
		if z.containsSentBreak(c.context) {
			out = append(out, span{last, c.end})
			if c.nextTok >= 0 {
				last = c.nextTok
			} else {
				last = c.end
			}
		}
	}
	end := len(text)
	for end > 0 && isSpace(text[end-1]) {
		end--
	}
	return append(out, span{last, end})
}

// isCloser is a character of re_boundary_realignment's class.
func isCloser(r rune) bool {
	return r == '"' || r == '\'' || r == ')' || r == ']' || r == '}'
}

// realignMatch is re_boundary_realignment.match on s: the length of the
// closing punctuation, the end of the match, and whether it matched.
func realignMatch(s []rune) (closers, end int, ok bool) {
	for k := 1; k <= len(s) && isCloser(s[k-1]); k++ {
		switch {
		case k < len(s) && isSpace(s[k]):
			e := k
			for e < len(s) && isSpace(s[e]) {
				e++
			}
			return k, e, true
		case k+1 < len(s) && s[k] == '-' && s[k+1] == '-', k == len(s):
			return k, k, true
		}
	}
	return 0, 0, false
}

// sub is text[s:e] with Python's clamping.
func sub(text []rune, s span) []rune {
	a, b := max(0, min(s.start, len(text))), max(0, min(s.stop, len(text)))
	if a >= b {
		return nil
	}
	return text[a:b]
}

// realign is _realign_boundaries: closing quotes and brackets after a
// sentence end move into the sentence before.
func realign(text []rune, slices []span) []span {
	var out []span
	shift := 0
	for i, s1 := range slices {
		s1.start += shift
		if i+1 == len(slices) {
			if len(sub(text, s1)) > 0 {
				out = append(out, s1)
			}
			continue
		}
		s2 := slices[i+1]
		if k, e, ok := realignMatch(sub(text, s2)); ok {
			out = append(out, span{s1.start, s2.start + k})
			shift = e
		} else {
			shift = 0
			if len(sub(text, s1)) > 0 {
				out = append(out, s1)
			}
		}
	}
	return out
}

// Tokenize is PunktSentenceTokenizer.tokenize(text): the sentences of
// text, closing punctuation realigned.
func (z *Tokenizer) Tokenize(text string) []string {
	rs := []rune(text)
	var out []string
	for _, s := range realign(rs, z.slicesFromText(rs)) {
		out = append(out, string(sub(rs, s)))
	}
	return out
}
