package mathequiv

import (
	"fmt"
	"math"
	"math/cmplx"
	"strconv"
	"strings"
	"unicode"
)

// node is a parsed expression.
type node interface {
	eval(env map[string]complex128) complex128
	vars(into map[string]bool)
}

type num struct{ v complex128 }

type variable struct{ name string }

type binary struct {
	op   byte // + - * / ^
	l, r node
}

type neg struct{ x node }

type call struct {
	fn  string
	arg []node
}

func (n num) eval(map[string]complex128) complex128 { return n.v }
func (num) vars(map[string]bool)                    {}

func (v variable) eval(env map[string]complex128) complex128 { return env[v.name] }
func (v variable) vars(into map[string]bool)                 { into[v.name] = true }

func (b binary) eval(env map[string]complex128) complex128 {
	l, r := b.l.eval(env), b.r.eval(env)
	switch b.op {
	case '+':
		return l + r
	case '-':
		return l - r
	case '*':
		return l * r
	case '/':
		return l / r
	case '^':
		// Integer powers of reals stay exact where Pow would round.
		if imag(r) == 0 && real(r) == math.Trunc(real(r)) && math.Abs(real(r)) <= 64 && imag(l) == 0 {
			return complex(math.Pow(real(l), real(r)), 0)
		}
		return cmplx.Pow(l, r)
	}
	return cmplx.NaN()
}

func (b binary) vars(into map[string]bool) { b.l.vars(into); b.r.vars(into) }

func (n neg) eval(env map[string]complex128) complex128 { return -n.x.eval(env) }
func (n neg) vars(into map[string]bool)                 { n.x.vars(into) }

func (c call) vars(into map[string]bool) {
	for _, a := range c.arg {
		a.vars(into)
	}
}

func (c call) eval(env map[string]complex128) complex128 {
	x := c.arg[0].eval(env)
	switch c.fn {
	case "sqrt":
		return cmplx.Sqrt(x)
	case "root": // arg[1]-th root of x
		n := c.arg[1].eval(env)
		if imag(x) == 0 && real(x) < 0 && imag(n) == 0 && math.Mod(real(n), 2) == 1 {
			return complex(-math.Pow(-real(x), 1/real(n)), 0)
		}
		return cmplx.Pow(x, 1/n)
	case "sin":
		return cmplx.Sin(x)
	case "cos":
		return cmplx.Cos(x)
	case "tan":
		return cmplx.Tan(x)
	case "sec":
		return 1 / cmplx.Cos(x)
	case "csc":
		return 1 / cmplx.Sin(x)
	case "cot":
		return 1 / cmplx.Tan(x)
	case "arcsin":
		return cmplx.Asin(x)
	case "arccos":
		return cmplx.Acos(x)
	case "arctan":
		return cmplx.Atan(x)
	case "ln":
		return cmplx.Log(x)
	case "log":
		if len(c.arg) == 2 { // log base arg[1]
			return cmplx.Log(x) / cmplx.Log(c.arg[1].eval(env))
		}
		return cmplx.Log(x) // sympy's log is the natural logarithm
	case "exp":
		return cmplx.Exp(x)
	case "abs":
		return complex(cmplx.Abs(x), 0)
	case "floor":
		return complex(math.Floor(real(x)), math.Floor(imag(x)))
	case "ceil":
		return complex(math.Ceil(real(x)), math.Ceil(imag(x)))
	case "factorial":
		if imag(x) != 0 {
			return cmplx.NaN()
		}
		return complex(math.Gamma(real(x)+1), 0)
	case "binom":
		n, k := real(x), real(c.arg[1].eval(env))
		return complex(math.Gamma(n+1)/(math.Gamma(k+1)*math.Gamma(n-k+1)), 0)
	}
	return cmplx.NaN()
}

// parser reads the LaTeX and plain-text arithmetic that math answers use:
// numbers, single-letter symbols, + - * / ^ ! with implicit
// multiplication, groups in (), [], {} and |..|, \frac \dfrac \tfrac
// \cfrac, \sqrt and \sqrt[n], \binom, \pi, \infty, \cdot \times \div,
// \left/\right, spacing commands, \mathrm/\mathbf/\text wrappers around
// symbols, and the common functions (\sin ... \ln \log \exp, \lfloor
// \rceil). Anything else is a parse error, as sympy's parse_latex would
// give.
type parser struct {
	s   string
	pos int
}

func parse(s string) (node, error) {
	p := &parser{s: s}
	n, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, fmt.Errorf("unexpected %q at %d", p.s[p.pos:], p.pos)
	}
	return n, nil
}

// spacing commands and wrappers that change nothing in value.
var ignored = []string{`\left`, `\right`, `\bigl`, `\bigr`, `\Bigl`, `\Bigr`, `\big`, `\Big`, `\!`, `\,`, `\;`, `\:`, `\ `, `\displaystyle`, `\quad`, `\qquad`, `$`}

