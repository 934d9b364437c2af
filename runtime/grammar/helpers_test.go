package grammar

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// byteTok is a test vocabulary: every single byte (ids 0..255), EOS (256),
// a special token (257) and some multi-byte tokens.
type byteTok struct{ multi [][]byte }

const (
	testEOS     = 256
	testSpecial = 257
)

var testMulti = []string{`{"`, `":`, `",`, `"}`, `true`, `null`, `false`, "  ", "\n  ", "12", "3.", "é", "\xe2\x82", "\xac", "日本", `\"`, `\u00`, "name", "abc", "-1", "e+", "]}", "[{", `"a`, "0", "00"}

func newByteTok() *byteTok {
	t := &byteTok{}
	for _, s := range testMulti {
		t.multi = append(t.multi, []byte(s))
	}
	return t
}

func (t *byteTok) VocabSize() int { return 258 + len(t.multi) }
func (t *byteTok) TokenBytes(id int) []byte {
	switch {
	case id < 256:
		return []byte{byte(id)}
	case id < 258:
		return nil
	}
	return t.multi[id-258]
}
func (t *byteTok) IsSpecial(id int) bool { return id == testEOS || id == testSpecial }
func (t *byteTok) EOS() []int            { return []int{testEOS} }

func testVocab(t testing.TB) *Vocab {
	t.Helper()
	v, err := NewVocab(newByteTok())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustCompile(t testing.TB, kind Kind, src string) *Grammar {
	t.Helper()
	g, err := Compile(kind, src, Limits{})
	if err != nil {
		t.Fatalf("compile %s %q: %v", kind, src, err)
	}
	return g
}

func mustIndex(t testing.TB, g *Grammar, v *Vocab) *Index {
	t.Helper()
	ix, err := NewIndex(g, v, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// generate draws tokens uniformly from the allowed set, as a model that
// writes noise would, until EOS or maxTokens; it reports the text and
// whether the output ended complete.
func generate(t testing.TB, ix *Index, rng *rand.Rand, maxTokens int) (string, bool) {
	t.Helper()
	m := ix.NewMatcher()
	var out []byte
	for i := 0; i < maxTokens; i++ {
		mask, err := m.Allowed(maxTokens - i)
		if err != nil {
			t.Fatal(err)
		}
		id := pick(mask, rng)
		if err := m.Accept(id); err != nil {
			t.Fatalf("accept %d after %q: %v", id, out, err)
		}
		if id == testEOS {
			return string(out), true
		}
		out = append(out, ix.v.token(id)...)
	}
	return string(out), m.Complete()
}

func pick(mask []uint64, rng *rand.Rand) int {
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	k := rng.IntN(n)
	for i, w := range mask {
		c := bits.OnesCount64(w)
		if k >= c {
			k -= c
			continue
		}
		for ; ; w &= w - 1 {
			if k == 0 {
				return i*64 + bits.TrailingZeros64(w)
			}
			k--
		}
	}
	panic("unreachable")
}

// matches reports whether s is a complete match of g.
func matches(t testing.TB, ix *Index, s string) bool {
	t.Helper()
	m := ix.NewMatcher()
	ok, err := m.AcceptBytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ok && m.Complete()
}
