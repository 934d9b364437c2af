// Package grammar compiles output constraints (JSON schemas, regular
// expressions, GBNF grammars, lists of choices) into a context-free grammar
// and matches generated tokens against it, for structured outputs and tool
// calls by constrained decoding.
//
// A Grammar is independent of any tokenizer. Index pairs it with a
// vocabulary: it runs the grammar as a pushdown automaton over bytes (UTF-8
// is checked across token boundaries), interns its parse states, and
// computes and caches per state the mask of tokens that keep the output a
// valid prefix. A Matcher is one sequence's position in an Index; it
// implements runtime.Constraint. Masks also keep the output completable: a
// token is allowed only if the fewest bytes that could still finish the
// output fit in the tokens left (every byte is assumed to have a token of
// its own, as with byte-fallback and byte-level vocabularies), so a
// sequence with enough max_tokens always ends with a complete output, even
// from a model that writes noise.
//
// Compiling is bounded by Limits: source size, nesting, repetition counts,
// grammar size and time; matching by the number of parse states and the
// bytes of cached masks. Errors are *Error values naming the problem and
// where it is.
package grammar

import (
	"fmt"
	"strings"
)

// op is the kind of an Expr.
type op uint8

const (
	opEmpty op = iota // matches the empty string
	opChars           // one code point from a set
	opRef             // a rule
	opSeq
	opAlt
	opRepeat
)

// Expr is a grammar expression. Build expressions with Lit, Chars, Seq,
// Alt, Repeat and Builder.Ref; a Builder lowers them into rules.
type Expr struct {
	op       op
	set      *charset
	rule     int
	subs     []*Expr
	min, max int // opRepeat; max < 0 is unbounded
}

// Empty matches the empty string.
func Empty() *Expr { return &Expr{op: opEmpty} }

// Lit matches s exactly.
func Lit(s string) *Expr {
	if s == "" {
		return Empty()
	}
	e := &Expr{op: opSeq}
	for _, r := range s {
		e.subs = append(e.subs, &Expr{op: opChars, set: runeSet(r)})
	}
	if len(e.subs) == 1 {
		return e.subs[0]
	}
	return e
}

// Range matches one code point in [lo, hi].
func Range(lo, hi rune) *Expr { return &Expr{op: opChars, set: newCharset([]span{{lo, hi}})} }

// charsExpr matches one member of c.
func charsExpr(c *charset) *Expr { return &Expr{op: opChars, set: c} }

// Seq matches its parts one after another.
func Seq(parts ...*Expr) *Expr {
	if len(parts) == 1 {
		return parts[0]
	}
	return &Expr{op: opSeq, subs: parts}
}

// Alt matches any one of its choices; with none it matches nothing.
func Alt(choices ...*Expr) *Expr {
	if len(choices) == 1 {
		return choices[0]
	}
	return &Expr{op: opAlt, subs: choices}
}

// Repeat matches e between min and max times; max < 0 is unbounded.
func Repeat(e *Expr, min, max int) *Expr {
	return &Expr{op: opRepeat, subs: []*Expr{e}, min: min, max: max}
}

// Opt matches e or nothing.
func Opt(e *Expr) *Expr { return Repeat(e, 0, 1) }

// Builder collects named rules and lowers them into a Grammar.
type Builder struct {
	b      *budget
	names  []string
	bodies []*Expr
	byName map[string]int
	json   *jsonRules
}

// NewBuilder returns a builder whose work is bounded by lim.
func NewBuilder(lim Limits) *Builder {
	return &Builder{b: newBudget(lim), byName: map[string]int{}}
}

// Rule declares a rule named after name (made unique) and returns its id;
// define its body with Define.
func (b *Builder) Rule(name string) int {
	n := name
	for i := 2; ; i++ {
		if _, taken := b.byName[n]; !taken {
			break
		}
		n = fmt.Sprintf("%s-%d", name, i)
	}
	b.byName[n] = len(b.names)
	b.names = append(b.names, n)
	b.bodies = append(b.bodies, nil)
	return len(b.names) - 1
}

// Define sets the body of a declared rule.
func (b *Builder) Define(rule int, body *Expr) { b.bodies[rule] = body }

