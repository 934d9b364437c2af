package ifeval

// pyJSONValid says whether Python's json.loads (CPython's C scanner, the
// default) accepts s: one JSON value between optional whitespace
// (space, tab, newline, carriage return), where NaN, Infinity and
// -Infinity are values too and strings may not hold raw control
// characters. Go's encoding/json rejects the three constants, so it cannot
// stand in. Nesting is bounded (Python raises RecursionError, which is
// no verdict, past about a thousand levels).
func pyJSONValid(s string) bool {
	p := jsonScanner{s: []rune(s)}
	p.space()
	if !p.value(0) {
		return false
	}
	p.space()
	return p.i == len(p.s)
}

const maxJSONDepth = 10000

type jsonScanner struct {
	s []rune
	i int
}

func (p *jsonScanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) lit(w string) bool {
	rs := []rune(w)
	if p.i+len(rs) > len(p.s) {
		return false
	}
	for k, r := range rs {
		if p.s[p.i+k] != r {
			return false
		}
	}
	p.i += len(rs)
	return true
}

func (p *jsonScanner) value(depth int) bool {
	if p.i >= len(p.s) || depth > maxJSONDepth {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		return p.str()
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == 'n':
		return p.lit("null")
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'N':
		return p.lit("NaN")
	case c == 'I':
		return p.lit("Infinity")
	case c == '-' && p.i+1 < len(p.s) && p.s[p.i+1] == 'I':
		return p.lit("-Infinity")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return false
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// number is the C scanner's _match_number_unicode:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, where a fraction or
// exponent without digits is left for the caller to reject as extra data.
func (p *jsonScanner) number() bool {
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && p.s[p.i] >= '1' && p.s[p.i] <= '9':
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
	default:
		return false
	}
	if p.i+1 < len(p.s) && p.s[p.i] == '.' && isDigit(p.s[p.i+1]) {
		p.i += 2
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		j := p.i + 1
		if j < len(p.s) && (p.s[j] == '-' || p.s[j] == '+') {
			j++
		}
		if j < len(p.s) && isDigit(p.s[j]) {
			for j < len(p.s) && isDigit(p.s[j]) {
				j++
			}
			p.i = j
		}
	}
	return true
}

func isHex(r rune) bool {
	return isDigit(r) || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

func (p *jsonScanner) str() bool {
	p.i++ // the opening quote
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if p.i+4 >= len(p.s) {
					return false
				}
				for k := 1; k <= 4; k++ {
					if !isHex(p.s[p.i+k]) {
						return false
					}
				}
				p.i += 5
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

func (p *jsonScanner) object(depth int) bool {
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return true
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' || !p.str() {
			return false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !p.value(depth + 1) {
			return false
		}
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case '}':
			p.i++
			return true
		case ',':
			p.i++
			p.space()
		default:
			return false
		}
	}
}

func (p *jsonScanner) array(depth int) bool {
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return true
	}
	for {
		if !p.value(depth + 1) {
			return false
		}
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ']':
			p.i++
			return true
		case ',':
			p.i++
			p.space()
		default:
			return false
		}
	}
}
