package ifeval

import (
	"strings"
	"unicode"

	"github.com/ttis-dev/ttis/evalsuite/internal/punkt"
)

// Python's str methods as IFEval's checks call them. Go's strings package
// differs on the edges the checks can meet: str.strip() also strips
// U+001C..U+001F, str.lower() lowers a capital sigma to ς at a word's end
// and İ to "i̇", and str.isupper/islower look at the Uppercase and
// Lowercase properties (Other_Uppercase and Other_Lowercase included),
// not at whether lowering changes the text. Character properties come from
// Go's Unicode tables (CPython 3.11 uses Unicode 14): they differ only on
// characters assigned since.

// pyStrip is str.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, punkt.IsSpace) }

// pyFields is str.split() without arguments.
func pyFields(s string) []string { return strings.FieldsFunc(s, punkt.IsSpace) }

func pyIsUpperRune(r rune) bool { return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r) }
func pyIsLowerRune(r rune) bool { return unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r) }
func pyIsTitleRune(r rune) bool { return unicode.IsTitle(r) }

// pyIsCased is the Cased property (_PyUnicode_IsCased).
func pyIsCased(r rune) bool { return pyIsUpperRune(r) || pyIsLowerRune(r) || pyIsTitleRune(r) }

// pyIsUpper is str.isupper(): some cased character and none lowercase or
// titlecase.
func pyIsUpper(s string) bool {
	cased := false
	for _, r := range s {
		if pyIsLowerRune(r) || pyIsTitleRune(r) {
			return false
		}
		if !cased && pyIsUpperRune(r) {
			cased = true
		}
	}
	return cased
}

// pyIsLower is str.islower(): some cased character and none uppercase or
// titlecase.
func pyIsLower(s string) bool {
	cased := false
	for _, r := range s {
		if pyIsUpperRune(r) || pyIsTitleRune(r) {
			return false
		}
		if !cased && pyIsLowerRune(r) {
			cased = true
		}
	}
	return cased
}

// caseIgnorableExtra are the Word_Break MidLetter, MidNumLet and
// Single_Quote characters, which Case_Ignorable adds to Mn, Me, Cf, Lm
// and Sk.
const caseIgnorableExtra = "'.:\u00b7\u0387\u055f\u05f4\u2018\u2019\u2024\u2027\ufe13\ufe52\ufe55\uff07\uff0e\uff1a"

func pyIsCaseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) || strings.ContainsRune(caseIgnorableExtra, r)
}

// pyLower is str.lower(): full lowercase mapping (İ becomes "i̇") and
// Σ as ς in the Final_Sigma context.
func pyLower(s string) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			b.WriteRune(sigma(rs, i))
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// sigma is CPython's handle_capital_sigma: ς when a cased letter precedes
// (case-ignorable characters skipped) and none follows.
func sigma(rs []rune, i int) rune {
	j := i - 1
	for j >= 0 && pyIsCaseIgnorable(rs[j]) {
		j--
	}
	final := j >= 0 && pyIsCased(rs[j])
	if final {
		k := i + 1
		for k < len(rs) && pyIsCaseIgnorable(rs[k]) {
			k++
		}
		final = k == len(rs) || !pyIsCased(rs[k])
	}
	if final {
		return 0x3c2
	}
	return 0x3c3
}

// pyIsWordRune is a character of Python's \w on str: alphanumeric
// (str.isalnum) or the underscore.
func pyIsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_'
}

// pyIsSpace is Python's \s on str.
func pyIsSpace(r rune) bool { return punkt.IsSpace(r) }
