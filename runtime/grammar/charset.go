package grammar

import (
	"sort"
	"unicode/utf8"
)

// maxRune is the largest code point a grammar can match. Surrogates
// (U+D800..U+DFFF) are never matched: they have no UTF-8 encoding.
const maxRune = utf8.MaxRune

// span is an inclusive range of code points.
type span struct{ lo, hi rune }

// charset is a set of code points: sorted, disjoint, non-adjacent spans,
// plus a bitmap of its ASCII members for the common case.
type charset struct {
	spans []span
	ascii [2]uint64
}

// newCharset builds a set from spans in any order, dropping surrogates
// and code points past maxRune.
func newCharset(in []span) *charset {
	var s []span
	for _, r := range in {
		if r.lo < 0 {
			r.lo = 0
		}
		if r.hi > maxRune {
			r.hi = maxRune
		}
		if r.lo > r.hi {
			continue
		}
		// Cut out the surrogate block.
		if r.lo < 0xD800 && r.hi > 0xDFFF {
			s = append(s, span{r.lo, 0xD7FF}, span{0xE000, r.hi})
			continue
		}
		if r.lo >= 0xD800 && r.lo <= 0xDFFF {
			r.lo = 0xE000
		}
		if r.hi >= 0xD800 && r.hi <= 0xDFFF {
			r.hi = 0xD7FF
		}
		if r.lo <= r.hi {
			s = append(s, r)
		}
	}
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	var out []span
	for _, r := range s {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			if r.hi > out[n-1].hi {
				out[n-1].hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	c := &charset{spans: out}
	for _, r := range out {
		for x := r.lo; x <= r.hi && x < 128; x++ {
			c.ascii[x>>6] |= 1 << (x & 63)
		}
	}
	return c
}

// negate returns the complement within the valid code points.
func (c *charset) negate() *charset {
	var out []span
	next := rune(0)
	for _, r := range c.spans {
		if r.lo > next {
			out = append(out, span{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= maxRune {
		out = append(out, span{next, maxRune})
	}
	return newCharset(out)
}

func (c *charset) empty() bool { return len(c.spans) == 0 }

func (c *charset) contains(r rune) bool {
	if r < 128 {
		return r >= 0 && c.ascii[r>>6]>>(r&63)&1 == 1
	}
	i := sort.Search(len(c.spans), func(i int) bool { return c.spans[i].hi >= r })
	return i < len(c.spans) && c.spans[i].lo <= r
}

// overlap reports whether c has a member in [lo, hi] and whether it holds
// all of [lo, hi] (surrogates aside).
func (c *charset) overlap(lo, hi rune) (any, all bool) {
	i := sort.Search(len(c.spans), func(i int) bool { return c.spans[i].hi >= lo })
	if i == len(c.spans) || c.spans[i].lo > hi {
		return false, false
	}
	// all: [lo, hi] minus surrogates lies inside c's spans. Spans are
	// non-adjacent except around the surrogate gap, so walk them.
	at := lo
	for ; i < len(c.spans) && at <= hi; i++ {
		r := c.spans[i]
		if r.lo > at {
			if !(at >= 0xD800 && r.lo == 0xE000 && at <= 0xDFFF) {
				return true, false
			}
		}
		at = r.hi + 1
	}
	return true, at > hi
}

// minLen is the fewest UTF-8 bytes a member takes.
func (c *charset) minLen() int {
	if len(c.spans) == 0 {
		return 0
	}
	return utf8.RuneLen(c.spans[0].lo)
}

// runeSet is a one-member set.
func runeSet(r rune) *charset { return newCharset([]span{{r, r}}) }
