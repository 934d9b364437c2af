package tokenizer

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// naiveMerge is the merge loop written the slow, obvious way: rescan every
// adjacent pair after each merge and take the best, leftmost on ties.
func naiveMerge(s string, priority func(l, r, merged string) (float64, bool)) []string {
	var syms []string
	for _, r := range s {
		syms = append(syms, string(r))
	}
	for {
		best, bestP := -1, 0.0
		for i := 0; i+1 < len(syms); i++ {
			p, ok := priority(syms[i], syms[i+1], syms[i]+syms[i+1])
			if ok && (best < 0 || p > bestP) {
				best, bestP = i, p
			}
		}
		if best < 0 {
			return syms
		}
		syms[best] += syms[best+1]
		syms = append(syms[:best+1], syms[best+2:]...)
	}
}

// TestMergeMatchesNaive compares the heap-based merge with the naive loop
// on random alphabets, vocabularies (with many equal scores, to exercise
// the leftmost tie rule) and texts.
func TestMergeMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 1000; round++ {
		full := []rune("abcdé▁")
		alphabet := full[:2+rng.IntN(len(full)-1)]
		word := func(n int) string {
			var sb strings.Builder
			for i := 0; i < n; i++ {
				sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
			return sb.String()
		}
		scores := map[string]float64{}
		for i := 0; i < 30; i++ {
			scores[word(2+rng.IntN(4))] = float64(rng.IntN(5)) // few distinct scores: many ties
		}
		priority := func(_, _, merged string) (float64, bool) {
			p, ok := scores[merged]
			return p, ok
		}
		text := word(rng.IntN(40))
		got := mergeSymbols(text, priority)
		want := naiveMerge(text, priority)
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("text %q: heap merge %q, naive merge %q", text, got, want)
		}
	}
}
