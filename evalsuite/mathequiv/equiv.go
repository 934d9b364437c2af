// Package mathequiv decides whether two math answers are the same, for the
// tasks (MATH, MATH-500, AIME) whose reference graders ask sympy: lm-eval's
// is_equiv parses both answers with sympy's parse_latex and checks that
// simplify(a - b) == 0; the r1 graders of tt-inference-server's lm-eval
// fork add numeric and structural comparisons around the same sympy check;
// lm-eval's leaderboard_math_hard asks HuggingFace's math-verify.
//
// ttis does not carry a computer algebra system. SameValue parses the
// LaTeX or plain-text arithmetic these answers are written in (see parser)
// into an expression and evaluates both sides, in complex arithmetic, at
// fixed pseudo-random values of their symbols: two expressions whose values
// agree to 1e-9 (relative) at every point are taken as equal. For the
// rational, radical, trigonometric and polynomial answers of these sets,
// equality at several generic points is what simplify(a - b) == 0 decides
// (a non-zero rational function or polynomial vanishes at finitely many
// points); an answer the parser cannot read is not equal to anything, as
// a parse_latex failure makes is_equiv false. Equal adds the structures
// the answers use around single values: tuples and intervals (bracket kinds
// must match, elements compared in order), sets and bare lists (compared
// as multisets), unions of intervals, and equations (a = b against c = d,
// up to sign), after removing the wrappers that carry no value ($,
// \boxed, \text units, degrees, percent, \left/\right).
//
// The tests run both on the datasets' own gold answers written in the
// different forms the sets use (fractions as \frac, \dfrac, a/b and
// decimals; radicals; π; intervals; tuples; units in \text).
package mathequiv

import (
	"math"
	"math/cmplx"
	"regexp"
	"sort"
	"strings"
)

// tolerance is the relative difference below which two values are equal.
const tolerance = 1e-9

// points are the values symbols take, one column per symbol: generic
// (irrational-looking, positive, below 3) so that distinct expressions
// differ and square roots and logarithms stay real.
var points = [][]float64{
	{0.7318, 1.2947, 0.4412, 2.1723, 1.6061, 0.9187},
	{1.4142, 0.5772, 2.3026, 0.6931, 1.0986, 2.7183},
	{2.0794, 1.7320, 0.3183, 1.3863, 0.8660, 1.9459},
	{0.2624, 2.4849, 1.1447, 0.5493, 2.9957, 1.6487},
}

// SameValue reports whether a and b are one expression: both parse and
// their values agree at every sample point (see the package comment).
func SameValue(a, b string) bool { return SameValueTol(a, b, tolerance) }

// SameValueTol is SameValue with a given relative tolerance (the r1
// graders compare values with math.isclose(rel_tol=1e-4)).
func SameValueTol(a, b string, tol float64) bool {
	pa, err := parse(a)
	if err != nil {
		return false
	}
	pb, err := parse(b)
	if err != nil {
		return false
	}
	return sameNode(pa, pb, tol)
}

func sameNode(pa, pb node, tol float64) bool {
	set := map[string]bool{}
	pa.vars(set)
	pb.vars(set)
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	checked := 0
	for _, pt := range points {
		env := make(map[string]complex128, len(names))
		for i, n := range names {
			env[n] = complex(pt[i%len(pt)]+float64(i/len(pt)), 0)
		}
		va, vb := pa.eval(env), pb.eval(env)
		if cmplx.IsNaN(va) || cmplx.IsNaN(vb) {
			continue
		}
		if cmplx.IsInf(va) || cmplx.IsInf(vb) {
			if !(cmplx.IsInf(va) && cmplx.IsInf(vb) && sameInf(va, vb)) {
				return false
			}
			checked++
			continue
		}
		scale := math.Max(1, math.Max(cmplx.Abs(va), cmplx.Abs(vb)))
		if cmplx.Abs(va-vb) > tol*scale {
			return false
		}
		checked++
		if len(names) == 0 {
			break
		}
	}
	return checked > 0
}

func sameInf(a, b complex128) bool {
	return math.Signbit(real(a)) == math.Signbit(real(b)) && math.IsInf(real(a), 0) == math.IsInf(real(b), 0)
}

