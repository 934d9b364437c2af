package grammar

import (
	"math/bits"
	"slices"
)

// Fitting an output into a token budget. A state's dist is the fewest
// bytes that finish the output; with a token for every byte the masks
// finish it within dist tokens at worst (each forced token leaves less to
// write), and within dist+1 with its EOS. Fewer tokens can do when tokens
// cover several bytes:
// "positive" may be one token. fits searches the states for the fewest
// tokens exactly, bounded by work: the tokens of a state lead to few
// distinct states (inside a string almost every token leads to the same
// one), tried best first, and what is learnt is kept per state for every
// later request.

// maxFitWork bounds the token walks of one search; a search that needs
// more gives up (the caller then relies on the one-token-per-byte bound).
const maxFitWork = 1 << 24

// fitSucc is a state reached by one token, with its dist.
type fitSucc struct{ state, dist int32 }

// fits reports whether the output can be complete (an accepting state,
// no EOS needed) within k more tokens from state s; known is false when
// the search ran out of work (or into a limit). Callers hold ix.mu.
func (ix *Index) fits(s, k int32, work *int) (ok, known bool) {
	if *work++; *work > maxFitWork {
		return false, false
	}
	st := ix.states[s]
	switch {
	case st.accept && st.need == 0:
		return true, true
	case k <= 0 || st.dist >= inf:
		return false, true
	case ix.v.allBytes && st.dist <= k:
		return true, true
	case ceilDiv(st.dist, ix.v.longest) > k:
		return false, true
	}
	if y, ok := ix.fitYes[s]; ok && y <= k {
		return true, true
	}
	if n, ok := ix.fitNo[s]; ok && k <= n {
		return false, true
	}
	succ, ok := ix.successorsByToken(s, work)
	if !ok {
		return false, false
	}
	for _, y := range succ {
		if ceilDiv(y.dist, ix.v.longest) > k-1 {
			break // sorted by dist: the rest are as far
		}
		ok, known := ix.fits(y.state, k-1, work)
		if !known {
			return false, false
		}
		if ok {
			if y, seen := ix.fitYes[s]; !seen || k < y {
				ix.fitYes[s] = k
			}
			return true, true
		}
	}
	ix.fitNo[s] = max(ix.fitNo[s], k)
	return false, true
}

// successorsByToken lists the distinct states the tokens allowed in s
// lead to, nearest to the end first (cached per state).
func (ix *Index) successorsByToken(s int32, work *int) ([]fitSucc, bool) {
	if succ, ok := ix.fitSucc[s]; ok {
		return succ, true
	}
	e := ix.maskOf(s)
	if e == nil {
		return nil, false
	}
	seen := map[int32]bool{}
	var succ []fitSucc
	for w, word := range e.bits {
		for word != 0 {
			bit := word & -word
			word &^= bit
			t := w*64 + bits.TrailingZeros64(bit)
			if ix.v.isEOS[t] {
				continue
			}
			tok := ix.v.token(t)
			if *work += len(tok); *work > maxFitWork {
				return nil, false
			}
			y := ix.walk(s, tok)
			if ix.err != nil {
				return nil, false
			}
			if y < 0 || seen[y] {
				continue
			}
			seen[y] = true
			succ = append(succ, fitSucc{y, ix.states[y].dist})
		}
	}
	slices.SortFunc(succ, func(a, b fitSucc) int { return int(a.dist - b.dist) })
	// What fits learns is bounded like the masks: past a quarter of their
	// budget it is forgotten and learnt again when needed.
	if ix.fitBytes += 64 + 8*len(succ); ix.fitBytes > ix.lim.MaxMaskBytes/4 {
		clear(ix.fitSucc)
		clear(ix.fitYes)
		clear(ix.fitNo)
		ix.fitBytes = 0
	}
	ix.fitSucc[s] = succ
	return succ, true
}

func ceilDiv(a, b int32) int32 { return (a + b - 1) / b }

// Fits reports whether constrained decoding completes an output from the
// start within n tokens (a trailing EOS not counted: an output complete
// when the tokens run out is valid, with finish_reason "length"). When it
// cannot, need is the fewest tokens that can, and exact says whether that
// is the true minimum for this vocabulary; when the search was too costly
// (exact false), need is the bound the masks guarantee: the shortest
// output's bytes, one token each.
func (ix *Index) Fits(n int) (ok bool, need int, exact bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	bound := int(ix.states[ix.initial].dist)
	if ix.err != nil {
		return false, bound, false
	}
	if ix.v.allBytes && n >= bound {
		return true, 0, true
	}
	work := 0
	if ok, known := ix.fits(ix.initial, int32(min(n, inf)), &work); ok {
		return true, 0, true
	} else if !known {
		return false, bound, false
	}
	// The fewest tokens that do; each step reuses what the last learnt,
	// and the work bound ends the search.
	for m := n + 1; m < bound || !ix.v.allBytes; m++ {
		ok, known := ix.fits(ix.initial, int32(min(m, inf)), &work)
		if !known {
			return false, bound, false
		}
		if ok {
			return false, m, true
		}
	}
	return false, bound, true
}
