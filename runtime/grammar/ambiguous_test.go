package grammar

import (
	"regexp"
	"strings"
	"testing"
)

// TestAmbiguousRepetitions covers nested and nullable repetitions, which
// a naive expansion loops on or multiplies: they must compile, stay small
// and agree with Go's regexp.
func TestAmbiguousRepetitions(t *testing.T) {
	v := testVocab(t)
	for _, p := range []string{`(a?){64}b`, `(a|aa|aaa){0,64}`, `((a*)*)*b`, `(?:(?:a{0,8}){0,8}){0,8}`, `(a*b*)*c`, `(|a)+`} {
		g, err := Compile(KindRegex, p, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		ix := mustIndex(t, g, v)
		re := regexp.MustCompile(`^(?:` + p + `)$`)
		for n := 0; n < 70; n += 7 {
			for _, tail := range []string{"", "b", "c"} {
				s := strings.Repeat("a", n) + tail
				if got, want := matches(t, ix, s), re.MatchString(s); got != want {
					t.Errorf("%s on %q: grammar %v, Go %v", p, s, got, want)
				}
			}
		}
		if len(ix.stacks) > 5000 {
			t.Errorf("%s: %d parse stacks", p, len(ix.stacks))
		}
	}
}
