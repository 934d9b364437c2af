// Package r1grade grades the answers of the "r1" reasoning tasks of
// tt-inference-server's lm-evaluation-harness fork (r1_gpqa_diamond): it
// drops the reasoning up to "</think>", extracts the final answer (the
// \boxed{...} content, the text after "the answer is", or the last
// number), normalises it the way the fork's strip_answer_string does
// (itself taken from evalscope's math parser), and reduces a multiple-
// choice answer to its last standalone letter A-E.
//
// The behaviour was re-implemented from the fork's utils.py, including its
// quirks (number words become digits through the word2number rules, so
// "one" grades as "1"; spaces are removed, so "A or B" is no letter), and
// is checked against that code in the tests.
package r1grade

import (
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dlclark/regexp2"
)

// matchTimeout bounds one regex evaluation on a model's answer.
const matchTimeout = 2 * time.Second

func mustCompile(p string) *regexp2.Regexp {
	re := regexp2.MustCompile(p, regexp2.None)
	re.MatchTimeout = matchTimeout
	return re
}

var (
	thinkRe      = mustCompile(`(?s).*?</think>(\\n)*`)
	arrayBeginRe = mustCompile(`\\begin\{array\}\{.*?\}`)
	arrayEndRe   = mustCompile(`\\end\{array\}`)
	textWordRe   = mustCompile(`\\text\{([a-zA-Z]+)\}`)
	squaredRe    = mustCompile(`(cm|inches)\}\^2`)
	unitRe       = mustCompile(`\\text\{.*?\}$`)
	textRe       = mustCompile(`\\text\{(.*?)\}`)
	mboxRe       = mustCompile(`\\mbox\{.*?\}`)
	zerosMidRe   = mustCompile(`(\d+)\.0*([^\d])`)
	zerosEndRe   = mustCompile(`(\d+)\.0*$`)
	sqrtRe       = mustCompile(`\\sqrt(\w+)`)
	backslashRe  = mustCompile(`\\(?=\-?\d+(\\|\)|,|\]|$))`)
	gradeRe      = mustCompile(`thgrade$`)
	intListRe    = mustCompile(`^(\s*-?\d+\s*,)*\s*-?\d+\s*$`)
	lastNumberRe = mustCompile(`-?\d*\.?\d+`)
	newlineRe    = mustCompile(`\n\s*`)
	choiceRe     = mustCompile(`\b(A|B|C|D|E)\b`)
)

// replace is re.sub; a match timeout leaves s unchanged, as a pathological
// answer must not abort grading.
func replace(re *regexp2.Regexp, s, with string) string {
	out, err := re.Replace(s, with, -1, -1)
	if err != nil {
		return s
	}
	return out
}

func findAll(re *regexp2.Regexp, s string, group int) []string {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.GroupByNumber(group).String())
	}
	return out
}

// StripThink removes every span up to and including "</think>" (and the
// literal "\n" sequences after it), then surrounding whitespace.
func StripThink(output string) string {
	return strings.TrimSpace(replace(thinkRe, output, ""))
}

// Candidate is the graded form of a model's response to a multiple-choice
// question: reasoning dropped, answer extracted and normalised, reduced to
// a letter when it has one.
func Candidate(output string) string {
	return ChoiceClean(StripAnswer(ExtractAnswer(StripThink(output))))
}

// Gold is the graded form of a reference answer such as "(B)".
func Gold(answer string) string { return ChoiceClean(StripAnswer(answer)) }

// Score is 1 when the candidate is non-empty and equals the gold after
// trimming, else 0 (the fork's exact_match_fn).
func Score(gold, candidate string) float64 {
	if candidate == "" {
		return 0
	}
	if strings.TrimSpace(gold) == strings.TrimSpace(candidate) {
		return 1
	}
	return 0
}

