package tasks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the answer parsing of lmms-eval v0.4.1's
// lmms_eval/tasks/mmmu/utils.py (itself taken from the MMMU repository's
// eval_utils.py): parse_multi_choice_response, parse_open_response with
// extract_numbers and normalize_str, and eval_open. Python's string
// operations are reproduced where they differ from Go's: str.strip and
// str.split treat U+001C..U+001F as whitespace, re's \d and \w are
// Unicode-aware, and the regular expressions' look-aheads and
// backtracking (which Go's regexp does not have) are written out as
// scanners that find the same non-overlapping matches re.findall does.
// Lower-casing is Go's simple case mapping; Python's full mapping differs
// for a handful of characters (U+0130 becomes two), which do not occur in
// MMMU's options.

// pyIsSpace is str.isspace for one character.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pySplit is str.split() with no argument.
func pySplit(s string) []string { return strings.FieldsFunc(s, pyIsSpace) }

// pyIsWord is re's \w on str patterns: alphanumeric or underscore.
func pyIsWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// pyIsDigit is re's \d on str patterns: a Unicode decimal digit.
func pyIsDigit(r rune) bool { return unicode.IsDigit(r) }

// mmmuMultiChoice is parse_multi_choice_response. It returns the chosen
// letter, or "" when lmms-eval falls back to random.choice(all_choices)
// (the caller draws it, in document order, from Python's generator).
func mmmuMultiChoice(response string, choices []string, index2ans map[string]string) string {
	for _, c := range []string{",", ".", "!", "?", ";", ":", "'"} {
		response = strings.Trim(response, c)
	}
	response = " " + response + " "
	indexAns, withBracket := true, false
	var cands []string
	for _, c := range choices {
		if strings.Contains(response, "("+c+")") {
			cands = append(cands, c)
			withBracket = true
		}
	}
	if len(cands) == 0 {
		for _, c := range choices {
			if strings.Contains(response, c+" ") {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		for _, c := range choices {
			if strings.Contains(response, c+".") {
				cands = append(cands, c)
			}
		}
	}
	lower := strings.ToLower(response)
	if len(cands) == 0 && len(pySplit(response)) > 5 {
		for _, c := range choices { // index2ans is filled in letter order
			if strings.Contains(lower, strings.ToLower(index2ans[c])) {
				cands = append(cands, c)
				indexAns = false
			}
		}
	}
	switch len(cands) {
	case 0:
		return ""
	case 1:
		return cands[0]
	}
	// Several candidates: the one whose mark starts last wins (np.argmax
	// keeps the first of equal positions). Byte offsets order the same
	// way as Python's character offsets.
	best, bestAt := 0, math.MinInt
	for i, c := range cands {
		var at int
		switch {
		case indexAns && withBracket:
			at = strings.LastIndex(response, "("+c+")")
		case indexAns:
			at = strings.LastIndex(response, " "+c+" ")
		default:
			at = strings.LastIndex(lower, strings.ToLower(index2ans[c]))
		}
		if at > bestAt {
			best, bestAt = i, at
		}
	}
	return cands[best]
}

// openValue is one normalised prediction or gold answer: a number rounded
// to two decimals, or lower-case text.
type openValue struct {
	isNum bool
	num   float64
	text  string
}

// pyFloat is Python's float() on text: surrounding whitespace, a sign,
// digits with single underscores between them, a decimal point, an
// exponent, or inf, infinity and nan in any case. Hexadecimal and other
// forms Go accepts but Python does not are refused.
func pyFloat(s string) (float64, bool) {
	s = asciiDigits(pyStrip(s))
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	var clean strings.Builder
	digits, prevDigit := false, false
	seenDot, seenExp := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= '0' && c <= '9':
			digits, prevDigit = true, true
		case c == '_':
			if !prevDigit || i+1 >= len(body) || body[i+1] < '0' || body[i+1] > '9' {
				return 0, false
			}
			prevDigit = false
			continue
		case c == '.' && !seenDot && !seenExp:
			seenDot, prevDigit = true, false
		case (c == 'e' || c == 'E') && digits && !seenExp:
			seenExp, prevDigit = true, false
			clean.WriteByte(c)
			if i+1 < len(body) && (body[i+1] == '+' || body[i+1] == '-') {
				i++
				clean.WriteByte(body[i])
			}
			if i+1 >= len(body) || body[i+1] < '0' || body[i+1] > '9' {
				return 0, false
			}
			continue
		default:
			return 0, false
		}
		clean.WriteByte(c)
	}
	if !digits {
		return 0, false
	}
	f, err := strconv.ParseFloat(s[:len(s)-len(body)]+clean.String(), 64)
	if err != nil {
		// Out of range: Python gives inf, as ParseFloat's value does.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// asciiDigits writes Unicode decimal digits as ASCII ones, as Python's
// float() reads them. Every run of decimal digits in Unicode is a whole
// number of 0-9 sequences, so a digit's value is its distance from the
// start of its run, modulo 10.
func asciiDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= 0x7f || !unicode.IsDigit(r) {
			return r
		}
		n := 0
		for unicode.IsDigit(r-rune(n)-1) && r-rune(n)-1 > 0x7f {
			n++
		}
		return '0' + rune(n%10)
	}, s)
}

