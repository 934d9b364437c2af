package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// spmSpace is SentencePiece's visible space, U+2581.
const spmSpace = "▁"

// mergeSymbols splits s into its characters (a byte that is not valid UTF-8
// is a character of its own) and repeatedly merges the adjacent pair with
// the highest priority until no pair has one. priority receives the two
// symbols and their concatenation (a substring of s, so no allocation) and
// returns false when they must not merge. Ties go to the
// leftmost pair. It returns the final symbols as substrings of s.
func mergeSymbols(s string, priority func(left, right, merged string) (float64, bool)) []string {
	syms := make([]symbol, 0, len(s))
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		syms = append(syms, symbol{start: i, end: i + n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) == 0 {
		return nil
	}
	syms[len(syms)-1].next = -1
	q := &pairQueue{}
	consider := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		if p, ok := priority(s[a.start:a.end], s[b.start:b.end], s[a.start:b.end]); ok {
			q.push(pair{left: l, right: r, priority: p, size: b.end - a.start})
		}
	}
	for i := 0; i+1 < len(syms); i++ {
		consider(i, i+1)
	}
	for len(*q) > 0 {
		p := q.pop()
		l, r := &syms[p.left], &syms[p.right]
		if l.dead || r.dead || l.next != p.right || r.end-l.start != p.size {
			continue // stale: one side merged since this pair was queued
		}
		l.end = r.end
		l.next = r.next
		r.dead = true
		if r.next >= 0 {
			syms[r.next].prev = p.left
		}
		consider(l.prev, p.left)
		consider(p.left, l.next)
	}
	out := make([]string, 0, len(syms))
	for i := 0; i >= 0; i = syms[i].next {
		out = append(out, s[syms[i].start:syms[i].end])
	}
	return out
}

type symbol struct {
	start, end int
	prev, next int
	dead       bool
}

type pair struct {
	left, right int
	priority    float64
	size        int
}

// pairQueue is a binary max-heap on priority, then leftmost position,
// written out to avoid container/heap's interface boxing in this hot loop.
type pairQueue []pair

func (q pairQueue) before(i, j int) bool {
	if q[i].priority != q[j].priority {
		return q[i].priority > q[j].priority
	}
	return q[i].left < q[j].left
}

func (q *pairQueue) push(p pair) {
	*q = append(*q, p)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.before(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *pairQueue) pop() pair {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		best, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h.before(l, best) {
			best = l
		}
		if r < len(h) && h.before(r, best) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	*q = h
	return top
}

// mergeable reports whether a vocabulary entry may be produced by a merge or
// stand for a character: ordinary text pieces, not control or byte tokens.
func (t *Tokenizer) mergeable(id int) bool {
	switch t.types[id] {
	case TypeNormal, TypeUserDefined, TypeUndefined:
		return true
	}
	return false
}

// encodeSPM appends the SentencePiece tokens of text: spaces become "▁"
// (with a leading one when prefix), pieces merge by the score of the merged
// piece, and characters without a piece fall back to <0xNN> byte tokens.
func (t *Tokenizer) encodeSPM(ids []int, text string, prefix bool) ([]int, error) {
	if prefix {
		text = " " + text
	}
	s := strings.ReplaceAll(text, " ", spmSpace)
	syms := mergeSymbols(s, func(_, _, merged string) (float64, bool) {
		id, ok := t.index[merged]
		if !ok || !t.mergeable(id) {
			return 0, false
		}
		return float64(t.scores[id]), true
	})
	for _, sym := range syms {
		if id, ok := t.index[sym]; ok && t.mergeable(id) {
			ids = append(ids, id)
			continue
		}
		fallback := true
		for i := 0; i < len(sym); i++ {
			fallback = fallback && t.byteToken[sym[i]] >= 0
		}
		switch {
		case fallback:
			for i := 0; i < len(sym); i++ {
				ids = append(ids, t.byteToken[sym[i]])
			}
		case t.unk >= 0:
			ids = append(ids, t.unk)
		default:
			return nil, fmt.Errorf("tokenize: %q has no token, no byte fallback and the vocabulary has no unknown token", sym)
		}
	}
	return ids, nil
}
