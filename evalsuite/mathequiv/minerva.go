package mathequiv

import (
	"regexp"
	"strconv"
	"strings"
)

// This file holds the answer extraction and normalisation of lm-eval's
// MATH tasks, character for character: lm_eval/tasks/leaderboard/math/
// utils.py (itself from Minerva, Lewkowycz et al. 2022, appendix D), which
// llama-cookbook's meta_eval math_hard/utils.py copies, and the
// hendrycks_math strip_string of lm_eval/tasks/aime/utils.py.

// InvalidAnswer is lm-eval's marker for an answer it could not extract.
const InvalidAnswer = "[invalidanswer]"

// LastBoxedOnlyString is lm-eval's last_boxed_only_string: the last
// "\boxed{...}" (braces balanced) or "\fbox{...}", or "\boxed " and what
// follows it up to a "$". ok is false where Python returns None (or
// INVALID_ANSWER in the leaderboard copy).
func LastBoxedOnlyString(s string) (string, bool) {
	idx := strings.LastIndex(s, `\boxed`)
	if strings.Contains(s, `\boxed `) {
		parts := strings.Split(s, `\boxed `)
		return `\boxed ` + strings.SplitN(parts[len(parts)-1], "$", 2)[0], true
	}
	if idx < 0 {
		idx = strings.LastIndex(s, `\fbox`)
		if idx < 0 {
			return "", false
		}
	}
	open := 0
	for i := idx; i < len(s); i++ {
		switch s[i] {
		case '{':
			open++
		case '}':
			open--
			if open == 0 {
				return s[idx : i+1], true
			}
		}
	}
	return "", false
}

// RemoveBoxed is lm-eval's remove_boxed: the content of "\boxed{...}" or
// what follows "\boxed "; ok is false where Python's assertions fail
// (including for "\fbox{...}", which it does not unwrap).
func RemoveBoxed(s string) (string, bool) {
	if strings.Contains(s, `\boxed `) {
		if !strings.HasPrefix(s, `\boxed `) {
			return "", false
		}
		return s[len(`\boxed `):], true
	}
	if !strings.HasPrefix(s, `\boxed{`) || !strings.HasSuffix(s, "}") {
		return "", false
	}
	return s[len(`\boxed{`) : len(s)-1], true
}

// BoxedAnswer is remove_boxed(last_boxed_only_string(s)) with the
// leaderboard copy's INVALID_ANSWER for a missing or malformed box.
func BoxedAnswer(s string) string {
	b, ok := LastBoxedOnlyString(s)
	if !ok {
		return InvalidAnswer
	}
	a, ok := RemoveBoxed(b)
	if !ok {
		return InvalidAnswer
	}
	return a
}

var finalAnswerRe = regexp.MustCompile(`Final Answer: The final answer is(.*?). I hope it is correct.`)

// UnnormalizedAnswer is lm-eval's get_unnormalized_answer: the text
// between "Final Answer: The final answer is" and ". I hope it is
// correct." (which is appended once, so an answer cut off before it still
// matches), or InvalidAnswer.
func UnnormalizedAnswer(text string) string {
	m := finalAnswerRe.FindStringSubmatch(text + "I hope it is correct.")
	if m == nil {
		return InvalidAnswer
	}
	return strings.TrimSpace(m[1])
}

var substitutions = [][2]string{
	{"an ", ""}, {"a ", ""}, {".$", "$"}, {`\$`, ""}, {`\ `, ""}, {" ", ""}, {"mbox", "text"},
	{`,\text{and}`, ","}, {`\text{and}`, ","}, {`\text{m}`, `\text{}`},
}

var removedExpressions = []string{
	"square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units", `\ldots`, "sue",
	"points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals",
	"edges", "students", "childrentickets", "multiples", `\text{s}`, `\text{.}`, "\\text{\ns}", `\text{}^2`,
	`\text{}^3`, "\\text{\n}", `\text{}`, `\mathrm{th}`, `^\circ`, `^{\circ}`, `\;`, `,\!`, "{,}", `"`, `\dots`,
}

var (
	dollarRe   = regexp.MustCompile(`(.*?)(\$)(.*?)(\$)(.*)`)
	textRe     = regexp.MustCompile(`(\\text\{)(.*?)(\})`)
	textbfRe   = regexp.MustCompile(`(\\textbf\{)(.*?)(\})`)
	overlineRe = regexp.MustCompile(`(\\overline\{)(.*?)(\})`)
	boxedRe    = regexp.MustCompile(`(\\boxed\{)(.*)(\})`)
	fracRe     = regexp.MustCompile(`(frac)([^{])(.)`)
	sqrtRe     = regexp.MustCompile(`(sqrt)([^{])`)
)

// NormalizeFinalAnswer is lm-eval's normalize_final_answer (Minerva's).
func NormalizeFinalAnswer(s string) string {
	parts := strings.Split(s, "=")
	s = parts[len(parts)-1]
	for _, sub := range substitutions {
		s = strings.ReplaceAll(s, sub[0], sub[1])
	}
	for _, e := range removedExpressions {
		s = strings.ReplaceAll(s, e, "")
	}
	s = dollarRe.ReplaceAllString(s, "$$${3}$$")
	s = textRe.ReplaceAllString(s, "${2}")
	s = textbfRe.ReplaceAllString(s, "${2}")
	s = overlineRe.ReplaceAllString(s, "${2}")
	s = boxedRe.ReplaceAllString(s, "${2}")
	s = fracRe.ReplaceAllString(s, "frac{${2}}{${3}}")
	s = sqrtRe.ReplaceAllString(s, "sqrt{${2}}")
	s = strings.ReplaceAll(s, "$", "")
	if isDigits(strings.ReplaceAll(s, ",", "")) {
		s = strings.ReplaceAll(s, ",", "")
	}
	return s
}