// pyRound2 is round(x, 2): the value correctly rounded to two decimals,
// ties to even on the exact binary value, as CPython rounds.
func pyRound2(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return r
}

// mmmuNormalize is normalize_str: a number (commas removed) rounded to two
// decimals, else lower-case text, a single character padded with a space
// on either side as two alternatives.
func mmmuNormalize(s string) []openValue {
	s = pyStrip(s)
	if f, ok := pyFloat(strings.ReplaceAll(s, ",", "")); ok {
		return []openValue{{isNum: true, num: pyRound2(f)}}
	}
	s = strings.ToLower(s)
	if utf8.RuneCountInString(s) == 1 {
		return []openValue{{text: " " + s}, {text: s + " "}}
	}
	return []openValue{{text: s}}
}

// mmmuKeyIndicators are get_key_subresponses' markers of an answer.
var mmmuKeyIndicators = []string{"could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result "}

// mmmuKeySubresponses is parse_open_response's get_key_subresponses. The
// split pattern \.\s(?=[A-Z])|\n applies to lower-cased text, where
// [A-Z] never matches, so only newlines split it.
func mmmuKeySubresponses(response string) []string {
	response = strings.ToLower(strings.Trim(pyStrip(response), "."))
	subs := strings.Split(response, "\n")
	var keys []string
	for i, resp := range subs {
		indicators := mmmuKeyIndicators
		if i == len(subs)-1 {
			indicators = append(indicators[:len(indicators):len(indicators)], "=")
		}
		shortest := "" // Python's None and "" are both "not found yet"
		for _, ind := range indicators {
			if !strings.Contains(resp, ind) {
				continue
			}
			parts := strings.Split(resp, ind)
			tail := pyStrip(parts[len(parts)-1])
			if shortest == "" || utf8.RuneCountInString(tail) < utf8.RuneCountInString(shortest) {
				shortest = tail
			}
		}
		if shortest != "" {
			switch pyStrip(shortest) {
			case ":", ",", ".", "!", "?", ";", "'":
			default:
				keys = append(keys, shortest)
			}
		}
	}
	if len(keys) == 0 {
		return []string{response}
	}
	return keys
}

