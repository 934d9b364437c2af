package tokenizer

import (
	"container/heap"
	"fmt"
	"strings"
	"unicode/utf8"
)

// spmSpace is SentencePiece's visible space, U+2581.
const spmSpace = "▁"

// mergeSymbols splits s into its characters (a byte that is not valid UTF-8
// is a character of its own) and repeatedly merges the adjacent pair with
// the highest priority until no pair has one. priority receives the two
// symbols and returns false when they must not merge. Ties go to the
// leftmost pair. It returns the final symbols as substrings of s.
func mergeSymbols(s string, priority func(left, right string) (float64, bool)) []string {
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
		if p, ok := priority(s[a.start:a.end], s[b.start:b.end]); ok {
			heap.Push(q, pair{left: l, right: r, priority: p, size: b.end - a.start})
		}
	}
	for i := 0; i+1 < len(syms); i++ {
		consider(i, i+1)
	}
	for q.Len() > 0 {
		p := heap.Pop(q).(pair)
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

// pairQueue is a max-heap on priority, then leftmost position.
type pairQueue []pair

func (q pairQueue) Len() int { return len(q) }
func (q pairQueue) Less(i, j int) bool {
	if q[i].priority != q[j].priority {
		return q[i].priority > q[j].priority
	}
	return q[i].left < q[j].left
}
func (q pairQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pairQueue) Push(x any)   { *q = append(*q, x.(pair)) }
func (q *pairQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
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
	syms := mergeSymbols(s, func(l, r string) (float64, bool) {
		// l and r are adjacent in s, so the merged piece is l+r; the
		// concatenation allocates, but only for candidate pairs.
		id, ok := t.index[l+r]
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
