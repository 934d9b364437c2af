package clipbpe

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FixText is ftfy.fix_text (ftfy 6.3.1, ftfy/__init__.py) with its default
// configuration, less one step: the text is cut into lines, and each line
// is fixed until a round of fixes changes nothing, each round applying, in
// ftfy's order, unescape_html (off from the first line that contains '<'
// on, as fix_text's "auto" does), fix_c1_controls, fix_latin_ligatures,
// fix_character_width, uncurl_quotes, fix_line_breaks, fix_surrogates,
// remove_terminal_escapes, remove_control_chars and NFC normalization.
//
// The step left out is fix_encoding, the repair of mojibake ("cafÃ©" to
// "café"), which rests on ftfy's statistical badness heuristic and its
// table of single-byte codecs. ftfy never applies it to ASCII text, so the
// two agree on every ASCII text (tt-inference-server's 5000 COCO captions
// are ASCII); a non-ASCII text that ftfy takes for mojibake tokenizes
// differently.
//
// Invalid UTF-8 (which a Python str cannot hold) is first replaced, byte by
// byte, with U+FFFD.
func FixText(text string) string {
	if !utf8.ValidString(text) {
		var b strings.Builder
		for _, r := range text { // an invalid byte reads as utf8.RuneError, U+FFFD
			b.WriteRune(r)
		}
		text = b.String()
	}
	var out strings.Builder
	unescape := true
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += pos + 1
		}
		seg := text[pos:end]
		if unescape && strings.Contains(seg, "<") {
			unescape = false
		}
		out.WriteString(fixSegment(seg, unescape))
		pos = end
	}
	return out.String()
}

// fixSegment is fix_and_explain's loop for one segment.
func fixSegment(s string, unescape bool) string {
	for range 100 { // ftfy loops until nothing changes; every fix shrinks or settles the text
		orig := s
		if unescape {
			s = unescapeHTML(s)
		}
		s = fixC1Controls(s)
		s = mapRunes(s, fixLigature)
		s = mapRunes(s, fixWidth)
		s = mapRunes(s, uncurlQuote)
		s = fixLineBreaks(s)
		s = removeTerminalEscapes(s)
		s = mapRunes(s, removeControl)
		s = norm.NFC.String(s)
		if s == orig {
			return s
		}
	}
	return s
}

// unescapeHTML is ftfy.fixes.unescape_html: every match of
// &#?[0-9A-Za-z]{1,24}; that is in ftfyEntities becomes its value; a
// numeric one becomes html.unescape's value unless that leaves a
// semicolon; anything else stays.
func unescapeHTML(s string) string {
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
		n := entityMatch(s)
		if n == 0 {
			b.WriteByte('&')
			s = s[1:]
			continue
		}
		m := s[:n]
		switch v, ok := ftfyEntities[m]; {
		case ok:
			b.WriteString(v)
		case strings.HasPrefix(m, "&#"):
			if u := pyUnescape(m); strings.Contains(u, ";") {
				b.WriteString(m)
			} else {
				b.WriteString(u)
			}
		default:
			b.WriteString(m)
		}
		s = s[n:]
	}
}

// entityMatch is the length of the match of &#?[0-9A-Za-z]{1,24}; at the
// start of s (which starts with '&'), or 0.
func entityMatch(s string) int {
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	try := func(start int) int {
		n := 0
		for start+n < len(s) && alnum(s[start+n]) {
			n++
		}
		if n >= 1 && n <= 24 && start+n < len(s) && s[start+n] == ';' {
			return start + n + 1
		}
		return 0
	}
	if len(s) > 1 && s[1] == '#' {
		return try(2) // '#' itself is not alphanumeric, so the other branch cannot match
	}
	return try(1)
}

// fixC1Controls is ftfy.fixes.fix_c1_controls: U+0080..U+009F read as
// windows-1252 bytes, the five undefined ones kept ("sloppy").
func fixC1Controls(s string) string {
	return mapRunes(s, func(r rune) (string, bool) {
		if r >= 0x80 && r <= 0x9f {
			if v, ok := invalidCharrefs[int64(r)]; ok {
				return v, true
			}
		}
		return "", false
	})
}

// fixLigature is ftfy.fixes.fix_latin_ligatures for one character.
func fixLigature(r rune) (string, bool) {
	v, ok := ligatures[r]
	return v, ok
}

// fixWidth is ftfy.fixes.fix_character_width for one character: the
// ideographic space becomes a space, and the halfwidth and fullwidth forms
// U+FF01..U+FFEF their NFKC equivalents.
func fixWidth(r rune) (string, bool) {
	if r == 0x3000 {
		return " ", true
	}
	if r >= 0xff01 && r < 0xfff0 {
		if v := norm.NFKC.String(string(r)); v != string(r) {
			return v, true
		}
	}
	return "", false
}

// uncurlQuote is ftfy.fixes.uncurl_quotes for one character.
func uncurlQuote(r rune) (string, bool) {
	if r == 0x2bc || r >= 0x2018 && r <= 0x201b {
		return "'", true
	}
	if r >= 0x201c && r <= 0x201f {
		return "\"", true
	}
	return "", false
}

// ligatures is ftfy.chardata.LIGATURES.
var ligatures = map[rune]string{
	'Ĳ': "IJ", 'ĳ': "ij", 'ŉ': "ʼn", 'Ǳ': "DZ", 'ǲ': "Dz", 'ǳ': "dz", 'Ǆ': "DŽ", 'ǅ': "Dž", 'ǆ': "dž",
	'Ǉ': "LJ", 'ǈ': "Lj", 'ǉ': "lj", 'Ǌ': "NJ", 'ǋ': "Nj", 'ǌ': "nj",
	'ﬀ': "ff", 'ﬁ': "fi", 'ﬂ': "fl", 'ﬃ': "ffi", 'ﬄ': "ffl", 'ﬅ': "ſt", 'ﬆ': "st",
}

// fixLineBreaks is ftfy.fixes.fix_line_breaks.
func fixLineBreaks(s string) string {
	if !strings.ContainsAny(s, "\r\u2028\u2029\u0085") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.NewReplacer("\r", "\n", "\u2028", "\n", "\u2029", "\n", "\u0085", "\n").Replace(s)
}

// removeTerminalEscapes is ftfy.fixes.remove_terminal_escapes: it deletes
// every match of \x1b\[((?:\d|;)*)([a-zA-Z]), \d being any Unicode decimal
// digit as in Python's re.
func removeTerminalEscapes(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := i + 2
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if r != ';' && !unicode.IsDigit(r) {
				break
			}
			j += n
		}
		if j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
			s = s[j+1:]
			continue
		}
		b.WriteByte('\x1b')
		s = s[i+1:]
	}
}

// removeControl is ftfy.fixes.remove_control_chars for one character.
func removeControl(r rune) (string, bool) {
	switch {
	case r <= 0x08, r == 0x0b, r >= 0x0e && r <= 0x1f, r == 0x7f,
		r >= 0x206a && r <= 0x206f, r == 0xfeff, r >= 0xfff9 && r <= 0xfffc:
		return "", true
	}
	return "", false
}

// mapRunes rewrites every character for which f reports a replacement.
func mapRunes(s string, f func(rune) (string, bool)) string {
	var b *strings.Builder
	for i, r := range s {
		v, ok := f(r)
		if !ok {
			if b != nil {
				b.WriteRune(r)
			}
			continue
		}
		if b == nil {
			b = &strings.Builder{}
			b.Grow(len(s))
			b.WriteString(s[:i])
		}
		b.WriteString(v)
	}
	if b == nil {
		return s
	}
	return b.String()
}
