package grammar

import (
	"math/big"
	"strings"
)

// Number ranges as grammars: integers and decimals between bounds, written
// the way JSON writes them (no leading zeros, no exponent), so that every
// number the grammar allows lies within the bounds exactly.

// bound is one end of a range; a nil value is unbounded.
type bound struct {
	v    *big.Rat
	incl bool
}

func digitAny(n int) *Expr { return Repeat(Range('0', '9'), n, n) }

// sameLen matches the digit strings of len(a) digits between a and b
// (inclusive), a <= b.
func sameLen(a, b string) *Expr {
	if a == "" {
		return Empty()
	}
	if a[0] == b[0] {
		return Seq(Lit(a[:1]), sameLen(a[1:], b[1:]))
	}
	alts := []*Expr{Seq(Lit(a[:1]), atLeast(a[1:]))}
	if b[0]-a[0] > 1 {
		alts = append(alts, Seq(Range(rune(a[0]+1), rune(b[0]-1)), digitAny(len(a)-1)))
	}
	alts = append(alts, Seq(Lit(b[:1]), atMost(b[1:])))
	return Alt(alts...)
}

// atLeast matches the digit strings of len(s) digits >= s.
func atLeast(s string) *Expr {
	if s == "" {
		return Empty()
	}
	alts := []*Expr{Seq(Lit(s[:1]), atLeast(s[1:]))}
	if s[0] < '9' {
		alts = append(alts, Seq(Range(rune(s[0]+1), '9'), digitAny(len(s)-1)))
	}
	return Alt(alts...)
}

// atMost matches the digit strings of len(s) digits <= s.
func atMost(s string) *Expr {
	if s == "" {
		return Empty()
	}
	alts := []*Expr{Seq(Lit(s[:1]), atMost(s[1:]))}
	if s[0] > '0' {
		alts = append(alts, Seq(Range('0', rune(s[0]-1)), digitAny(len(s)-1)))
	}
	return Alt(alts...)
}

// natRange matches the canonical decimal integers in [lo, hi], 0 <= lo;
// a nil hi allows up to maxDigits digits.
func natRange(lo, hi *big.Int, maxDigits int) *Expr {
	ls := lo.String()
	var hs string
	if hi == nil {
		hs = strings.Repeat("9", max(maxDigits, len(ls)))
	} else {
		if hi.Cmp(lo) < 0 {
			return Alt()
		}
		hs = hi.String()
	}
	var alts []*Expr
	for n := len(ls); n <= len(hs); n++ {
		a, z := ls, hs
		if n > len(ls) {
			a = "1" + strings.Repeat("0", n-1)
		}
		if n < len(hs) {
			z = strings.Repeat("9", n)
		}
		alts = append(alts, sameLen(a, z))
	}
	return Alt(alts...)
}

// intRange matches the JSON integers in [lo, hi] (nil: unbounded).
func intRange(lo, hi *big.Int) *Expr {
	var alts []*Expr
	zero := big.NewInt(0)
	// Non-negative part.
	if hi == nil || hi.Sign() >= 0 {
		l := zero
		if lo != nil && lo.Sign() > 0 {
			l = lo
		}
		alts = append(alts, natRange(l, hi, maxJSONDigits))
	}
	// Negative part: "-" then a magnitude in [max(-hi, 1), -lo].
	if lo == nil || lo.Sign() < 0 {
		l := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			l = new(big.Int).Neg(hi)
		}
		var h *big.Int
		if lo != nil {
			h = new(big.Int).Neg(lo)
		}
		alts = append(alts, Seq(Lit("-"), natRange(l, h, maxJSONDigits)))
	}
	return Alt(alts...)
}

// fracLang is a set of digit strings (the part after a decimal point),
// split into its non-empty members (ne, nil when none) and whether the
// empty string is a member.
type fracLang struct {
	ne    *Expr
	empty bool
}

func (f fracLang) withPrefix(d string) *Expr {
	// d followed by a member of f: never empty.
	if f.ne == nil {
		if f.empty {
			return Lit(d)
		}
		return nil
	}
	if f.empty {
		return Seq(Lit(d), Opt(f.ne))
	}
	return Seq(Lit(d), f.ne)
}

