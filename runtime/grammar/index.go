package grammar

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unsafe"
)

// Transition table markers.
const (
	tDead    int32 = -1
	tUnknown int32 = -2
)

// ctxParent is the frame below a truncated stack: the context it was cut
// from, unknown (see maskOf).
const ctxParent int32 = -3

// truncDepth is how many frames of each stack a context mask keeps: enough
// for a token to stay inside a string, a number or a literal.
const truncDepth = 4

// stackNode is one frame of a parse stack: the element position to match
// next (always a character set at the top; a return position below), the
// frame below (-1 at the bottom) and the fewest bytes that finish the
// stack. Stacks are interned, so equal stacks have equal ids.
type stackNode struct {
	pos, parent, dist int32
}

// pstate is an interned parse state: the stacks still alive and, inside a
// multi-byte character, what is known of it.
type pstate struct {
	stacks []int32
	accept bool // the output may end here
	// need is how many continuation bytes the current character still
	// needs (0 at a character boundary); lo and hi bound the next one.
	need   uint8
	lo, hi byte
	// prefix holds the character's bytes so far when its stacks disagree
	// on it; nil when every stack takes every character it may become.
	prefix []byte
	dist   int32
	next   []int32 // 256 transitions, filled lazily
	mask   *maskEntry
	// esc marks a state reached by a path that popped into the unknown
	// context below a truncated stack.
	esc bool
	// trunc is the state of the stacks cut to truncDepth frames (-2 until
	// computed); ctxDist bounds what the context cut off adds to dist.
	trunc   int32
	ctxDist int32
}

// maskKey names a cached mask: a state's own (budget -1) or one cut to a
// budget.
type maskKey struct{ state, budget int32 }

type maskEntry struct {
	bits    []uint64 // allowed tokens, EOS included when the output may end
	maxDist int32    // the most bytes any allowed token leaves to finish
	// uncertain lists, in a context mask, the tokens whose fate depends
	// on the context cut off; bits then holds the tokens allowed whatever
	// it is.
	uncertain []int32
}

// Index is a grammar paired with a vocabulary. It is safe for concurrent
// use; share one per (grammar, tokenizer) across requests so that masks
// computed once serve every later request.
type Index struct {
	g *Grammar
	v *Vocab

	mu        sync.Mutex
	lim       Limits
	stacks    []stackNode
	stackIdx  map[uint64]int32
	succ      [][]int32 // per stack: the stacks after its top character matched
	succAcc   []bool    // per stack: whether that also ends the output
	succEsc   []bool    // per stack: whether that pops into a cut-off context
	succDone  []bool
	truncOf   []int32 // per stack: the stack cut to truncDepth frames (-1 until known)
	escaped   bool    // set by settle on popping into a cut-off context
	states    []*pstate
	stateIdx  map[string]int32
	initial   int32
	seen      map[uint64]struct{} // (pos, parent) pairs one settle visited
	maskBytes int
	maskFIFO  []maskKey
	// forced holds masks cut to a token budget (see Allowed), by state
	// and budget.
	forced    map[maskKey]*maskEntry
	nextBytes int
	// fitYes, fitNo and fitSucc are what fits learnt (fit.go): per state,
	// the fewest tokens proven to finish the output, the most proven not
	// to, and the distinct states its tokens lead to.
	fitYes, fitNo map[int32]int32
	fitSucc       map[int32][]fitSucc
	fitBytes      int
	err           error
	keyBuf        []byte
	work          int
}

// NewIndex pairs g with v. lim bounds the states and masks it keeps.
func NewIndex(g *Grammar, v *Vocab, lim Limits) (*Index, error) {
	ix := &Index{g: g, v: v, lim: lim.withDefaults(), stackIdx: map[uint64]int32{}, stateIdx: map[string]int32{}, seen: map[uint64]struct{}{}, forced: map[maskKey]*maskEntry{},
		fitYes: map[int32]int32{}, fitNo: map[int32]int32{}, fitSucc: map[int32][]fitSucc{}}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var out []int32
	acc := false
	for _, a := range g.alts[g.root] {
		ix.settle(a, -1, &out, &acc, 0)
	}
	ix.initial = ix.state(out, acc, 0, 0, 0, nil, false)
	if ix.err != nil {
		return nil, ix.err
	}
	return ix, nil
}

