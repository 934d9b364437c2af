package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// fewestTokens is the fewest tokens of v that spell s exactly (dynamic
// programming over its prefixes), or -1: a reference for Fits that knows
// nothing of parse states.
func fewestTokens(v *Vocab, s string) int {
	dp := make([]int, len(s)+1)
	for i := 1; i <= len(s); i++ {
		dp[i] = -1
	}
	for i := 0; i < len(s); i++ {
		if dp[i] < 0 {
			continue
		}
		for id := 0; id < v.Size(); id++ {
			tok := v.token(id)
			if len(tok) == 0 || len(tok) > len(s)-i || string(tok) != s[i:i+len(tok)] {
				continue
			}
			if j := i + len(tok); dp[j] < 0 || dp[i]+1 < dp[j] {
				dp[j] = dp[i] + 1
			}
		}
	}
	return dp[len(s)]
}

// TestFitsChoices checks Fits against the fewest tokens that spell any of
// the choices, for every budget around it.
func TestFitsChoices(t *testing.T) {
	v := testVocab(t)
	for _, choices := range [][]string{
		{"false", "name"},     // one token each
		{"abcname", "xyzzy"},  // two tokens, or five
		{"xyz"},               // bytes only
		{"日本", "no"},          // a two-character token against two bytes
		{"{\"a", "truefalse"}, // "{\"" + "a", or "true" + "false"
		{"12.5", "-1e+3"},
	} {
		want := -1
		for _, c := range choices {
			if n := fewestTokens(v, c); n >= 0 && (want < 0 || n < want) {
				want = n
			}
		}
		src, _ := json.Marshal(choices)
		ix := mustIndex(t, mustCompile(t, KindChoice, string(src)), v)
		for n := 0; n <= want+3; n++ {
			ok, need, exact := ix.Fits(n)
			if ok != (n >= want) {
				t.Errorf("choices %q: Fits(%d) = %v, want %v (fewest tokens %d)", choices, n, ok, n >= want, want)
			}
			if !ok && (need != want || !exact) {
				t.Errorf("choices %q: Fits(%d) needs %d (exact %v), want %d", choices, n, need, exact, want)
			}
		}
	}
}

// TestFitsGenerates takes the fewest tokens Fits admits for each schema
// and pattern and checks that noise drawn from the masks with exactly
// that budget (and a little more) always completes and validates: the
// masks steer into the multi-byte tokens Fits counted on.
func TestFitsGenerates(t *testing.T) {
	v := testVocab(t)
	type src struct {
		kind Kind
		text string
	}
	var srcs []src
	for _, s := range testSchemas[:8] {
		srcs = append(srcs, src{KindJSONSchema, s})
	}
	srcs = append(srcs, src{KindRegex, `(name|abc){2}[0-9]{2}`}, src{KindRegex, `"(true|false|null)"`}, src{KindJSONObject, ""},
		// Leaving the least to write is not enough here: "x" leaves as
		// little as "abc" but cannot finish in one more token.
		src{KindChoice, `["abcname","xyzzy"]`}, src{KindChoice, `["truefalse","wxyz"]`})
	for i, s := range srcs {
		ix := mustIndex(t, mustCompile(t, s.kind, s.text), v)
		dist := ix.NewMatcher().Remaining()
		least := -1
		for n := 0; n <= dist; n++ {
			if ok, need, exact := ix.Fits(n); ok {
				least = n
				break
			} else if !exact || need <= n {
				t.Fatalf("%s %s: Fits(%d) = false, need %d, exact %v", s.kind, s.text, n, need, exact)
			}
		}
		if least < 0 {
			t.Fatalf("%s %s: no budget up to the shortest output's %d bytes fits", s.kind, s.text, dist)
		}
		if ok, need, _ := ix.Fits(least - 1); least > 0 && (ok || need != least) {
			t.Errorf("%s %s: Fits(%d) = %v, need %d, want false, %d", s.kind, s.text, least-1, ok, need, least)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		for k := 0; k < 30; k++ {
			budget := least + k%4
			out, ok := generate(t, ix, rng, budget)
			if !ok || !matches(t, ix, out) {
				t.Fatalf("%s %s with %d tokens (fewest %d, shortest output %d bytes): %q incomplete", s.kind, s.text, budget, least, dist, out)
			}
			if s.kind == KindJSONSchema {
				if err := validate(t, validator(t, s.text), out); err != nil {
					t.Fatalf("%s: %s: %v", s.text, out, err)
				}
			}
		}
	}
}

// TestFitsBytesOnly: with one token per byte the fewest tokens are the
// shortest output's bytes.
func TestFitsBytesOnly(t *testing.T) {
	v, err := NewVocab(&byteTok{})
	if err != nil {
		t.Fatal(err)
	}
	ix := mustIndex(t, mustCompile(t, KindJSONSchema, testSchemas[0]), v)
	dist := ix.NewMatcher().Remaining()
	if ok, need, exact := ix.Fits(dist - 1); ok || need != dist || !exact {
		t.Errorf("Fits(%d) = %v, %d, %v; want false, %d, true", dist-1, ok, need, exact, dist)
	}
	if ok, _, _ := ix.Fits(dist); !ok {
		t.Errorf("Fits(%d) = false", dist)
	}
}