// Ref matches the rule.
func (b *Builder) Ref(rule int) *Expr { return &Expr{op: opRef, rule: rule} }

// elemKind is the kind of a lowered grammar element.
type elemKind uint8

const (
	eEnd   elemKind = iota // end of an alternative
	eChars                 // one code point from sets[arg]
	eRef                   // rule arg
)

type elem struct {
	kind elemKind
	arg  int32
}

// Grammar is a compiled, immutable grammar: every rule's alternatives laid
// out in one element array, each alternative ending with an eEnd element.
// Rules that can never finish are removed, and left recursion is refused,
// so a parse always makes progress.
type Grammar struct {
	elems []elem
	sets  []*charset
	alts  [][]int32 // per rule, the start of each alternative
	names []string
	root  int
	// minLen is the fewest bytes each rule can match; suffix is, per
	// element position, the fewest bytes that finish its alternative
	// from there (the element included).
	minLen []int
	suffix []int32
}

// String writes the grammar in GBNF, for debugging and tests.
func (g *Grammar) String() string {
	var sb strings.Builder
	for r, alts := range g.alts {
		if len(alts) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "%s ::=", g.names[r])
		for i, a := range alts {
			if i > 0 {
				sb.WriteString(" |")
			}
			for p := a; g.elems[p].kind != eEnd; p++ {
				sb.WriteByte(' ')
				e := g.elems[p]
				if e.kind == eRef {
					sb.WriteString(g.names[e.arg])
				} else {
					sb.WriteString(formatSet(g.sets[e.arg]))
				}
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func formatSet(c *charset) string {
	if len(c.spans) == 1 && c.spans[0].lo == c.spans[0].hi {
		return fmt.Sprintf("%q", string(c.spans[0].lo))
	}
	var sb strings.Builder
	sb.WriteByte('[')
	for _, r := range c.spans {
		fmt.Fprintf(&sb, "%s", strings.Trim(fmt.Sprintf("%q", string(r.lo)), `"`))
		if r.hi > r.lo {
			fmt.Fprintf(&sb, "-%s", strings.Trim(fmt.Sprintf("%q", string(r.hi)), `"`))
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

// lowering turns expressions into alternatives of elements.
type lowering struct {
	b     *Builder
	g     *Grammar
	alts  [][][]elem // per rule, alternatives (without the end marker)
	def   []bool     // per rule, whether it has a body
	names []string
	size  int
	sets  map[*charset]int32
	// nullRule says which of the builder's rules match the empty string;
	// nonEmpty maps a rule to its copy without the empty string.
	nullRule []bool
	nonEmpty map[int]int
}

// Build lowers the rules reachable from root into a Grammar and checks it:
// every rule is defined, none is left-recursive, and root can finish.
func (b *Builder) Build(root *Expr) (*Grammar, error) {
	l := &lowering{b: b, sets: map[*charset]int32{}, g: &Grammar{}}
	l.names = append(l.names, b.names...)
	l.alts = make([][][]elem, len(b.names))
	l.def = make([]bool, len(b.names))
	l.nonEmpty = map[int]int{}
	l.nullRule = make([]bool, len(b.names))
	for changed := true; changed; {
		changed = false
		for r, body := range b.bodies {
			if body != nil && !l.nullRule[r] && l.nullable(body) {
				l.nullRule[r] = true
				changed = true
			}
		}
		if err := b.b.tick(); err != nil {
			return nil, err
		}
	}
	rootRule := l.newRule("root")
	if err := l.defineRule(rootRule, root); err != nil {
		return nil, err
	}
	for r := 0; r < len(b.bodies); r++ {
		if b.bodies[r] == nil {
			continue
		}
		if err := l.defineRule(r, b.bodies[r]); err != nil {
			return nil, err
		}
	}
	return l.finish(rootRule)
}

func (l *lowering) newRule(name string) int {
	l.names = append(l.names, name)
	l.alts = append(l.alts, nil)
	l.def = append(l.def, true)
	return len(l.alts) - 1
}

func (l *lowering) defineRule(r int, body *Expr) error {
	alts, err := l.altsOf(body, 0)
	if err != nil {
		return err
	}
	l.alts[r] = alts
	l.def[r] = true
	return nil
}

func (l *lowering) grow(n int) error {
	l.size += n
	if l.size > l.b.b.lim.MaxElements {
		return errorf(ErrLimit, "", "the grammar has more than %d elements (limit); simplify the schema or lower its counted repetitions", l.b.b.lim.MaxElements)
	}
	return l.b.b.tick()
}

// altsOf returns e as a list of alternatives.
func (l *lowering) altsOf(e *Expr, depth int) ([][]elem, error) {
	if depth > 4*l.b.b.lim.MaxDepth+64 {
		return nil, errorf(ErrLimit, "", "expression nesting deeper than %d", 4*l.b.b.lim.MaxDepth+64)
	}
	if e.op == opAlt {
		var out [][]elem
		for _, s := range e.subs {
			a, err := l.altsOf(s, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, a...)
		}
		return out, nil
	}
	seq, err := l.seqOf(e, depth+1, nil)
	if err != nil {
		return nil, err
	}
	return [][]elem{seq}, nil
}

// seqOf appends e, as a sequence of elements, to out.
func (l *lowering) seqOf(e *Expr, depth int, out []elem) ([]elem, error) {
	if depth > 4*l.b.b.lim.MaxDepth+64 {
		return nil, errorf(ErrLimit, "", "expression nesting deeper than %d", 4*l.b.b.lim.MaxDepth+64)
	}
	switch e.op {
	case opEmpty:
		return out, nil
	case opChars:
		if err := l.grow(1); err != nil {
			return nil, err
		}
		return append(out, elem{kind: eChars, arg: l.set(e.set)}), nil
	case opRef:
		if err := l.grow(1); err != nil {
			return nil, err
		}
		return append(out, elem{kind: eRef, arg: int32(e.rule)}), nil
	case opSeq:
		var err error
		for _, s := range e.subs {
			if out, err = l.seqOf(s, depth+1, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	case opAlt:
		alts, err := l.altsOf(e, depth+1)
		if err != nil {
			return nil, err
		}
		if len(alts) == 1 {
			return append(out, alts[0]...), nil
		}
		r := l.newRule("alt")
		l.alts[r] = alts
		if err := l.grow(1); err != nil {
			return nil, err
		}
		return append(out, elem{kind: eRef, arg: int32(r)}), nil
	case opRepeat:
		return l.repeat(e, depth, out)
	}
	return nil, fmt.Errorf("grammar: unknown expression kind %d", e.op)
}

// repeat lowers x{min,max}: min copies of x, then either a right-recursive
// star rule (S ::= x S | ε) or a chain of nested optionals
// (O1 ::= x O2 | ε, …), which a parser follows without ambiguity.
func (l *lowering) repeat(e *Expr, depth int, out []elem) ([]elem, error) {
	lim := l.b.b.lim.MaxRepeat
	if e.min < 0 || e.min > lim || e.max > lim {
		return nil, errorf(ErrLimit, "", "repetition count %d is above the limit of %d", max(e.min, e.max), lim)
	}
	if e.max >= 0 && e.max < e.min {
		return nil, errorf(ErrUnsatisfiable, "", "repetition {%d,%d} has its maximum below its minimum", e.min, e.max)
	}
	sub := e.subs[0]
	if l.nullable(sub) {
		// x{m,n} with x matching the empty string is x'{0,n}, x' being x
		// without it: the same strings, and no empty iterations for the
		// parser to loop on.
		var err error
		if sub, err = l.withoutEmpty(sub, depth+1); err != nil {
			return nil, err
		}
		e = &Expr{op: opRepeat, subs: []*Expr{sub}, min: 0, max: e.max}
	}
	unit, err := l.seqOf(sub, depth+1, nil)
	if err != nil {
		return nil, err
	}
	if len(unit) > 1 {
		r := l.newRule("item")
		l.alts[r] = [][]elem{unit}
		unit = []elem{{kind: eRef, arg: int32(r)}}
	}
	if len(unit) == 0 { // repeating the empty string
		return out, nil
	}
	if err := l.grow(e.min); err != nil {
		return nil, err
	}
	for range e.min {
		out = append(out, unit[0])
	}
	switch {
	case e.max < 0:
		r := l.newRule("star")
		l.alts[r] = [][]elem{{unit[0], {kind: eRef, arg: int32(r)}}, {}}
		if err := l.grow(3); err != nil {
			return nil, err
		}
		out = append(out, elem{kind: eRef, arg: int32(r)})
	case e.max > e.min:
		n := e.max - e.min
		if err := l.grow(3 * n); err != nil {
			return nil, err
		}
		first := len(l.alts)
		for range n {
			l.newRule("opt")
		}
		for k := 0; k < n; k++ {
			alt := []elem{unit[0]}
			if k+1 < n {
				alt = append(alt, elem{kind: eRef, arg: int32(first + k + 1)})
			}
			l.alts[first+k] = [][]elem{alt, {}}
		}
		out = append(out, elem{kind: eRef, arg: int32(first)})
	}
	return out, nil
}

func (l *lowering) set(c *charset) int32 {
	if i, ok := l.sets[c]; ok {
		return i
	}
	i := int32(len(l.g.sets))
	l.g.sets = append(l.g.sets, c)
	l.sets[c] = i
	return i
}

const inf = 1 << 30

// finish checks the rules, drops those that can never finish and lays the
// rest out.
func (l *lowering) finish(root int) (*Grammar, error) {
	n := len(l.alts)
	for r := 0; r < n; r++ {
		for _, a := range l.alts[r] {
			for _, e := range a {
				if e.kind == eRef && !l.def[e.arg] {
					return nil, errorf(ErrSyntax, l.names[r], "rule %s is used but never defined", l.names[e.arg])
				}
			}
		}
	}
	// Fewest bytes per rule, by iterating to a fixed point; a rule that
	// stays at inf can never finish.
	minLen := make([]int, n)
	for i := range minLen {
		minLen[i] = inf
	}
	altMin := func(a []elem) int {
		t := 0
		for _, e := range a {
			if e.kind == eChars {
				t += l.g.sets[e.arg].minLen()
			} else {
				t += minLen[e.arg]
			}
			if t >= inf {
				return inf
			}
		}
		return t
	}
	for changed := true; changed; {
		changed = false
		if err := l.b.b.tick(); err != nil {
			return nil, err
		}
		for r := 0; r < n; r++ {
			for _, a := range l.alts[r] {
				if m := altMin(a); m < minLen[r] {
					minLen[r] = m
					changed = true
				}
			}
		}
	}
	if minLen[root] >= inf {
		return nil, errorf(ErrUnsatisfiable, "", "no finite output can satisfy it (a required part is empty, contradictory or recursive without an end)")
	}
	// Drop alternatives that cannot finish; the parser then never enters a
	// dead end.
	for r := 0; r < n; r++ {
		kept := l.alts[r][:0]
		for _, a := range l.alts[r] {
			if altMin(a) < inf {
				kept = append(kept, a)
			}
		}
		l.alts[r] = kept
	}
	if err := l.checkLeftRecursion(minLen); err != nil {
		return nil, err
	}
	g := l.g
	g.names = l.names
	g.root = root
	g.minLen = minLen
	g.alts = make([][]int32, n)
	for r := 0; r < n; r++ {
		for _, a := range l.alts[r] {
			g.alts[r] = append(g.alts[r], int32(len(g.elems)))
			g.elems = append(g.elems, a...)
			g.elems = append(g.elems, elem{kind: eEnd})
		}
	}
	g.suffix = make([]int32, len(g.elems))
	for p := len(g.elems) - 1; p >= 0; p-- {
		switch e := g.elems[p]; e.kind {
		case eEnd:
			g.suffix[p] = 0
		case eChars:
			g.suffix[p] = int32(g.sets[e.arg].minLen()) + g.suffix[p+1]
		case eRef:
			g.suffix[p] = int32(minLen[e.arg]) + g.suffix[p+1]
		}
	}
	return g, nil
}

// checkLeftRecursion refuses a rule that can reach itself without matching
// a character first: expanding it would never end.
func (l *lowering) checkLeftRecursion(minLen []int) error {
	n := len(l.alts)
	// first[r] lists the rules r can start with.
	first := make([][]int32, n)
	for r := 0; r < n; r++ {
		for _, a := range l.alts[r] {
			for _, e := range a {
				if e.kind == eChars {
					break
				}
				first[r] = append(first[r], e.arg)
				if minLen[e.arg] != 0 {
					break
				}
			}
		}
	}
	const (
		unseen = iota
		active
		done
	)
	mark := make([]uint8, n)
	var path []int32
	var visit func(r int32) error
	visit = func(r int32) error {
		if err := l.b.b.tick(); err != nil {
			return err
		}
		mark[r] = active
		path = append(path, r)
		for _, s := range first[r] {
			switch mark[s] {
			case active:
				var cyc []string
				for i := len(path) - 1; i >= 0; i-- {
					cyc = append([]string{l.names[path[i]]}, cyc...)
					if path[i] == s {
						break
					}
				}
				cyc = append(cyc, l.names[s])
				return errorf(ErrUnsupported, l.names[s], "rule is left-recursive (%s): rewrite it so each repetition starts with a character", strings.Join(cyc, " -> "))
			case unseen:
				if err := visit(s); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		mark[r] = done
		return nil
	}
	for r := 0; r < n; r++ {
		if mark[r] == unseen {
			if err := visit(int32(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// nullable reports whether e matches the empty string (rules made by the
// lowering itself never are referenced from expressions and never are).
func (l *lowering) nullable(e *Expr) bool {
	switch e.op {
	case opEmpty:
		return true
	case opRef:
		return e.rule < len(l.nullRule) && l.nullRule[e.rule]
	case opSeq:
		for _, s := range e.subs {
			if !l.nullable(s) {
				return false
			}
		}
		return true
	case opAlt:
		for _, s := range e.subs {
			if l.nullable(s) {
				return true
			}
		}
		return false
	case opRepeat:
		return e.min == 0 || l.nullable(e.subs[0])
	}
	return false
}

// withoutEmpty returns an expression for the non-empty strings of e.
func (l *lowering) withoutEmpty(e *Expr, depth int) (*Expr, error) {
	if depth > 4*l.b.b.lim.MaxDepth+64 {
		return nil, errorf(ErrLimit, "", "expression nesting deeper than %d", 4*l.b.b.lim.MaxDepth+64)
	}
	if !l.nullable(e) {
		return e, nil
	}
	switch e.op {
	case opEmpty:
		return Alt(), nil
	case opRef:
		if r, ok := l.nonEmpty[e.rule]; ok {
			return &Expr{op: opRef, rule: r}, nil
		}
		r := l.newRule(l.names[e.rule] + "-nonempty")
		l.nonEmpty[e.rule] = r
		body, err := l.withoutEmpty(l.b.bodies[e.rule], depth+1)
		if err != nil {
			return nil, err
		}
		alts, err := l.altsOf(body, depth+1)
		if err != nil {
			return nil, err
		}
		l.alts[r] = alts
		return &Expr{op: opRef, rule: r}, nil
	case opSeq:
		// Every part may be empty: some part is the first non-empty one.
		var alts []*Expr
		for i, s := range e.subs {
			ne, err := l.withoutEmpty(s, depth+1)
			if err != nil {
				return nil, err
			}
			alts = append(alts, Seq(append([]*Expr{ne}, e.subs[i+1:]...)...))
		}
		return Alt(alts...), nil
	case opAlt:
		var alts []*Expr
		for _, s := range e.subs {
			ne, err := l.withoutEmpty(s, depth+1)
			if err != nil {
				return nil, err
			}
			alts = append(alts, ne)
		}
		return Alt(alts...), nil
	case opRepeat:
		if e.max == 0 {
			return Alt(), nil
		}
		sub, err := l.withoutEmpty(e.subs[0], depth+1)
		if err != nil {
			return nil, err
		}
		return Repeat(sub, 1, e.max), nil
	}
	return e, nil
}