// Err reports a limit the index ran into; an index in error should be
// dropped and rebuilt.
func (ix *Index) Err() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.err
}

// Stats reports how many parse states the index knows and how many of
// them have a cached mask.
func (ix *Index) Stats() (states, masks int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, st := range ix.states {
		if st.mask != nil {
			masks++
		}
	}
	return len(ix.states), masks
}

// Bytes estimates the memory the index holds.
func (ix *Index) Bytes() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.maskBytes + ix.nextBytes + ix.fitBytes + len(ix.stacks)*int(unsafe.Sizeof(stackNode{}))*3 + len(ix.states)*96
}

func (ix *Index) fail(err error) {
	if ix.err == nil {
		ix.err = err
	}
}

func (ix *Index) stack(pos, parent int32) int32 {
	key := uint64(uint32(pos))<<32 | uint64(uint32(parent+1))
	if id, ok := ix.stackIdx[key]; ok {
		return id
	}
	if len(ix.stacks) >= ix.lim.MaxStacks {
		ix.fail(errorf(ErrLimit, "", "the parse needs more than %d stacks (limit); the grammar is too ambiguous", ix.lim.MaxStacks))
		return -1
	}
	d := ix.g.suffix[pos]
	if parent >= 0 {
		d += ix.stacks[parent].dist
	}
	id := int32(len(ix.stacks))
	ix.stacks = append(ix.stacks, stackNode{pos: pos, parent: parent, dist: d})
	ix.succ = append(ix.succ, nil)
	ix.succAcc = append(ix.succAcc, false)
	ix.succEsc = append(ix.succEsc, false)
	ix.succDone = append(ix.succDone, false)
	ix.truncOf = append(ix.truncOf, -1)
	ix.stackIdx[key] = id
	return id
}

// maxSettle bounds the work of one settle, which a grammar with many
// nullable alternatives could otherwise make explode.
const maxSettle = 1 << 20

// settle continues a parse at element pos over the stack parent: it pops
// finished alternatives and expands rules until every resulting stack has
// a character set on top, appending those to out (acc is set when the
// whole output may end here).
func (ix *Index) settle(pos, parent int32, out *[]int32, acc *bool, depth int) {
	g := ix.g
	for {
		// What follows depends only on (pos, parent): a pair met before
		// in this expansion adds nothing.
		key := uint64(uint32(pos))<<32 | uint64(uint32(parent+1))
		if _, dup := ix.seen[key]; dup {
			return
		}
		ix.seen[key] = struct{}{}
		ix.work++
		if ix.work > maxSettle || depth > 10000 {
			ix.fail(errorf(ErrLimit, "", "expanding the grammar takes more than %d steps (limit); it is too ambiguous", maxSettle))
			return
		}
		e := g.elems[pos]
		switch e.kind {
		case eEnd:
			if parent == ctxParent {
				ix.escaped = true
				return
			}
			if parent < 0 {
				*acc = true
				return
			}
			p := ix.stacks[parent]
			pos, parent = p.pos, p.parent
		case eChars:
			if id := ix.stack(pos, parent); id >= 0 {
				*out = append(*out, id)
			}
			return
		case eRef:
			np := parent
			if g.elems[pos+1].kind != eEnd {
				// A call in tail position returns straight to the caller's
				// caller, so right recursion does not grow the stack.
				if np = ix.stack(pos+1, parent); np < 0 {
					return
				}
			}
			for _, a := range g.alts[e.arg] {
				ix.settle(a, np, out, acc, depth+1)
			}
			return
		}
	}
}

// successors returns what stack s becomes after its top character
// matched, whether that ends the output, and whether it pops into a
// cut-off context.
func (ix *Index) successors(s int32) ([]int32, bool, bool) {
	if !ix.succDone[s] {
		var out []int32
		acc := false
		ix.work = 0
		ix.escaped = false
		clear(ix.seen)
		n := ix.stacks[s]
		ix.settle(n.pos+1, n.parent, &out, &acc, 0)
		ix.succ[s], ix.succAcc[s], ix.succEsc[s], ix.succDone[s] = out, acc, ix.escaped, true
	}
	return ix.succ[s], ix.succAcc[s], ix.succEsc[s]
}