// mmmuOpenResponse is parse_open_response: the key sub-responses and the
// numbers in them, normalised, duplicates removed. Python returns a set
// converted to a list, whose order depends on string hashing; this keeps
// first-seen order (see mmmuOpenCorrect for why the order cannot change a
// score).
func mmmuOpenResponse(response string) []openValue {
	keys := mmmuKeySubresponses(response)
	preds := append([]string(nil), keys...)
	for _, k := range keys {
		preds = append(preds, mmmuExtractNumbers(k)...)
	}
	var out []openValue
	seen := map[openValue]bool{}
	for _, p := range preds {
		for _, v := range mmmuNormalize(p) {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// pyStr is str() of a parsed prediction (a float as Python's repr, text
// as itself).
func (v openValue) pyStr() string {
	if !v.isNum {
		return v.text
	}
	switch {
	case math.IsNaN(v.num):
		return "nan"
	case math.IsInf(v.num, 1):
		return "inf"
	case math.IsInf(v.num, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v.num, 'g', -1, 64)
	if a := math.Abs(v.num); a >= 1e16 || (a != 0 && a < 1e-4) {
		// repr's exponent form: 1e+16, 1.5e-05.
		m, e, _ := strings.Cut(strconv.FormatFloat(v.num, 'e', -1, 64), "e")
		return m + "e" + e[:1] + strings.TrimLeft(e[1:], "0")
	}
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// mmmuOpenCorrect is how mmmu_process_results and evaluate_mmmu score an
// open question in lmms-eval v0.4.1. process_results keeps only
// str(parse_open_response(pred)[0]) and evaluate_mmmu hands that string
// to eval_open, which iterates over it: each prediction eval_open sees is
// one character, matched against the normalised gold answers. A numeric
// gold answer is a float and never matches a character; a text gold of
// two or more characters (single characters are padded to two) is never
// inside one character; only a gold answer that normalises to "" matches,
// and then as soon as the prediction has a character. So open questions
// score 0 unless their gold answer is blank, whichever element Python's
// set yields first (all elements are non-empty unless the only one is
// ""). The code below performs the same steps rather than this shortcut.
func mmmuOpenCorrect(gold, response string) bool {
	var first string
	if preds := mmmuOpenResponse(response); len(preds) > 0 {
		first = preds[0].pyStr()
	}
	golds := mmmuNormalize(gold)
	for _, ch := range first {
		for _, g := range golds {
			if !g.isNum && strings.Contains(string(ch), g.text) {
				return true
			}
		}
	}
	return false
}

// mmmuExtractNumbers is extract_numbers: re.findall of the comma pattern
// -?\b\d{1,3}(?:,\d{3})+\b, then of the scientific pattern
// -?\d+(?:\.\d+)?[eE][+-]?\d+, then of the simple pattern
// -?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d]).
func mmmuExtractNumbers(s string) []string {
	rs := []rune(s)
	var out []string
	for _, match := range []func([]rune, int) int{matchCommaNumber, matchScientific, matchSimpleNumber} {
		for i := 0; i < len(rs); {
			if end := match(rs, i); end > i {
				out = append(out, string(rs[i:end]))
				i = end
				continue
			}
			i++
		}
	}
	return out
}

func isDigitAt(rs []rune, i int) bool { return i >= 0 && i < len(rs) && pyIsDigit(rs[i]) }
func isWordAt(rs []rune, i int) bool  { return i >= 0 && i < len(rs) && pyIsWord(rs[i]) }

// wordBoundary is re's \b at position i.
func wordBoundary(rs []rune, i int) bool { return isWordAt(rs, i-1) != isWordAt(rs, i) }

// digitRun is the end of the run of digits starting at i.
func digitRun(rs []rune, i int) int {
	for isDigitAt(rs, i) {
		i++
	}
	return i
}

// withSign tries body at i, first after a leading '-' (the greedy -?),
// then without; it returns the match end or -1.
func withSign(rs []rune, i int, body func(int) int) int {
	if i < len(rs) && rs[i] == '-' {
		if end := body(i + 1); end >= 0 {
			return end
		}
	}
	return body(i)
}

// matchCommaNumber matches -?\b\d{1,3}(?:,\d{3})+\b at i (end, or -1).
func matchCommaNumber(rs []rune, i int) int {
	return withSign(rs, i, func(p int) int {
		if !wordBoundary(rs, p) {
			return -1
		}
		run := digitRun(rs, p)
		// \d{1,3} must reach the first comma: a shorter take leaves a
		// digit where the comma must be.
		if n := run - p; n < 1 || n > 3 {
			return -1
		}
		// Groups of a comma and exactly three digits, as many as there
		// are; then back off until \b holds after the last one.
		var ends []int
		q := run
		for q < len(rs) && rs[q] == ',' && isDigitAt(rs, q+1) && isDigitAt(rs, q+2) && isDigitAt(rs, q+3) {
			q += 4
			ends = append(ends, q)
		}
		for k := len(ends) - 1; k >= 0; k-- {
			if wordBoundary(rs, ends[k]) {
				return ends[k]
			}
		}
		return -1
	})
}

// matchScientific matches -?\d+(?:\.\d+)?[eE][+-]?\d+ at i. Every
// quantifier here is forced to take its whole digit run (a shorter take
// leaves a digit where a '.', 'e' or the end must be).
func matchScientific(rs []rune, i int) int {
	return withSign(rs, i, func(p int) int {
		q := digitRun(rs, p)
		if q == p {
			return -1
		}
		if q < len(rs) && rs[q] == '.' && isDigitAt(rs, q+1) {
			q = digitRun(rs, q+1)
		}
		return exponentEnd(rs, q)
	})
}

// exponentEnd matches [eE][+-]?\d+ at q (end, or -1).
func exponentEnd(rs []rune, q int) int {
	if q >= len(rs) || (rs[q] != 'e' && rs[q] != 'E') {
		return -1
	}
	q++
	if q < len(rs) && (rs[q] == '+' || rs[q] == '-') && isDigitAt(rs, q+1) {
		q++
	}
	if !isDigitAt(rs, q) {
		return -1
	}
	return digitRun(rs, q)
}

// matchSimpleNumber matches -?(?:\d+\.\d+|\.\d+|\d+\b) followed by
// neither an exponent nor a comma or digit, trying the alternatives in
// order as re does.
func matchSimpleNumber(rs []rune, i int) int {
	free := func(q int) bool {
		if exponentEnd(rs, q) >= 0 {
			return false
		}
		return q >= len(rs) || (rs[q] != ',' && !pyIsDigit(rs[q]))
	}
	return withSign(rs, i, func(p int) int {
		// \d+\.\d+: a shorter take of either run leaves a digit next,
		// which the look-ahead refuses, so only the whole runs can match.
		if q := digitRun(rs, p); q > p && q < len(rs) && rs[q] == '.' && isDigitAt(rs, q+1) {
			if e := digitRun(rs, q+1); free(e) {
				return e
			}
		}
		if p < len(rs) && rs[p] == '.' && isDigitAt(rs, p+1) {
			if e := digitRun(rs, p+1); free(e) {
				return e
			}
		}
		if q := digitRun(rs, p); q > p && wordBoundary(rs, q) && free(q) {
			return q
		}
		return -1
	})
}

// pyListOfStrings is ast.literal_eval of MMMU's options column, a Python
// list of string literals ("['$6', '$7']"): single- or double-quoted,
// with Python's backslash escapes, adjacent literals concatenated.
func pyListOfStrings(s string) ([]string, error) {
	p := pyLiteral{s: s}
	p.space()
	if !p.eat('[') {
		return nil, fmt.Errorf("options %q: want a Python list of strings, like ['a', 'b']", clipText(s))
	}
	var out []string
	for {
		p.space()
		if p.eat(']') {
			break
		}
		if len(out) > 0 {
			if !p.eat(',') {
				return nil, fmt.Errorf("options %q: want ',' or ']' at offset %d", clipText(s), p.i)
			}
			p.space()
			if p.eat(']') { // a trailing comma
				break
			}
		}
		str, err := p.stringLiteral()
		if err != nil {
			return nil, fmt.Errorf("options %q: %w", clipText(s), err)
		}
		out = append(out, str)
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("options %q: text after the list at offset %d", clipText(s), p.i)
	}
	return out, nil
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

type pyLiteral struct {
	s string
	i int
}

func (p *pyLiteral) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r\f\v", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyLiteral) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// stringLiteral reads one or more adjacent string literals.
func (p *pyLiteral) stringLiteral() (string, error) {
	var b strings.Builder
	n := 0
	for {
		p.space()
		if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
			if n == 0 {
				return "", fmt.Errorf("want a quoted string at offset %d", p.i)
			}
			return b.String(), nil
		}
		if err := p.oneLiteral(&b); err != nil {
			return "", err
		}
		n++
	}
}

func (p *pyLiteral) oneLiteral(b *strings.Builder) error {
	q := p.s[p.i]
	start := p.i
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return nil
		case c == '\n':
			return fmt.Errorf("line break inside the string at offset %d", start)
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			break
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+n > len(p.s) {
				return fmt.Errorf("truncated \\%c escape at offset %d", e, p.i-2)
			}
			v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return fmt.Errorf("bad \\%c escape at offset %d", e, p.i-2)
			}
			b.WriteRune(rune(v))
			p.i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
				v = v*8 + int(p.s[p.i]-'0')
				p.i++
			}
			b.WriteRune(rune(v))
		default: // Python keeps an unknown escape as written
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return fmt.Errorf("unterminated string starting at offset %d", start)
}