func (p *parser) space() {
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == ' ' || c == '\t' || c == '\n' || c == '~' {
			p.pos++
			continue
		}
		matched := false
		for _, w := range ignored {
			if strings.HasPrefix(p.s[p.pos:], w) && !(w[len(w)-1] >= 'a' && w[len(w)-1] <= 'z' && p.letterAt(p.pos+len(w))) {
				p.pos += len(w)
				matched = true
				break
			}
		}
		if !matched {
			return
		}
	}
}

func (p *parser) letterAt(i int) bool {
	return i < len(p.s) && ((p.s[i] >= 'a' && p.s[i] <= 'z') || (p.s[i] >= 'A' && p.s[i] <= 'Z'))
}

func (p *parser) peek() byte {
	p.space()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *parser) accept(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], tok) {
		if tok[0] == '\\' && p.letterAt(p.pos+len(tok)) {
			return false
		}
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *parser) sum() (node, error) {
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.accept("+"):
			r, err := p.term()
			if err != nil {
				return nil, err
			}
			l = binary{'+', l, r}
		case p.accept("-"):
			r, err := p.term()
			if err != nil {
				return nil, err
			}
			l = binary{'-', l, r}
		default:
			return l, nil
		}
	}
}

func (p *parser) term() (node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.accept("*"), p.accept(`\cdot`), p.accept(`\times`), p.accept(`\ast`):
			r, err := p.unary()
			if err != nil {
				return nil, err
			}
			l = binary{'*', l, r}
		case p.accept("/"), p.accept(`\div`):
			r, err := p.unary()
			if err != nil {
				return nil, err
			}
			l = binary{'/', l, r}
		case p.startsPrimary():
			r, err := p.power()
			if err != nil {
				return nil, err
			}
			l = binary{'*', l, r}
		default:
			return l, nil
		}
	}
}

// startsPrimary reports whether implicit multiplication continues.
func (p *parser) startsPrimary() bool {
	c := p.peek()
	switch {
	case c == 0:
		return false
	case c >= '0' && c <= '9', c == '.', c == '(', c == '{', c == '[':
		return true
	case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		return true
	case c == '\\':
		for _, stop := range []string{`\cdot`, `\times`, `\div`, `\ast`, `\right`, `\rfloor`, `\rceil`, `\}`, `\rangle`} {
			if strings.HasPrefix(p.s[p.pos:], stop) {
				return false
			}
		}
		return true
	}
	return false
}