// truncate cuts stack s to its top truncDepth frames over ctxParent (a
// stack that short is itself).
func (ix *Index) truncate(s int32) int32 {
	if t := ix.truncOf[s]; t >= 0 {
		return t
	}
	var frames []int32
	cur := s
	for cur >= 0 && len(frames) < truncDepth {
		frames = append(frames, ix.stacks[cur].pos)
		cur = ix.stacks[cur].parent
	}
	t := s
	if cur >= 0 {
		t = ctxParent
		for i := len(frames) - 1; i >= 0 && t != -1; i-- {
			t = ix.stack(frames[i], t)
		}
	}
	if t >= 0 {
		ix.truncOf[s] = t
	}
	return t
}

// state interns a parse state.
func (ix *Index) state(stacks []int32, acc bool, need uint8, lo, hi byte, prefix []byte, esc bool) int32 {
	if ix.err != nil {
		return tDead
	}
	slices.Sort(stacks)
	stacks = slices.Compact(stacks)
	if len(stacks) == 0 && !acc && !esc {
		return tDead
	}
	k := ix.keyBuf[:0]
	for _, s := range stacks {
		k = binary.LittleEndian.AppendUint32(k, uint32(s))
	}
	k = append(k, 0xff, 0xff, 0xff, 0xff, need, lo, hi, byte(len(prefix)))
	k = append(k, prefix...)
	if acc {
		k = append(k, 1)
	}
	if esc {
		k = append(k, 2)
	}
	ix.keyBuf = k
	if id, ok := ix.stateIdx[string(k)]; ok {
		return id
	}
	if len(ix.states) >= ix.lim.MaxStates {
		ix.fail(errorf(ErrLimit, "", "the parse needs more than %d states (limit); the grammar is too large for constrained decoding", ix.lim.MaxStates))
		return tDead
	}
	st := &pstate{stacks: slices.Clone(stacks), accept: acc, need: need, lo: lo, hi: hi, esc: esc, trunc: tUnknown}
	if prefix != nil {
		st.prefix = slices.Clone(prefix)
	}
	st.dist = inf
	if need == 0 {
		if acc {
			st.dist = 0
		}
		for _, s := range st.stacks {
			st.dist = min(st.dist, ix.stacks[s].dist)
		}
	} else {
		for _, s := range st.stacks {
			top := ix.g.sets[ix.g.elems[ix.stacks[s].pos].arg]
			st.dist = min(st.dist, int32(need)+ix.stacks[s].dist-int32(top.minLen()))
		}
	}
	id := int32(len(ix.states))
	ix.states = append(ix.states, st)
	ix.stateIdx[string(k)] = id
	return id
}

// trans is the state after byte b, from the table or computed.
func (ix *Index) trans(s int32, b byte) int32 {
	st := ix.states[s]
	if st.next == nil {
		st.next = make([]int32, 256)
		for i := range st.next {
			st.next[i] = tUnknown
		}
		ix.nextBytes += 256 * 4
	}
	n := st.next[b]
	if n == tUnknown {
		n = ix.step(st, b)
		if ix.err != nil {
			return tDead
		}
		st.next[b] = n
	}
	return n
}

// utf8Lead describes a lead byte: how many continuation bytes follow and
// the range of the first one (which excludes overlong forms and
// surrogates).
func utf8Lead(b byte) (need uint8, lo, hi byte, ok bool) {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return 1, 0x80, 0xBF, true
	case b == 0xE0:
		return 2, 0xA0, 0xBF, true
	case b == 0xED:
		return 2, 0x80, 0x9F, true
	case b >= 0xE1 && b <= 0xEF:
		return 2, 0x80, 0xBF, true
	case b == 0xF0:
		return 3, 0x90, 0xBF, true
	case b >= 0xF1 && b <= 0xF3:
		return 3, 0x80, 0xBF, true
	case b == 0xF4:
		return 3, 0x80, 0x8F, true
	}
	return 0, 0, 0, false
}

// runeOf decodes a complete, valid UTF-8 sequence.
func runeOf(p []byte) rune {
	r := rune(p[0])
	switch len(p) {
	case 2:
		r &= 0x1F
	case 3:
		r &= 0x0F
	case 4:
		r &= 0x07
	}
	for _, c := range p[1:] {
		r = r<<6 | rune(c&0x3F)
	}
	return r
}

