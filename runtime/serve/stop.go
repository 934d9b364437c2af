package serve

import (
	"bytes"
	"unicode/utf8"
)

// stopMatcher detokenizes one sequence incrementally and finds stop
// strings. It holds back text that could be the start of a stop string, and
// an unfinished UTF-8 sequence, until the next token decides.
type stopMatcher struct {
	stops   [][]byte
	maxStop int
	out     []byte // everything generated so far (up to a stop)
	emitted int    // bytes of out already released
}

func newStopMatcher(stops []string) stopMatcher {
	m := stopMatcher{}
	for _, s := range stops {
		m.stops = append(m.stops, []byte(s))
		m.maxStop = max(m.maxStop, len(s))
	}
	return m
}

// add appends a token's bytes and returns the text that is now safe to
// release. When a stop string completes, hit is its index and the returned
// text ends just before it; the matcher must not be used after a hit.
func (m *stopMatcher) add(b []byte) (release []byte, hit int) {
	from := max(0, len(m.out)-m.maxStop+1)
	m.out = append(m.out, b...)
	if len(m.stops) > 0 {
		// The earliest stop string that ends in the new bytes wins.
		best, bestAt := -1, len(m.out)
		for i, s := range m.stops {
			if j := bytes.Index(m.out[from:], s); j >= 0 && from+j < bestAt {
				best, bestAt = i, from+j
			}
		}
		if best >= 0 {
			release = m.out[m.emitted:bestAt]
			m.out = m.out[:bestAt]
			m.emitted = bestAt
			return release, best
		}
	}
	safe := len(m.out) - m.holdBack()
	if safe < m.emitted {
		safe = m.emitted
	}
	release = m.out[m.emitted:safe]
	m.emitted = safe
	return release, -1
}

// holdBack is how many trailing bytes must wait: the longest suffix that is
// a proper prefix of a stop string, or an unfinished UTF-8 sequence.
func (m *stopMatcher) holdBack() int {
	n := 0
	tail := m.out[m.emitted:]
	for _, s := range m.stops {
		for k := min(len(s)-1, len(tail)); k > n; k-- {
			if bytes.HasSuffix(tail, s[:k]) {
				n = k
				break
			}
		}
	}
	return max(n, partialRune(tail))
}

// partialRune returns the length of an incomplete UTF-8 sequence at the end
// of b (0 if b ends on a rune boundary or with invalid bytes that no
// continuation can fix).
func partialRune(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			need := 0
			switch {
			case c&0xE0 == 0xC0:
				need = 2
			case c&0xF0 == 0xE0:
				need = 3
			case c&0xF8 == 0xF0:
				need = 4
			}
			if need > k {
				return k
			}
			return 0
		}
	}
	return 0
}

// flush releases everything held back (the sequence ended without a stop
// string).
func (m *stopMatcher) flush() []byte {
	r := m.out[m.emitted:]
	m.emitted = len(m.out)
	return r
}
