package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// GBNF parses a grammar in llama.cpp's GBNF notation (the grammar field of
// llama.cpp's server):
//
//	root  ::= greeting " " name
//	greeting ::= "hello" | "hi"   # comments run to the end of the line
//	name  ::= [A-Z] [a-z]{1,15}
//
// Terminals are "literals" and [character classes] ([^…] negated, with
// ranges), . matches any character; ( ) groups; | separates alternatives;
// * + ? {m} {m,} {m,n} {,n} repeat. A rule ends at a newline outside
// parentheses. Escapes: \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH.
// The grammar must define root. Token references (<…>) are not supported.
// It returns the expression of root, rules defined in b.
func (b *Builder) GBNF(src string) (*Expr, error) {
	if len(src) > b.b.lim.MaxSourceBytes {
		return nil, errorf(ErrLimit, "", "the grammar is %d bytes, more than the limit of %d", len(src), b.b.lim.MaxSourceBytes)
	}
	p := &gbnfParser{b: b, src: src, rules: map[string]int{}, defined: map[string]bool{}, firstUse: map[string]int{}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	root, ok := p.rules["root"]
	if !ok || !p.defined["root"] {
		return nil, errorf(ErrSyntax, "", "the grammar does not define the rule root")
	}
	for name, r := range p.rules {
		_ = r
		if !p.defined[name] {
			return nil, errorf(ErrSyntax, p.where(p.firstUse[name]), "rule %s is used but never defined", name)
		}
	}
	return b.Ref(root), nil
}

type gbnfParser struct {
	b        *Builder
	src      string
	pos      int
	rules    map[string]int
	defined  map[string]bool
	firstUse map[string]int
}

func (p *gbnfParser) where(off int) string {
	line := 1 + strings.Count(p.src[:off], "\n")
	col := off - strings.LastIndexByte(p.src[:off], '\n')
	return fmt.Sprintf("%d:%d", line, col)
}

func (p *gbnfParser) errf(off int, format string, args ...any) error {
	return errorf(ErrSyntax, p.where(off), format, args...)
}

// space skips blanks and comments, and newlines when nl.
func (p *gbnfParser) space(nl bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case nl && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *gbnfParser) rule(name string, at int) int {
	if r, ok := p.rules[name]; ok {
		return r
	}
	r := p.b.Rule(name)
	p.rules[name] = r
	p.firstUse[name] = at
	return r
}

func (p *gbnfParser) parse() error {
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			return nil
		}
		at := p.pos
		name := p.name()
		if name == "" {
			return p.errf(at, "expected a rule name, found %q", p.peekText())
		}
		p.space(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return p.errf(p.pos, "expected ::= after rule name %s", name)
		}
		p.pos += 3
		if p.defined[name] {
			return p.errf(at, "rule %s is defined twice", name)
		}
		r := p.rule(name, at)
		p.defined[name] = true
		body, err := p.alternates(false, 0)
		if err != nil {
			return err
		}
		p.b.Define(r, body)
		if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
			return p.errf(p.pos, "expected the end of the line after rule %s, found %q", name, p.peekText())
		}
	}
}

func (p *gbnfParser) peekText() string {
	end := min(len(p.src), p.pos+12)
	return p.src[p.pos:end]
}

func (p *gbnfParser) alternates(nested bool, depth int) (*Expr, error) {
	if depth > p.b.b.lim.MaxDepth {
		return nil, p.errf(p.pos, "groups nest deeper than %d levels (limit)", p.b.b.lim.MaxDepth)
	}
	var alts []*Expr
	for {
		seq, err := p.sequence(nested, depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			p.space(true)
			continue
		}
		return Alt(alts...), nil
	}
}