// runeSpan is the range of characters a partial sequence can still become,
// given that the next byte lies in [lo, hi] and need bytes remain.
func runeSpan(prefix []byte, need uint8, lo, hi byte) (rune, rune) {
	a := append(append([]byte(nil), prefix...), lo)
	z := append(append([]byte(nil), prefix...), hi)
	for i := 1; i < int(need); i++ {
		a = append(a, 0x80)
		z = append(z, 0xBF)
	}
	return runeOf(a), runeOf(z)
}

// step computes the state after byte b.
func (ix *Index) step(st *pstate, b byte) int32 {
	ix.work = 0
	if st.need == 0 {
		if b < 0x80 {
			return ix.advance(st.stacks, rune(b), true, st.esc)
		}
		need, lo, hi, ok := utf8Lead(b)
		if !ok {
			return tDead
		}
		return ix.partial(st.stacks, []byte{b}, need, lo, hi, st.esc)
	}
	if b < st.lo || b > st.hi {
		return tDead
	}
	if st.prefix == nil {
		// Every stack takes every character this can become.
		if st.need == 1 {
			return ix.advance(st.stacks, 0, false, st.esc)
		}
		return ix.state(st.stacks, false, st.need-1, 0x80, 0xBF, nil, st.esc)
	}
	p := append(append([]byte(nil), st.prefix...), b)
	if st.need == 1 {
		return ix.advance(st.stacks, runeOf(p), true, st.esc)
	}
	return ix.partial(st.stacks, p, st.need-1, 0x80, 0xBF, st.esc)
}

// partial is the state inside a character begun with prefix.
func (ix *Index) partial(stacks []int32, prefix []byte, need uint8, lo, hi byte, esc bool) int32 {
	rlo, rhi := runeSpan(prefix, need, lo, hi)
	var compat []int32
	uniform := true
	for _, s := range stacks {
		set := ix.g.sets[ix.g.elems[ix.stacks[s].pos].arg]
		any, all := set.overlap(rlo, rhi)
		if any {
			compat = append(compat, s)
			uniform = uniform && all
		}
	}
	if len(compat) == 0 && !esc {
		return tDead
	}
	if uniform {
		prefix = nil
	}
	return ix.state(compat, false, need, lo, hi, prefix, esc)
}

// advance is the state after a whole character r (any character, when
// check is false) from the given stacks.
func (ix *Index) advance(stacks []int32, r rune, check, esc bool) int32 {
	var out []int32
	acc := false
	for _, s := range stacks {
		if check && !ix.g.sets[ix.g.elems[ix.stacks[s].pos].arg].contains(r) {
			continue
		}
		succ, a, e := ix.successors(s)
		out = append(out, succ...)
		acc = acc || a
		esc = esc || e
		if ix.err != nil {
			return tDead
		}
	}
	return ix.state(out, acc, 0, 0, 0, nil, esc)
}

// walk follows a token's bytes from state s.
func (ix *Index) walk(s int32, tok []byte) int32 {
	for _, c := range tok {
		if s = ix.trans(s, c); s < 0 {
			return tDead
		}
	}
	return s
}

// maskOf returns the cached mask of state s, computing it if needed.
//
// A mask is built from the context mask of the state's stacks cut to
// their top truncDepth frames: tokens that stay within those frames are
// allowed or refused whatever lies below, so states that differ only
// deeper (the strings of two properties, say) share that work; only the
// tokens that reach below the cut are walked from the state itself.
func (ix *Index) maskOf(s int32) *maskEntry {
	st := ix.states[s]
	if st.mask != nil {
		return st.mask
	}
	if st.trunc == tUnknown {
		cut := make([]int32, 0, len(st.stacks))
		for _, x := range st.stacks {
			t := ix.truncate(x)
			cut = append(cut, t)
			st.ctxDist = max(st.ctxDist, ix.stacks[x].dist-ix.stacks[t].dist)
		}
		if ix.err != nil {
			return nil
		}
		st.trunc = ix.state(cut, false, st.need, st.lo, st.hi, st.prefix, false)
		if st.trunc < 0 { // no stacks: the output can only end
			st.trunc = tDead
		}
	}
	v := ix.v
	m := &maskEntry{bits: make([]uint64, v.words)}
	if st.trunc >= 0 {
		cm := ix.contextMask(st.trunc)
		if cm == nil {
			return nil
		}
		copy(m.bits, cm.bits)
		m.maxDist = cm.maxDist + st.ctxDist
		for _, t := range cm.uncertain {
			end := ix.walk(s, v.token(int(t)))
			if end < 0 {
				continue
			}
			m.bits[t/64] |= 1 << (t % 64)
			m.maxDist = max(m.maxDist, ix.states[end].dist)
		}
	}
	if st.accept && st.need == 0 {
		for i, w := range v.eosMask {
			m.bits[i] |= w
		}
	}
	if ix.err != nil {
		return nil
	}
	st.mask = m
	ix.cache(maskKey{s, -1}, m)
	return m
}