// ExtractAnswer finds the final answer in a response: Minerva's "final
// answer is $...$. I hope", the last \boxed{...} (braces balanced),
// the text after the last "he answer is" or "final answer is", the text
// after "答案是", or else the last number; the result is normalised.
func ExtractAnswer(s string) string {
	s = strings.ReplaceAll(s, "\u043a\u0438", "")
	var pred string
	switch {
	case strings.Contains(s, "final answer is $") && strings.Contains(s, "$. I hope"):
		tmp := strings.SplitN(s, "final answer is $", 2)[1]
		pred = strings.TrimSpace(strings.SplitN(tmp, "$. I hope", 2)[0])
	case strings.Contains(s, "boxed"):
		parts := strings.Split(s, "boxed")
		ans := parts[len(parts)-1]
		if ans == "" {
			return ""
		}
		if ans[0] == '{' {
			depth := 1
			var a strings.Builder
			for _, c := range ans[1:] {
				if c == '{' {
					depth++
				} else if c == '}' {
					depth--
					if depth == 0 {
						break
					}
				}
				a.WriteRune(c)
			}
			pred = a.String()
		} else {
			pred = strings.TrimSpace(strings.SplitN(ans, "$", 2)[0])
		}
	case strings.Contains(s, "he answer is"):
		parts := strings.Split(s, "he answer is")
		pred = strings.TrimSpace(parts[len(parts)-1])
	case strings.Contains(s, "final answer is"):
		parts := strings.Split(s, "final answer is")
		pred = strings.TrimSpace(parts[len(parts)-1])
	case strings.Contains(s, "答案是"):
		after := strings.TrimSpace(strings.Split(s, "答案是")[1])
		pred = strings.TrimSpace(strings.SplitN(after, "\n\n", 2)[0])
	default:
		nums := findAll(lastNumberRe, strings.ReplaceAll(s, ",", ""), 0)
		if len(nums) > 0 {
			pred = nums[len(nums)-1]
		}
	}
	pred = replace(newlineRe, pred, "")
	pred = strings.TrimPrefix(pred, ":")
	pred = strings.TrimSuffix(pred, ".")
	pred = strings.TrimSuffix(pred, "/")
	return StripAnswer(pred)
}

// ChoiceClean reduces an answer to its last standalone letter A-E (case
// folded), or else to the answer without surrounding dots.
func ChoiceClean(pred string) string {
	pred = strings.Trim(pred, "\n")
	pred = strings.TrimRight(pred, ".")
	pred = strings.TrimRight(pred, "/")
	pred = strings.Trim(pred, " ")
	pred = strings.TrimLeft(pred, ":")
	if letters := findAll(choiceRe, strings.ToUpper(pred), 1); len(letters) > 0 {
		pred = letters[len(letters)-1]
	} else {
		pred = strings.Trim(pythonStrip(pred), ".")
	}
	pred = strings.TrimRight(pred, ".")
	return strings.TrimRight(pred, "/")
}

// pythonStrip is str.strip() with no argument (Unicode whitespace).
func pythonStrip(s string) string { return strings.TrimFunc(s, unicode.IsSpace) }

// StripAnswer is the fork's strip_answer_string: LaTeX and formatting
// normalisation of an extracted answer.
func StripAnswer(s string) string {
	s = pythonStrip(s)
	s = strings.ReplaceAll(s, "\n", "")
	s = strings.TrimRight(s, ".")
	s = strings.ReplaceAll(s, `\!`, "")
	s = replace(arrayBeginRe, s, `\begin{pmatrix}`)
	s = replace(arrayEndRe, s, `\end{pmatrix}`)
	s = strings.ReplaceAll(s, "bmatrix", "pmatrix")
	s = strings.ReplaceAll(s, "tfrac", "frac")
	s = strings.ReplaceAll(s, "dfrac", "frac")
	s = strings.ReplaceAll(s, `\neq`, `\ne`)
	s = strings.ReplaceAll(s, `\leq`, `\le`)
	s = strings.ReplaceAll(s, `\geq`, `\ge`)
	s = strings.ReplaceAll(s, `\left`, "")
	s = strings.ReplaceAll(s, `\right`, "")
	s = strings.ReplaceAll(s, `\{`, "{")
	s = strings.ReplaceAll(s, `\}`, "}")
	if out, err := textWordRe.ReplaceFunc(s, func(m regexp2.Match) string {
		word := strings.ToLower(m.GroupByNumber(1).String())
		if n, ok := WordToNumber(word); ok {
			return n
		}
		return m.String()
	}, -1, -1); err == nil {
		s = out
	}
	s = replace(squaredRe, s, "$1}")
	if stripped := pythonStrip(replace(unitRe, s, "")); stripped != "" && stripped != s {
		s = stripped
	}
	s = strings.ReplaceAll(s, `^{\circ}`, "")
	s = strings.ReplaceAll(s, `^\circ`, "")
	s = strings.ReplaceAll(s, `\$`, "")
	s = strings.ReplaceAll(s, "$", "")
	s = strings.ReplaceAll(s, `\(`, "")
	s = strings.ReplaceAll(s, `\)`, "")
	if n, ok := WordToNumber(s); ok {
		s = n
	}
	s = replace(textRe, s, "$1")
	for _, key := range []string{"x=", "y=", "z=", `x\in`, `y\in`, `z\in`, `x\to`, `y\to`, `z\to`} {
		s = strings.ReplaceAll(s, key, "")
	}
	s = strings.ReplaceAll(s, `\emptyset`, "{}")
	s = strings.ReplaceAll(s, `(-\infty,\infty)`, `\mathbb{R}`)
	s = strings.ReplaceAll(s, `\%`, "")
	s = strings.ReplaceAll(s, "%", "")
	s = strings.ReplaceAll(s, " .", " 0.")
	s = strings.ReplaceAll(s, "{.", "{0.")
	// The fork's unwrapping of "{x}", "(x)" and "[x]" also requires the
	// whole string, brackets included, to be alphanumeric, so it never
	// applies and is left out.
	s = strings.ReplaceAll(s, "infinity", `\infty`)
	if !strings.Contains(s, `\infty`) {
		s = strings.ReplaceAll(s, "inf", `\infty`)
	}
	s = strings.ReplaceAll(s, `+\inity`, `\infty`)
	s = strings.ReplaceAll(s, "and", "")
	s = strings.ReplaceAll(s, `\mathbf`, "")
	s = replace(mboxRe, s, "")
	if strings.Contains(s, "j") && !strings.Contains(s, "i") {
		s = strings.ReplaceAll(s, "j", "i")
	}
	s = replace(zerosMidRe, s, "$1$2")
	s = replace(zerosEndRe, s, "$1")
	if s == "" {
		return s
	}
	if s[0] == '.' {
		s = "0" + s
	}
	if parts := strings.Split(s, "="); len(parts) == 2 && len([]rune(parts[0])) <= 2 {
		s = parts[1]
	}
	s = replace(sqrtRe, s, `\sqrt{$1}`)
	s = strings.ReplaceAll(s, " ", "")
	s = fixFracs(s)
	s = fixSlash(s)
	s = replace(backslashRe, s, "")
	s = replace(gradeRe, s, "")
	if ok, _ := intListRe.MatchString(s); ok {
		s = sortIntList(s)
	}
	return s
}