// Equal reports whether two answers are the same value or the same
// structure of values (see the package comment).
func Equal(a, b string) bool {
	a, b = Canon(a), Canon(b)
	if a == b {
		return a != ""
	}
	if a == "" || b == "" {
		return false
	}
	if la, ra, ok := equation(a); ok {
		if lb, rb, ok := equation(b); ok {
			return SameValue(la+"-("+ra+")", lb+"-("+rb+")") || SameValue(la+"-("+ra+")", "-("+lb+"-("+rb+"))")
		}
		if len(strings.TrimSpace(la)) <= 2 { // "x = 3" against "3"
			return Equal(ra, b)
		}
	} else if lb, rb, ok := equation(b); ok && len(strings.TrimSpace(lb)) <= 2 {
		return Equal(a, rb)
	}
	sa, sb := structure(a), structure(b)
	if sa.kind != sb.kind {
		return false
	}
	switch sa.kind {
	case single:
		return SameValue(a, b)
	case union:
		return sameOrdered(sa.items, sb.items, Equal)
	case ordered:
		if sa.open != sb.open || sa.close != sb.close {
			return false
		}
		return sameOrdered(sa.items, sb.items, SameValue)
	case unordered:
		return sameUnordered(sa.items, sb.items)
	}
	return false
}

func sameOrdered(a, b []string, eq func(x, y string) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !eq(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameUnordered(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
outer:
	for _, x := range a {
		for j, y := range b {
			if !used[j] && Equal(x, y) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

type kind int

const (
	single kind = iota
	ordered
	unordered
	union
)

type shape struct {
	kind        kind
	open, close byte
	items       []string
}

// structure classifies an answer: a union of intervals, a bracketed tuple
// or interval, a set, a bare comma list, or a single expression.
func structure(s string) shape {
	if parts := splitTop(s, `\cup`); len(parts) > 1 {
		return shape{kind: union, items: parts}
	}
	if strings.HasPrefix(s, `\{`) && strings.HasSuffix(s, `\}`) {
		return shape{kind: unordered, items: splitTop(s[2:len(s)-2], ",")}
	}
	if len(s) >= 2 && (s[0] == '(' || s[0] == '[') && (s[len(s)-1] == ')' || s[len(s)-1] == ']') && matchedOuter(s) {
		items := splitTop(s[1:len(s)-1], ",")
		if len(items) > 1 {
			return shape{kind: ordered, open: s[0], close: s[len(s)-1], items: items}
		}
	}
	if items := splitTop(s, ","); len(items) > 1 {
		return shape{kind: unordered, items: items}
	}
	return shape{kind: single}
}

// matchedOuter reports whether the first and last characters bracket the
// whole string (not "(1)+(2)").
func matchedOuter(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 && i != len(s)-1 {
				return false
			}
		}
	}
	return depth == 0
}

// splitTop splits s at sep outside brackets.
func splitTop(s, sep string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		if depth == 0 && strings.HasPrefix(s[i:], sep) {
			out = append(out, strings.TrimSpace(s[start:i]))
			i += len(sep) - 1
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// equation splits "l = r" with exactly one top-level "=".
func equation(s string) (string, string, bool) {
	parts := splitTop(s, "=")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

var (
	unitTextRe  = regexp.MustCompile(`\\(?:text|mbox|mathrm)\{\s*[A-Za-z][A-Za-z .]*\}(\^[23]|\^\{[23]\})?\s*$`)
	degreeRe    = regexp.MustCompile(`\^\s*\{?\\circ\}?`)
	textGroupRe = regexp.MustCompile(`\\(?:text|textbf|mathrm|mathbf|mbox)\{([^{}]*)\}`)
)

// Canon removes what carries no value: surrounding $ and \( \), a \boxed
// or \fbox wrapper, \displaystyle, trailing units in \text, degree marks,
// percent and dollar signs, \left/\right, and spacing commands; \dfrac
// and \tfrac become \frac and a trailing period goes.
func Canon(s string) string {
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimSpace(s)
		t = strings.TrimPrefix(strings.TrimSuffix(t, "$"), "$")
		t = strings.TrimPrefix(strings.TrimSuffix(t, `\)`), `\(`)
		t = strings.TrimPrefix(strings.TrimSuffix(t, `\]`), `\[`)
		if inner, ok := RemoveBoxed(t); ok && strings.HasPrefix(t, `\box`) {
			t = inner
		}
		if t == s {
			break
		}
		s = t
	}
	r := strings.NewReplacer(`\dfrac`, `\frac`, `\tfrac`, `\frac`, `\displaystyle`, "", `\left`, "", `\right`, "",
		`\!`, "", `\,`, "", `\;`, "", `\:`, "", `\%`, "", "%", "", `\$`, "", `\ `, " ")
	s = r.Replace(s)
	s = degreeRe.ReplaceAllString(s, "")
	if t := strings.TrimSpace(unitTextRe.ReplaceAllString(s, "")); t != "" {
		s = t
	}
	s = textGroupRe.ReplaceAllString(s, "$1")
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, ".")
	return strings.TrimSpace(s)
}