// contextMask is the mask of a cut state: bits holds the tokens allowed
// whatever the context below the cut, uncertain those that reach it.
func (ix *Index) contextMask(c int32) *maskEntry {
	st := ix.states[c]
	if st.mask != nil {
		return st.mask
	}
	v := ix.v
	m := &maskEntry{bits: make([]uint64, v.words)}
	for b := 0; b < 256; b++ {
		toks := v.byFirst[b]
		if len(toks) == 0 {
			continue
		}
		ns := ix.trans(c, byte(b))
		if ns < 0 {
			continue
		}
		for _, t := range toks {
			end := ix.walk(ns, v.token(int(t))[1:])
			switch {
			case end < 0:
			case ix.states[end].esc:
				m.uncertain = append(m.uncertain, t)
			default:
				m.bits[t/64] |= 1 << (t % 64)
				m.maxDist = max(m.maxDist, ix.states[end].dist)
			}
		}
	}
	if ix.err != nil {
		return nil
	}
	st.mask = m
	ix.cache(maskKey{c, -1}, m)
	return m
}

// cache records a computed mask and drops the oldest beyond the limit.
func (ix *Index) cache(k maskKey, m *maskEntry) {
	ix.maskBytes += maskSize(m)
	ix.maskFIFO = append(ix.maskFIFO, k)
	for ix.maskBytes > ix.lim.MaxMaskBytes && len(ix.maskFIFO) > 1 {
		old := ix.maskFIFO[0]
		ix.maskFIFO = ix.maskFIFO[1:]
		if old.budget >= 0 {
			if om := ix.forced[old]; om != nil {
				ix.maskBytes -= maskSize(om)
				delete(ix.forced, old)
			}
		} else if om := ix.states[old.state].mask; om != nil {
			ix.maskBytes -= maskSize(om)
			ix.states[old.state].mask = nil
		}
	}
}

func maskSize(m *maskEntry) int { return len(m.bits)*8 + len(m.uncertain)*4 }

// Matcher is one sequence's position in an Index. It implements
// runtime.Constraint; use it from one goroutine at a time.
type Matcher struct {
	ix    *Index
	state int32
	ended bool
}

// NewMatcher starts a sequence at the beginning of the output.
func (ix *Index) NewMatcher() *Matcher { return &Matcher{ix: ix, state: ix.initial} }