// fixFracs turns "\frac12" into "\frac{1}{2}" and "\frac1{2}" into
// "\frac{1}{2}"; a "\frac" followed by fewer than two characters leaves
// the whole string unchanged.
func fixFracs(s string) string {
	subs := strings.Split(s, `\frac`)
	var b strings.Builder
	b.WriteString(subs[0])
	for _, sub := range subs[1:] {
		b.WriteString(`\frac`)
		r := []rune(sub)
		if len(r) > 0 && r[0] == '{' {
			b.WriteString(sub)
			continue
		}
		if len(r) < 2 {
			return s
		}
		a, c, rest := string(r[0]), string(r[1]), string(r[2:])
		if c != "{" {
			b.WriteString("{" + a + "}{" + c + "}" + rest)
		} else {
			b.WriteString("{" + a + "}" + c + rest)
		}
	}
	return b.String()
}

// canonicalInt reports whether s is what Python's str(int(s)) gives back
// (optional minus, no leading zeros, ASCII digits).
func canonicalInt(s string) bool {
	t := strings.TrimPrefix(s, "-")
	if t == "" || (len(t) > 1 && t[0] == '0') || s == "-0" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// fixSlash turns "a/b" into "\frac{a}{b}" when both sides are integers
// written canonically or contain "sqrt".
func fixSlash(s string) string {
	parts := strings.Split(s, "/")
	if len(parts) != 2 {
		return s
	}
	for _, p := range parts {
		if !strings.Contains(p, "sqrt") && !canonicalInt(p) {
			return s
		}
	}
	return `\frac{` + parts[0] + "}{" + parts[1] + "}"
}

// sortIntList sorts a comma-separated list of integers ascending.
func sortIntList(s string) string {
	parts := strings.Split(s, ",")
	nums := make([]*big.Int, len(parts))
	for i, p := range parts {
		n, ok := pythonInt(p)
		if !ok {
			return "-1,-1" // int() failing makes the fork sort [-1, -1]
		}
		nums[i] = n
	}
	sort.SliceStable(nums, func(i, j int) bool { return nums[i].Cmp(nums[j]) < 0 })
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = n.String()
	}
	return strings.Join(out, ",")
}

// pythonInt is int(s) for a decimal integer: surrounding whitespace,
// a sign and any Unicode decimal digits are accepted.
func pythonInt(s string) (*big.Int, bool) {
	s = pythonStrip(s)
	neg := false
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return nil, false
	}
	var digits strings.Builder
	for _, r := range s {
		d, ok := digitValue(r)
		if !ok {
			return nil, false
		}
		digits.WriteByte(byte('0' + d))
	}
	n, ok := new(big.Int).SetString(digits.String(), 10)
	if ok && neg {
		n.Neg(n)
	}
	return n, ok
}

