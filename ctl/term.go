package ctl

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text that ttisctl prints comes partly from others: unit file names and
// descriptions, error texts that quote a file's content, a server's log
// lines. A terminal obeys control characters in it (an ESC sequence can
// move the cursor, rewrite earlier lines, set the window title), so every
// human-readable output escapes them: safe for one table cell, safeWriter
// for whole texts.

// safe makes s one printable line: control characters, newlines included,
// become Go escapes (\x1b, \n), and invalid UTF-8 becomes \x.. bytes.
func safe(s string) string { return escapeControls(s, false) }

func escapeControls(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && !(keepLines && (r == '\n' || r == '\t'))) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// safeWriter escapes control characters other than newline and tab in
// everything written through it. Each Write is escaped on its own, so a
// caller writes whole lines or texts (a multi-byte character split across
// two writes would show as bytes).
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, escapeControls(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}