// Allowed returns the tokens that may come next, as a bitset over the
// vocabulary, given that at most remaining tokens (this one included) may
// still be generated: a token is allowed only if the output can still be
// finished after it, and an EOS written, within the tokens left, so that
// a sequence ends by EOS (finish_reason stop) rather than by its limit.
// EOS tokens are allowed exactly when the output is complete. The bitset is never empty (with nothing
// else left it holds the EOS tokens) and must not be modified; it is valid
// until the next call.
func (m *Matcher) Allowed(remaining int) ([]uint64, error) {
	ix := m.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.err != nil {
		return nil, ix.err
	}
	if m.ended {
		return ix.v.eosMask, nil
	}
	e := ix.maskOf(m.state)
	if e == nil {
		return nil, ix.err
	}
	// After this token: the bytes still to write, one token each at worst,
	// and the EOS.
	budget := int32(min(remaining-2, inf))
	if e.maxDist <= budget {
		return nonEmpty(e.bits, ix.v.eosMask), nil
	}
	// Near the end of the budget: keep only tokens after which the output
	// can still be finished in time, or, if none can, those that leave the
	// least to write. The same state meets the same budget again in later
	// requests, so these masks are cached too.
	key := maskKey{m.state, budget}
	if f := ix.forced[key]; f != nil {
		return f.bits, nil
	}
	out := make([]uint64, ix.v.words)
	best := int32(inf)
	st := ix.states[m.state]
	canEnd := st.accept && st.need == 0
	for pass := 0; pass < 2; pass++ {
		for w, word := range e.bits {
			for word != 0 {
				bit := word & -word
				word &^= bit
				t := w*64 + bits.TrailingZeros64(bit)
				if ix.v.isEOS[t] {
					continue
				}
				end := ix.walk(m.state, ix.v.token(t))
				if end < 0 {
					continue
				}
				d := ix.states[end].dist
				if pass == 0 {
					best = min(best, d)
					if d <= budget {
						out[w] |= bit
					}
				} else if d == best {
					out[w] |= bit
				}
			}
		}
		if ix.err != nil {
			return nil, ix.err
		}
		if best <= budget || best >= inf || canEnd {
			break
		}
		// One token per byte cannot finish in time; tokens of several
		// bytes may (the request was admitted on that, see Fits): keep
		// the tokens after which the output can be finished with room
		// for the EOS, else without it. Only if none can (or the search
		// is too costly) do the least-to-write tokens stand in.
		if ix.fitMask(m.state, e, budget, out) || ix.fitMask(m.state, e, budget+1, out) {
			break
		}
	}
	if canEnd {
		for i, w := range ix.v.eosMask {
			out[i] |= w
		}
	}
	out = nonEmpty(out, ix.v.eosMask)
	f := &maskEntry{bits: out}
	ix.forced[key] = f
	ix.cache(key, f)
	return out, nil
}

// fitMask sets in out the tokens of mask e after which the output can be
// complete within k tokens (fits) and reports whether there were any.
func (ix *Index) fitMask(s int32, e *maskEntry, k int32, out []uint64) bool {
	work := 0
	found := false
	for w, word := range e.bits {
		for word != 0 {
			bit := word & -word
			word &^= bit
			t := w*64 + bits.TrailingZeros64(bit)
			if ix.v.isEOS[t] {
				continue
			}
			end := ix.walk(s, ix.v.token(t))
			if end < 0 {
				continue
			}
			if ok, known := ix.fits(end, k, &work); !known {
				clear(out)
				return false
			} else if ok {
				out[w] |= bit
				found = true
			}
		}
	}
	return found
}

func nonEmpty(bits, eos []uint64) []uint64 {
	for _, w := range bits {
		if w != 0 {
			return bits
		}
	}
	return eos
}

// Accept advances past token id. A token the grammar does not allow is an
// error (the engine did not apply the mask).
func (m *Matcher) Accept(id int) error {
	ix := m.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.err != nil {
		return ix.err
	}
	if id < 0 || id >= ix.v.size {
		return fmt.Errorf("structured output: token %d is outside the vocabulary", id)
	}
	st := ix.states[m.state]
	if ix.v.isEOS[id] {
		if !m.ended && !(st.accept && st.need == 0) {
			return fmt.Errorf("structured output: end of sequence before the output is complete")
		}
		m.ended = true
		return nil
	}
	if m.ended {
		return fmt.Errorf("structured output: token %d after the end of the output", id)
	}
	tok := ix.v.token(id)
	if len(tok) == 0 {
		return fmt.Errorf("structured output: token %d stands for no text and cannot continue the output", id)
	}
	next := ix.walk(m.state, tok)
	if ix.err != nil {
		return ix.err
	}
	if next < 0 {
		return fmt.Errorf("structured output: token %d (%q) does not continue a valid output", id, tok)
	}
	m.state = next
	return nil
}

// Complete reports whether the output so far is a whole match.
func (m *Matcher) Complete() bool {
	ix := m.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.states[m.state]
	return m.ended || (st.accept && st.need == 0)
}

// AcceptBytes advances past raw bytes (not tokens); it reports false, and
// leaves the matcher unchanged, if they do not continue a valid output.
func (m *Matcher) AcceptBytes(b []byte) (bool, error) {
	ix := m.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.err != nil {
		return false, ix.err
	}
	next := ix.walk(m.state, b)
	if ix.err != nil {
		return false, ix.err
	}
	if next < 0 {
		return false, nil
	}
	m.state = next
	return true, nil
}

// Remaining is the fewest bytes that would complete the output.
func (m *Matcher) Remaining() int {
	ix := m.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return int(ix.states[m.state].dist)
}