// digitValue is the value of a Unicode decimal digit (category Nd, which
// come in runs of ten starting at zero).
func digitValue(r rune) (int, bool) {
	if !unicode.IsDigit(r) {
		return 0, false
	}
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	zero := r
	for zero > 0 && unicode.IsDigit(zero-1) && r-zero < 9 {
		zero--
	}
	return int(r - zero), true
}

// numberWords are word2number's American number words.
var numberWords = map[string]int64{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
	"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
	"seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
	"sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
	"million": 1000000, "billion": 1000000000,
}

// WordToNumber converts text the way word2number 1.1's word_to_num does
// and formats the result as Python's str() would; ok is false where
// word_to_num raises (no number words, repeated scale words, malformed
// order), in which case callers keep the text. Words that are not number
// words are skipped, so "option one" is "1".
func WordToNumber(text string) (string, bool) {
	s := strings.ToLower(strings.ReplaceAll(text, "-", " "))
	if s != "" && allDigits(s) {
		n, ok := pythonInt(s)
		if !ok {
			return "", false
		}
		return n.String(), true
	}
	var words []string
	for _, w := range strings.Fields(s) {
		if _, ok := numberWords[w]; ok || w == "point" {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return "", false
	}
	count := func(ws []string, w string) int {
		n := 0
		for _, x := range ws {
			if x == w {
				n++
			}
		}
		return n
	}
	for _, w := range []string{"thousand", "million", "billion", "point"} {
		if count(words, w) > 1 {
			return "", false
		}
	}
	var decimals []string
	for i, w := range words {
		if w == "point" {
			decimals = words[i+1:]
			words = words[:i]
			break
		}
	}
	index := func(w string) int {
		for i, x := range words {
			if x == w {
				return i
			}
		}
		return -1
	}
	bi, mi, ti := index("billion"), index("million"), index("thousand")
	if (ti > -1 && (ti < mi || ti < bi)) || (mi > -1 && mi < bi) {
		return "", false
	}
	var total int64
	failed := false
	form := func(ws []string) int64 {
		if len(ws) == 0 {
			failed = true // IndexError in number_formation
			return 0
		}
		n := make([]int64, len(ws))
		for i, w := range ws {
			n[i] = numberWords[w]
		}
		switch len(n) {
		case 4:
			return n[0]*n[1] + n[2] + n[3]
		case 3:
			return n[0]*n[1] + n[2]
		case 2:
			if n[0] == 100 || n[1] == 100 {
				return n[0] * n[1]
			}
			return n[0] + n[1]
		default:
			return n[0]
		}
	}
	last := len(words) - 1
	switch {
	case len(words) == 1:
		total = numberWords[words[0]]
	case len(words) > 1:
		if bi > -1 {
			total += form(words[:bi]) * 1000000000
		}
		if mi > -1 {
			if bi > -1 {
				total += form(words[bi+1:mi]) * 1000000
			} else {
				total += form(words[:mi]) * 1000000
			}
		}
		if ti > -1 {
			switch {
			case mi > -1:
				total += form(words[mi+1:ti]) * 1000
			case bi > -1:
				total += form(words[bi+1:ti]) * 1000
			default:
				total += form(words[:ti]) * 1000
			}
		}
		switch {
		case ti > -1 && ti != last:
			total += form(words[ti+1:])
		case mi > -1 && mi != last && ti != last:
			total += form(words[mi+1:])
		case bi > -1 && bi != last:
			total += form(words[bi+1:])
		case ti == -1 && mi == -1 && bi == -1:
			total += form(words)
		}
	}
	if failed {
		return "", false
	}
	if len(decimals) == 0 {
		return strconv.FormatInt(total, 10), true
	}
	var frac strings.Builder
	for _, w := range decimals {
		v, ok := numberWords[w]
		if !ok || v > 9 {
			// get_decimal_sum gives the integer 0 for a non-digit word.
			return strconv.FormatInt(total, 10), true
		}
		frac.WriteByte(byte('0' + v))
	}
	f, err := strconv.ParseFloat("0."+frac.String(), 64)
	if err != nil {
		return "", false
	}
	return pythonFloat(float64(total) + f), true
}

// allDigits is str.isdigit restricted to decimal digits: other Unicode
// digits (superscripts) make int() fail, which word_to_num reports as an
// error, and so does the word path for them, so the outcome is the same.
func allDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// pythonFloat formats f as Python's repr(float): the shortest round-trip
// digits, with ".0" for integral values and exponents outside 1e-4..1e16.
func pythonFloat(f float64) string {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64) // Go and Python both write e-05, e+16
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
