package clipbpe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean is open_clip's _clean_lower (tokenizer.py, open-clip-torch
// 2.26.1), the text cleaning open_clip.tokenize applies before BPE:
//
//	whitespace_clean(basic_clean(text)).lower()
//	basic_clean(text) = html.unescape(html.unescape(ftfy.fix_text(text))).strip()
//	whitespace_clean(text) = " ".join(text.split()).strip()
//
// with Python's semantics for unescape, strip, split and lower (full case
// mapping, final sigma). ftfy.fix_text is FixText: every fixer of ftfy
// 6.3.1's default configuration except the mojibake repair (see FixText).
func Clean(text string) string {
	s := pyUnescape(pyUnescape(FixText(text)))
	return pyLower(strings.Join(pySplit(s), " "))
}

// isPySpace is Python's str.isspace for one character: Unicode White_Space
// (Go's unicode.IsSpace) plus the information separators U+001C..U+001F,
// which Python counts as whitespace (bidirectional class B or S).
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pySplit is Python's str.split() with no argument.
func pySplit(s string) []string { return strings.FieldsFunc(s, isPySpace) }

// pyLower is Python's str.lower(): the full lower-case mapping, which
// differs from the simple one in U+0130 (İ becomes i and a combining dot)
// and in the final sigma (Σ at the end of a word becomes ς).
func pyLower(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(s, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports whether the capital sigma at byte i of s is in
// Unicode's Final_Sigma context, as CPython's handle_capital_sigma decides:
// a cased letter before it and none after it (skipping case-ignorable
// characters both ways).
func finalSigma(s string, i int) bool {
	j := i
	before := false
	for j > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if !caseIgnorable(r) {
			before = cased(r)
			break
		}
	}
	if !before {
		return false
	}
	for _, r := range s[i+utf8.RuneLen(0x3a3):] {
		if !caseIgnorable(r) {
			return !cased(r)
		}
	}
	return true
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable approximates Unicode's Case_Ignorable: marks, format
// characters, modifier letters and symbols, and the word-break MidLetter,
// MidNumLet and Single_Quote characters.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027, 0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// pyUnescape is Python's html.unescape (Lib/html/__init__.py): one pass,
// left to right, over &#DDD;, &#xHHH; and named references (semicolon
// optional, the longest legacy prefix of an unknown name taken), with its
// replacements for invalid code points.
func pyUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		repl, n := charref(s)
		if n == 0 {
			b.WriteByte('&')
			s = s[1:]
			continue
		}
		b.WriteString(repl)
		s = s[n:]
	}
}

// charref matches Python's _charref pattern at the '&' that starts s and
// returns the replacement and the bytes matched (0: no match).
func charref(s string) (string, int) {
	if len(s) >= 2 && s[1] == '#' {
		if n := digits(s[2:], 10); n > 0 {
			end := 2 + n
			if end < len(s) && s[end] == ';' {
				end++
			}
			return numericRef(s[2:2+n], 10), end
		}
		if len(s) >= 3 && (s[2] == 'x' || s[2] == 'X') {
			if n := digits(s[3:], 16); n > 0 {
				end := 3 + n
				if end < len(s) && s[end] == ';' {
					end++
				}
				return numericRef(s[3:3+n], 16), end
			}
		}
		return "", 0 // '#' is not a name character
	}
	// [^\t\n\f <&#;]{1,32};?
	end, count := 1, 0
	for end < len(s) && count < 32 {
		r, n := utf8.DecodeRuneInString(s[end:])
		if r == '\t' || r == '\n' || r == '\f' || r == ' ' || r == '<' || r == '&' || r == '#' || r == ';' {
			break
		}
		end += n
		count++
	}
	if count == 0 {
		return "", 0
	}
	if end < len(s) && s[end] == ';' {
		end++
	}
	name := s[1:end]
	if v, ok := html5[name]; ok {
		return v, end
	}
	// The longest prefix (at least 2 characters, fewer than all) that is a
	// reference, in characters.
	cuts := []int{}
	for k := range name {
		cuts = append(cuts, k)
	}
	for x := len(cuts) - 1; x >= 2; x-- {
		if v, ok := html5[name[:cuts[x]]]; ok {
			return v + name[cuts[x]:], end
		}
	}
	return "&" + name, end
}

// digits counts the leading digits of s in base 10 or 16.
func digits(s string, base int) int {
	n := 0
	for n < len(s) {
		c := s[n]
		if c >= '0' && c <= '9' || base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			n++
			continue
		}
		break
	}
	return n
}

// numericRef is the replacement of a numeric reference with the given
// digits (any length: Python's int() is unbounded).
func numericRef(ds string, base int) string {
	num := int64(0)
	for i := 0; i < len(ds); i++ {
		c := ds[i]
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'f':
			d = int64(c-'a') + 10
		default:
			d = int64(c-'A') + 10
		}
		num = num*int64(base) + d
		if num > 0x10ffff {
			return "\ufffd"
		}
	}
	if v, ok := invalidCharrefs[num]; ok {
		return v
	}
	if num >= 0xd800 && num <= 0xdfff {
		return "\ufffd"
	}
	if invalidCodepoint(num) {
		return ""
	}
	return string(rune(num))
}

// invalidCharrefs is html._invalid_charrefs: NUL, CR, and the C1 range
// read as windows-1252 (its five undefined bytes kept as controls).
var invalidCharrefs = map[int64]string{
	0x00: "\ufffd", 0x0d: "\r", 0x80: "\u20ac", 0x81: "\u0081", 0x82: "\u201a", 0x83: "\u0192",
	0x84: "\u201e", 0x85: "\u2026", 0x86: "\u2020", 0x87: "\u2021", 0x88: "\u02c6", 0x89: "\u2030",
	0x8a: "\u0160", 0x8b: "\u2039", 0x8c: "\u0152", 0x8d: "\u008d", 0x8e: "\u017d", 0x8f: "\u008f",
	0x90: "\u0090", 0x91: "\u2018", 0x92: "\u2019", 0x93: "\u201c", 0x94: "\u201d", 0x95: "\u2022",
	0x96: "\u2013", 0x97: "\u2014", 0x98: "\u02dc", 0x99: "\u2122", 0x9a: "\u0161", 0x9b: "\u203a",
	0x9c: "\u0153", 0x9d: "\u009d", 0x9e: "\u017e", 0x9f: "\u0178",
}

// invalidCodepoint is membership in html._invalid_codepoints.
func invalidCodepoint(n int64) bool {
	switch {
	case n >= 0x1 && n <= 0x8, n == 0xb, n >= 0xe && n <= 0x1f, n >= 0x7f && n <= 0x9f, n >= 0xfdd0 && n <= 0xfdef:
		return true
	}
	return n&0xfffe == 0xfffe && n <= 0x10ffff
}