// isDigits is Python's str.isdigit for ASCII text: non-empty, all digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// IsEquiv is lm-eval's is_equiv for two normalised answers: parse both
// and check simplify(a - b) == 0, here SameValue.
func IsEquiv(a, b string) bool { return SameValue(a, b) }

// StripString is hendrycks_math's strip_string as lm-eval's aime task
// copies it. ok is false where the Python raises (a "\sqrt" or "\frac"
// with nothing after it, a "\text{ " unit split in more than two, an
// "a/b" whose parts are not integers), which makes is_equiv fall back to
// comparing the raw strings.
func StripString(s string) (string, bool) {
	s = strings.ReplaceAll(s, "\n", "")
	s = strings.ReplaceAll(s, `\!`, "")
	s = strings.ReplaceAll(s, `\\`, `\`)
	s = strings.ReplaceAll(s, "tfrac", "frac")
	s = strings.ReplaceAll(s, "dfrac", "frac")
	s = strings.ReplaceAll(s, `\left`, "")
	s = strings.ReplaceAll(s, `\right`, "")
	s = strings.ReplaceAll(s, `^{\circ}`, "")
	s = strings.ReplaceAll(s, `^\circ`, "")
	s = strings.ReplaceAll(s, `\$`, "")
	if strings.Contains(s, `\text{ `) { // remove_right_units
		splits := strings.Split(s, `\text{ `)
		if len(splits) != 2 {
			return "", false
		}
		s = splits[0]
	}
	s = strings.ReplaceAll(s, `\%`, "")
	s = strings.ReplaceAll(s, " .", " 0.")
	s = strings.ReplaceAll(s, "{.", "{0.")
	if s == "" {
		return s, true
	}
	if s[0] == '.' {
		s = "0" + s
	}
	if parts := strings.Split(s, "="); len(parts) == 2 && len(parts[0]) <= 2 {
		s = parts[1]
	}
	var ok bool
	if s, ok = fixSqrt(s); !ok {
		return "", false
	}
	s = strings.ReplaceAll(s, " ", "")
	if s, ok = fixFracs(s); !ok {
		return "", false
	}
	if s == "0.5" {
		s = `\frac{1}{2}`
	}
	return fixASlashB(s)
}

func fixSqrt(s string) (string, bool) {
	if !strings.Contains(s, `\sqrt`) {
		return s, true
	}
	splits := strings.Split(s, `\sqrt`)
	out := splits[0]
	for _, sp := range splits[1:] {
		if sp == "" {
			return "", false // split[0] raises IndexError
		}
		if sp[0] != '{' {
			out += `\sqrt{` + sp[:1] + "}" + sp[1:]
		} else {
			out += `\sqrt` + sp
		}
	}
	return out, true
}

// fixFracs is hendrycks' fix_fracs: \frac12 -> \frac{1}{2}, \frac1{2}
// -> \frac{1}{2}.
func fixFracs(s string) (string, bool) {
	subs := strings.Split(s, `\frac`)
	out := subs[0]
	for _, sub := range subs[1:] {
		out += `\frac`
		if sub == "" {
			return "", false // substr[0] raises IndexError
		}
		if sub[0] == '{' {
			out += sub
			continue
		}
		if len(sub) < 2 {
			return s, true // the assertion is caught: the string is returned as it was
		}
		a, b := sub[:1], sub[1:2]
		if b != "{" {
			out += "{" + a + "}{" + b + "}" + sub[2:]
		} else {
			out += "{" + a + "}" + b + sub[2:]
		}
	}
	return out, true
}

// fixASlashB turns "a/b" of two integers into \frac{a}{b}; int() failing
// on either side raises in the aime copy (only the assertion is caught).
func fixASlashB(s string) (string, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 2 {
		return s, true
	}
	a, okA := pyInt(parts[0])
	b, okB := pyInt(parts[1])
	if !okA || !okB {
		return "", false
	}
	if s != a+"/"+b {
		return s, true
	}
	return `\frac{` + a + "}{" + b + "}", true
}

// pyInt is str(int(s)) for Python's int(): surrounding whitespace, a sign,
// and underscores between digits are accepted.
func pyInt(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if strings.Contains(t, "__") || strings.HasPrefix(strings.TrimLeft(t, "+-"), "_") || strings.HasSuffix(t, "_") {
		return "", false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(t, "_", ""), 10, 64)
	if err != nil {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}

// HendrycksEquiv is lm-eval's aime is_equiv: the strip_string forms are
// equal, or, where strip_string raises, the raw strings are.
func HendrycksEquiv(a, b string) bool {
	sa, okA := StripString(a)
	sb, okB := StripString(b)
	if !okA || !okB {
		return a == b
	}
	return sa == sb
}