func (p *gbnfParser) sequence(nested bool, depth int) (*Expr, error) {
	var items []*Expr
	p.space(nested)
	for p.pos < len(p.src) {
		if err := p.b.b.tick(); err != nil {
			return nil, err
		}
		at := p.pos
		c := p.src[p.pos]
		var item *Expr
		switch {
		case c == '"':
			p.pos++
			var parts []*Expr
			for {
				if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
					return nil, p.errf(at, "unterminated literal")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				parts = append(parts, charsExpr(runeSet(r)))
			}
			item = Seq(parts...)
		case c == '[':
			p.pos++
			neg := false
			if p.pos < len(p.src) && p.src[p.pos] == '^' {
				neg = true
				p.pos++
			}
			var spans []span
			for {
				if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
					return nil, p.errf(at, "unterminated character class")
				}
				if p.src[p.pos] == ']' {
					p.pos++
					break
				}
				lo, err := p.char()
				if err != nil {
					return nil, err
				}
				hi := lo
				if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
					p.pos++
					if hi, err = p.char(); err != nil {
						return nil, err
					}
					if hi < lo {
						return nil, p.errf(at, "character range %q-%q is backwards", lo, hi)
					}
				}
				spans = append(spans, span{lo, hi})
			}
			set := newCharset(spans)
			if neg {
				set = set.negate()
			}
			if set.empty() {
				return nil, p.errf(at, "character class matches nothing")
			}
			item = charsExpr(set)
		case c == '.':
			p.pos++
			item = charsExpr(newCharset([]span{{0, maxRune}}))
		case c == '(':
			p.pos++
			p.space(true)
			e, err := p.alternates(true, depth+1)
			if err != nil {
				return nil, err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errf(at, "unclosed parenthesis")
			}
			p.pos++
			item = e
		case c == '<':
			return nil, errorf(ErrUnsupported, p.where(at), "token references (<…>) are not supported; write the text instead")
		case isWordChar(c):
			name := p.name()
			p.space(false)
			if strings.HasPrefix(p.src[p.pos:], "::=") {
				// The next rule starts here: this line's rule ended at the
				// previous line break.
				p.pos = at
				return Seq(items...), nil
			}
			p.pos = at + len(name)
			item = p.b.Ref(p.rule(name, at))
		default:
			return Seq(items...), nil
		}
		var err error
		if item, err = p.postfix(item); err != nil {
			return nil, err
		}
		items = append(items, item)
		p.space(nested)
	}
	return Seq(items...), nil
}

func (p *gbnfParser) postfix(item *Expr) (*Expr, error) {
	for p.pos < len(p.src) {
		at := p.pos
		switch p.src[p.pos] {
		case '*':
			p.pos++
			item = Repeat(item, 0, -1)
		case '+':
			p.pos++
			item = Repeat(item, 1, -1)
		case '?':
			p.pos++
			item = Repeat(item, 0, 1)
		case '{':
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return nil, p.errf(at, "unclosed repetition count")
			}
			body := strings.ReplaceAll(p.src[p.pos+1:p.pos+end], " ", "")
			p.pos += end + 1
			lo, hi, ok := parseCount(body)
			if !ok {
				return nil, p.errf(at, "invalid repetition count {%s}", body)
			}
			if lim := p.b.b.lim.MaxRepeat; lo > lim || hi > lim {
				return nil, errorf(ErrLimit, p.where(at), "repetition count {%s} is above the limit of %d", body, lim)
			}
			if hi >= 0 && hi < lo {
				return nil, p.errf(at, "repetition count {%s} has its maximum below its minimum", body)
			}
			item = Repeat(item, lo, hi)
		default:
			return item, nil
		}
	}
	return item, nil
}

// parseCount reads "m", "m,", "m,n" or ",n".
func parseCount(s string) (int, int, bool) {
	num := func(t string) (int, bool) {
		v, err := strconv.Atoi(t)
		return v, err == nil && v >= 0
	}
	a, z, comma := strings.Cut(s, ",")
	lo := 0
	if a != "" {
		v, ok := num(a)
		if !ok {
			return 0, 0, false
		}
		lo = v
	} else if !comma {
		return 0, 0, false
	}
	if !comma {
		return lo, lo, true
	}
	if z == "" {
		return lo, -1, true
	}
	hi, ok := num(z)
	return lo, hi, ok
}

// char reads one character of a literal or class, decoding escapes.
func (p *gbnfParser) char() (rune, error) {
	at := p.pos
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errf(at, "invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.errf(at, "unfinished escape")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	hex := func(n int) (rune, error) {
		if p.pos+n > len(p.src) {
			return 0, p.errf(at, "unfinished escape")
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > uint64(maxRune) {
			return 0, p.errf(at, "invalid escape \\%c%s", c, p.src[p.pos:p.pos+n])
		}
		p.pos += n
		return rune(v), nil
	}
	switch c {
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/', '\'':
		return rune(c), nil
	}
	return 0, p.errf(at, "unknown escape \\%c", c)
}
