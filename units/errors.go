package units

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one problem in a unit file. Its text is
// "path:line:col: field.path: message"; parts that are unknown are left out
// (a missing top-level key has no position).
type Error struct {
	// File is the unit file's path.
	File string `json:"file"`
	// Line and Col are 1-based; 0 when the problem has no place in the file.
	Line int `json:"line,omitempty"`
	Col  int `json:"col,omitempty"`
	// Field is the dotted key path ("limits.max_context", "schedule[1].calendar").
	Field string `json:"field,omitempty"`
	Msg   string `json:"message"`
}

// Error renders the problem as "path:line:col: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one or more unit files, in file and
// then position order.
type ErrorList []*Error

// Error renders one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *Error.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Errors returns the problems inside err: an ErrorList's entries, a single
// *Error, or err itself wrapped as an *Error without position.
func Errors(err error) ErrorList {
	if err == nil {
		return nil
	}
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return ErrorList{e}
	}
	return ErrorList{{Msg: err.Error()}}
}

// errorsOf collects the problems of one file while it is checked.
type errorsOf struct {
	file string
	pos  positions
	list ErrorList
}

// add records a problem at the key path (dotted, with array indexes as
// numbers: "schedule.0.calendar"). The position is the key's own, or the
// nearest enclosing key or table header that is in the file.
func (c *errorsOf) add(path, format string, args ...any) {
	line, col := c.pos.find(path)
	c.list = append(c.list, &Error{File: c.file, Line: line, Col: col, Field: displayPath(path), Msg: fmt.Sprintf(format, args...)})
}

// displayPath turns "schedule.0.calendar" into "schedule[0].calendar".
func displayPath(path string) string {
	if path == "" {
		return ""
	}
	parts := strings.Split(path, ".")
	var b strings.Builder
	for i, p := range parts {
		if isIndex(p) {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func isIndex(s string) bool {
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