func altNonNil(es ...*Expr) *Expr {
	var out []*Expr
	for _, e := range es {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return Alt(out...)
}

func allZero(d string) bool { return strings.Trim(d, "0") == "" }

// upTo matches 1..n digits.
func upTo(n int) *Expr {
	if n <= 0 {
		return nil
	}
	return Repeat(Range('0', '9'), 1, n)
}

// fracGE: digit strings s of at most n digits with 0.s >= 0.d (> when
// !incl).
func fracGE(d string, incl bool, n int) fracLang {
	if allZero(d) {
		if incl {
			return fracLang{ne: upTo(n), empty: true}
		}
		return fracLang{ne: nonZero(n)}
	}
	if n == 0 {
		return fracLang{}
	}
	var higher *Expr
	if d[0] < '9' {
		higher = Seq(Range(rune(d[0]+1), '9'), Repeat(Range('0', '9'), 0, n-1))
	}
	return fracLang{ne: altNonNil(higher, fracGE(d[1:], incl, n-1).withPrefix(d[:1]))}
}

// fracLE: digit strings s of at most n digits with 0.s <= 0.d (< when
// !incl).
func fracLE(d string, incl bool, n int) fracLang {
	if allZero(d) {
		if incl {
			if n == 0 {
				return fracLang{empty: true}
			}
			return fracLang{ne: Repeat(Lit("0"), 1, n), empty: true}
		}
		return fracLang{}
	}
	if n == 0 {
		return fracLang{empty: true}
	}
	var lower *Expr
	if d[0] > '0' {
		lower = Seq(Range('0', rune(d[0]-1)), Repeat(Range('0', '9'), 0, n-1))
	}
	return fracLang{ne: altNonNil(lower, fracLE(d[1:], incl, n-1).withPrefix(d[:1])), empty: true}
}

// nonZero: 1..n digits, not all zero.
func nonZero(n int) *Expr {
	if n <= 0 {
		return nil
	}
	return altNonNil(Seq(Range('1', '9'), Repeat(Range('0', '9'), 0, n-1)), fracLang{ne: nonZero(n - 1)}.withPrefix("0"))
}

// fracBetween: digit strings s of at most n digits with 0.lo <= 0.s <= 0.hi
// (strict per incl flags), 0.lo <= 0.hi.
func fracBetween(lo string, li bool, hi string, hiIncl bool, n int) fracLang {
	if allZero(lo) {
		le := fracLE(hi, hiIncl, n)
		if li {
			return le
		}
		// Above zero and at most hi: drop the empty string and all-zero
		// strings.
		return fracLang{ne: nonZeroLE(hi, hiIncl, n)}
	}
	if n == 0 {
		return fracLang{}
	}
	dl, dh := lo[0], byte('0')
	if hi != "" {
		dh = hi[0]
	}
	restH := ""
	if hi != "" {
		restH = hi[1:]
	}
	if dl == dh {
		return fracLang{ne: fracBetween(lo[1:], li, restH, hiIncl, n-1).withPrefix(lo[:1])}
	}
	var mid *Expr
	if dh-dl > 1 {
		mid = Seq(Range(rune(dl+1), rune(dh-1)), Repeat(Range('0', '9'), 0, n-1))
	}
	return fracLang{ne: altNonNil(fracGE(lo[1:], li, n-1).withPrefix(lo[:1]), mid, fracLE(restH, hiIncl, n-1).withPrefix(hi[:1]))}
}

// nonZeroLE: non-empty digit strings, not all zero, with 0.s <= 0.hi.
func nonZeroLE(hi string, incl bool, n int) *Expr {
	if allZero(hi) || n == 0 {
		return nil
	}
	var lower *Expr
	if hi[0] > '1' {
		lower = Seq(Range('1', rune(hi[0]-1)), Repeat(Range('0', '9'), 0, n-1))
	}
	var same *Expr
	if hi[0] == '0' {
		same = fracLang{ne: nonZeroLE(hi[1:], incl, n-1)}.withPrefix("0")
	} else {
		same = fracLE(hi[1:], incl, n-1).withPrefix(hi[:1])
		lower = altNonNil(lower, zeroThenNonZero(n))
	}
	return altNonNil(lower, same)
}

// zeroThenNonZero: "0" followed by a string that is not all zeros.
func zeroThenNonZero(n int) *Expr { return fracLang{ne: nonZero(n - 1)}.withPrefix("0") }

// splitRat writes a non-negative rational as its integer part and its
// fraction digits, when the fraction is a finite decimal of at most
// maxDigits digits.
func splitRat(r *big.Rat, maxDigits int) (*big.Int, string, bool) {
	ip := new(big.Int).Quo(r.Num(), r.Denom())
	frac := new(big.Rat).Sub(r, new(big.Rat).SetInt(ip))
	if frac.Sign() == 0 {
		return ip, "", true
	}
	s := frac.FloatString(maxDigits + 1)
	s = strings.TrimRight(s[strings.IndexByte(s, '.')+1:], "0")
	check, ok := new(big.Rat).SetString("0." + s)
	if !ok || check.Cmp(frac) != 0 || len(s) > maxDigits {
		return nil, "", false
	}
	return ip, s, true
}

// decRange matches the JSON decimals (no exponent, at most maxJSONDigits
// fraction digits) within lo and hi (nil value: unbounded). ok is false
// when a bound has more fraction digits than that.
func decRange(lo, hi bound) (*Expr, bool) {
	var alts []*Expr
	zero := new(big.Rat)
	// Non-negative part: [max(lo, 0), hi].
	if hi.v == nil || hi.v.Sign() > 0 || (hi.v.Sign() == 0 && hi.incl) {
		l := bound{v: zero, incl: true}
		if lo.v != nil && lo.v.Sign() >= 0 {
			l = lo
		}
		e, ok := nonNegDec(l, hi)
		if !ok {
			return nil, false
		}
		if e != nil {
			alts = append(alts, e)
		}
	}
	// Negative part: "-" then a magnitude m with 0 < m, within -hi and -lo.
	if lo.v == nil || lo.v.Sign() < 0 {
		l := bound{v: zero, incl: false}
		if hi.v != nil && hi.v.Sign() < 0 {
			l = bound{v: new(big.Rat).Neg(hi.v), incl: hi.incl}
		}
		h := bound{}
		if lo.v != nil {
			h = bound{v: new(big.Rat).Neg(lo.v), incl: lo.incl}
		}
		e, ok := nonNegDec(l, h)
		if !ok {
			return nil, false
		}
		if e != nil {
			alts = append(alts, Seq(Lit("-"), e))
		}
	}
	return Alt(alts...), true
}

// nonNegDec matches non-negative decimals I(.F)? within [lo, hi], lo >= 0.
func nonNegDec(lo, hi bound) (*Expr, bool) {
	li, lf, ok := splitRat(lo.v, maxJSONDigits)
	if !ok {
		return nil, false
	}
	var hiInt *big.Int
	hf := ""
	if hi.v != nil {
		if hi.v.Cmp(lo.v) < 0 || (hi.v.Cmp(lo.v) == 0 && !(hi.incl && lo.incl)) {
			return Alt(), true
		}
		hiInt, hf, ok = splitRat(hi.v, maxJSONDigits)
		if !ok {
			return nil, false
		}
	}
	n := maxJSONDigits
	withFrac := func(ip *Expr, f fracLang) *Expr {
		var alts []*Expr
		if f.empty {
			alts = append(alts, ip)
		}
		if f.ne != nil {
			alts = append(alts, Seq(ip, Lit("."), f.ne))
		}
		if len(alts) == 0 {
			return nil
		}
		return Alt(alts...)
	}
	exact := func(v *big.Int) *Expr { return Lit(v.String()) }
	var alts []*Expr
	if hiInt != nil && li.Cmp(hiInt) == 0 {
		alts = append(alts, withFrac(exact(li), fracBetween(lf, lo.incl, hf, hi.incl, n)))
	} else {
		alts = append(alts, withFrac(exact(li), fracGE(lf, lo.incl, n)))
		next := new(big.Int).Add(li, big.NewInt(1))
		var last *big.Int
		if hiInt != nil {
			last = new(big.Int).Sub(hiInt, big.NewInt(1))
		}
		if last == nil || last.Cmp(next) >= 0 {
			alts = append(alts, withFrac(natRange(next, last, maxJSONDigits), fracLang{ne: upTo(n), empty: true}))
		}
		if hiInt != nil {
			alts = append(alts, withFrac(exact(hiInt), fracLE(hf, hi.incl, n)))
		}
	}
	return altNonNil(alts...), true
}