func (p *parser) unary() (node, error) {
	if p.accept("-") {
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return neg{x}, nil
	}
	if p.accept("+") {
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() (node, error) {
	base, err := p.postfix()
	if err != nil {
		return nil, err
	}
	if p.accept("^") || p.accept("**") {
		exp, err := p.exponent()
		if err != nil {
			return nil, err
		}
		return binary{'^', base, exp}, nil
	}
	return base, nil
}

// exponent is a group, or a single digit or symbol as TeX reads x^23 as
// x^{2}3; a leading sign applies to what follows.
func (p *parser) exponent() (node, error) {
	c := p.peek()
	switch {
	case c == '{' || c == '(':
		return p.postfix()
	case c == '-':
		p.pos++
		x, err := p.exponent()
		if err != nil {
			return nil, err
		}
		return neg{x}, nil
	case c >= '0' && c <= '9':
		p.pos++
		return num{complex(float64(c-'0'), 0)}, nil
	}
	return p.postfix()
}

func (p *parser) postfix() (node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.accept("!") {
		x = call{"factorial", []node{x}}
	}
	return x, nil
}

// group reads {...}.
func (p *parser) group() (node, error) {
	if !p.accept("{") {
		// \frac12: one character arguments.
		c := p.peek()
		if c >= '0' && c <= '9' {
			p.pos++
			return num{complex(float64(c-'0'), 0)}, nil
		}
		if p.letterAt(p.pos) {
			p.pos++
			return variable{string(c)}, nil
		}
		return nil, fmt.Errorf("expected { at %d", p.pos)
	}
	x, err := p.sum()
	if err != nil {
		return nil, err
	}
	if !p.accept("}") {
		return nil, fmt.Errorf("expected } at %d", p.pos)
	}
	return x, nil
}

var functions = []string{"arcsin", "arccos", "arctan", "sin", "cos", "tan", "sec", "csc", "cot", "ln", "log", "exp"}

func (p *parser) primary() (node, error) {
	c := p.peek()
	switch {
	case c == 0:
		return nil, fmt.Errorf("unexpected end")
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	case c == '(':
		p.pos++
		return p.closed(")")
	case c == '[':
		p.pos++
		return p.closed("]")
	case c == '{':
		p.pos++
		return p.closed("}")
	case c == '|':
		p.pos++
		x, err := p.closed("|")
		if err != nil {
			return nil, err
		}
		return call{"abs", []node{x}}, nil
	case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		for _, f := range functions { // plain-text sin(x), log(x)
			if strings.HasPrefix(p.s[p.pos:], f+"(") {
				p.pos += len(f)
				return p.function(f)
			}
		}
		if strings.HasPrefix(p.s[p.pos:], "sqrt(") {
			p.pos += 4
			x, err := p.primary()
			if err != nil {
				return nil, err
			}
			return call{"sqrt", []node{x}}, nil
		}
		p.pos++
		return variable{string(c)}, nil
	case c == '\\':
		return p.command()
	}
	return nil, fmt.Errorf("unexpected %q at %d", c, p.pos)
}

func (p *parser) closed(end string) (node, error) {
	x, err := p.sum()
	if err != nil {
		return nil, err
	}
	if !p.accept(end) {
		return nil, fmt.Errorf("expected %s at %d", end, p.pos)
	}
	return x, nil
}

func (p *parser) number() (node, error) {
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == '.') {
		p.pos++
	}
	v, err := strconv.ParseFloat(p.s[start:p.pos], 64)
	if err != nil {
		return nil, fmt.Errorf("bad number %q", p.s[start:p.pos])
	}
	return num{complex(v, 0)}, nil
}

func (p *parser) function(name string) (node, error) {
	var base node
	if name == "log" && p.accept("_") {
		b, err := p.group()
		if err != nil {
			return nil, err
		}
		base = b
	}
	// \sin^2 x is (\sin x)^2.
	var power node
	if p.accept("^") {
		e, err := p.exponent()
		if err != nil {
			return nil, err
		}
		power = e
	}
	var arg node
	var err error
	if c := p.peek(); c == '(' || c == '{' || c == '[' {
		arg, err = p.primary()
	} else {
		arg, err = p.power()
	}
	if err != nil {
		return nil, err
	}
	var out node = call{name, []node{arg}}
	if base != nil {
		out = call{"log", []node{arg, base}}
	}
	if power != nil {
		out = binary{'^', out, power}
	}
	return out, nil
}

func (p *parser) command() (node, error) {
	rest := p.s[p.pos+1:]
	name := rest
	for i, r := range rest {
		if !unicode.IsLetter(r) {
			name = rest[:i]
			break
		}
	}
	if name == "" {
		return nil, fmt.Errorf("unexpected %q at %d", p.s[p.pos:min(p.pos+2, len(p.s))], p.pos)
	}
	p.pos += 1 + len(name)
	switch name {
	case "frac", "dfrac", "tfrac", "cfrac":
		a, b, err := p.twoGroups()
		if err != nil {
			return nil, err
		}
		return binary{'/', a, b}, nil
	case "binom", "dbinom", "tbinom", "choose":
		a, b, err := p.twoGroups()
		if err != nil {
			return nil, err
		}
		return call{"binom", []node{a, b}}, nil
	case "sqrt":
		if p.accept("[") {
			n, err := p.closed("]")
			if err != nil {
				return nil, err
			}
			x, err := p.group()
			if err != nil {
				return nil, err
			}
			return call{"root", []node{x, n}}, nil
		}
		x, err := p.group()
		if err != nil {
			return nil, err
		}
		return call{"sqrt", []node{x}}, nil
	case "pi":
		return num{complex(math.Pi, 0)}, nil
	case "infty", "inf":
		return num{complex(math.Inf(1), 0)}, nil
	case "lfloor":
		return p.delimited("floor", `\rfloor`)
	case "lceil":
		return p.delimited("ceil", `\rceil`)
	case "mathrm", "mathbf", "mathit", "boldsymbol", "mathnormal":
		return p.group()
	case "text", "textbf", "mbox":
		// Words in text are not mathematics: only a number or a single
		// symbol inside \text is read.
		start := p.pos
		x, err := p.group()
		if err != nil {
			return nil, err
		}
		if inner := strings.Trim(strings.TrimSpace(p.s[start:p.pos]), "{} "); len(inner) > 1 {
			if _, err := strconv.ParseFloat(inner, 64); err != nil {
				return nil, fmt.Errorf("text %q is not a value", inner)
			}
		}
		return x, nil
	}
	for _, f := range functions {
		if name == f {
			return p.function(f)
		}
	}
	// Greek letters and other symbols are variables.
	if greek[name] {
		return variable{`\` + name}, nil
	}
	return nil, fmt.Errorf("unsupported command \\%s", name)
}

// twoGroups reads the two arguments of \frac and \binom.
func (p *parser) twoGroups() (node, node, error) {
	a, err := p.group()
	if err != nil {
		return nil, nil, err
	}
	b, err := p.group()
	return a, b, err
}

func (p *parser) delimited(fn, end string) (node, error) {
	x, err := p.sum()
	if err != nil {
		return nil, err
	}
	if !p.accept(end) {
		return nil, fmt.Errorf("expected %s at %d", end, p.pos)
	}
	return call{fn, []node{x}}, nil
}

var greek = map[string]bool{}

func init() {
	for _, g := range strings.Fields("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi omicron rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma Phi Psi Omega") {
		greek[g] = true
	}
}
