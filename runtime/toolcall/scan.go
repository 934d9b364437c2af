package toolcall

import (
	"encoding/json"
	"strings"
)

// scanState is where a callScanner is in the object.
type scanState uint8

const (
	stStart  scanState = iota // before the opening brace
	stKey                     // expecting a key or the closing brace
	stKeyStr                  // inside a key
	stColon                   // expecting ':'
	stValue                   // expecting a value
	stIn                      // inside a value
	stAfter                   // expecting ',' or the closing brace
	stDone
)

// callScanner reads one call object, {"name": "…", "arguments": {…}} (the
// arguments key may be named otherwise, see argKeys), as its text arrives:
// it reports the name once it is complete and the raw text of the
// arguments value as it grows. Keys may come in any order.
type callScanner struct {
	argKeys []string
	st      scanState
	bad     bool // not a call object

	key   strings.Builder
	esc   bool
	curly bool // the value is an object or array
	str   bool // the value is a string, or inside a string of a nested value
	depth int  // nesting inside the value
	isArg bool // the value is the arguments
	isNam bool // the value is the name
	value strings.Builder

	name     string
	hasName  bool
	args     strings.Builder
	argsDone bool
}

func newCallScanner(argKeys ...string) *callScanner { return &callScanner{argKeys: argKeys} }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed consumes text and returns how many bytes belong to the object; the
// rest follows its closing brace (or the object is bad).
func (s *callScanner) feed(text string) int {
	for i := 0; i < len(text); i++ {
		if s.st == stDone {
			return i
		}
		if !s.step(text[i]) {
			// The byte ends a scalar value; read it again after it.
			i--
		}
	}
	return len(text)
}

// step reads one byte; it returns false when the byte was not consumed.
func (s *callScanner) step(c byte) bool {
	switch s.st {
	case stStart:
		switch {
		case isBlank(c):
		case c == '{':
			s.st = stKey
		default:
			s.fail()
		}
	case stKey:
		switch {
		case isBlank(c) || c == ',':
		case c == '"':
			s.key.Reset()
			s.st = stKeyStr
		case c == '}':
			s.st = stDone
		default:
			s.fail()
		}
	case stKeyStr:
		switch {
		case s.esc:
			s.esc = false
			s.key.WriteByte(c)
		case c == '\\':
			s.esc = true
			s.key.WriteByte(c)
		case c == '"':
			s.st = stColon
		default:
			s.key.WriteByte(c)
		}
	case stColon:
		switch {
		case isBlank(c):
		case c == ':':
			s.st = stValue
		default:
			s.fail()
		}
	case stValue:
		if isBlank(c) {
			return true
		}
		var k string
		if json.Unmarshal([]byte(`"`+s.key.String()+`"`), &k) != nil {
			k = s.key.String()
		}
		// A repeated name or arguments key is ignored: the first counts.
		s.isNam = k == "name" && !s.hasName
		s.isArg = false
		for _, a := range s.argKeys {
			s.isArg = s.isArg || (k == a && !s.argsDone)
		}
		s.value.Reset()
		if s.isArg {
			s.args.Reset()
		}
		s.curly = c == '{' || c == '['
		s.str = c == '"'
		s.depth = 0
		if s.curly {
			s.depth = 1
		}
		s.st = stIn
		s.add(c)
	case stIn:
		switch {
		case s.str:
			s.add(c)
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.str = false
				if !s.curly {
					s.endValue()
				}
			}
		case s.curly:
			s.add(c)
			switch c {
			case '"':
				s.str = true
			case '{', '[':
				s.depth++
			case '}', ']':
				if s.depth--; s.depth == 0 {
					s.endValue()
				}
			}
		default: // a scalar: it ends at a blank, a comma or the brace
			if isBlank(c) || c == ',' || c == '}' {
				s.endValue()
				return false
			}
			s.add(c)
		}
	case stAfter:
		switch {
		case isBlank(c):
		case c == ',':
			s.st = stKey
		case c == '}':
			s.st = stDone
		default:
			s.fail()
		}
	}
	return true
}

func (s *callScanner) add(c byte) {
	s.value.WriteByte(c)
	if s.isArg {
		s.args.WriteByte(c)
	}
}

func (s *callScanner) endValue() {
	s.st = stAfter
	if s.isNam {
		var n string
		if json.Unmarshal([]byte(s.value.String()), &n) == nil {
			s.name, s.hasName = n, true
		} else {
			s.bad = true
		}
	}
	if s.isArg {
		s.argsDone = true
	}
}

func (s *callScanner) fail() {
	s.bad = true
	s.st = stDone
}

// done reports whether the object has ended (or turned out bad).
func (s *callScanner) done() bool { return s.st == stDone }

// arguments is the arguments text so far ("{}" for a finished object
// without one).
func (s *callScanner) arguments() string {
	if s.args.Len() == 0 && s.st == stDone {
		return "{}"
	}
	return s.args.String()
}

// valid reports whether a finished object is a call: it has a name and
// its arguments are JSON.
func (s *callScanner) valid() bool {
	return !s.bad && s.st == stDone && s.hasName && json.Valid([]byte(s.arguments()))
}
