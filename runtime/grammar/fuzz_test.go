package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzLimits keep each fuzz input cheap.
var fuzzLimits = Limits{MaxSourceBytes: 4096, MaxRepeat: 64, MaxElements: 20000, MaxStates: 4096, Timeout: time.Second}

// checkCompiled drives a few generations through whatever compiled: they
// must complete and be accepted again by a fresh matcher.
func checkCompiled(t *testing.T, g *Grammar) {
	v := testVocab(t)
	ix, err := NewIndex(g, v, fuzzLimits)
	if err != nil {
		if !errors.Is(err, ErrLimit) {
			t.Fatalf("index: %v", err)
		}
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	need := ix.NewMatcher().Remaining()
	if need > 200 {
		return
	}
	// run draws one output within budget tokens: it must complete and be
	// accepted again by a fresh matcher.
	run := func(budget int, why string) {
		m := ix.NewMatcher()
		var out []byte
		done := false
		for i := 0; i < budget && !done; i++ {
			mask, err := m.Allowed(budget - i)
			if err != nil {
				return // a runtime limit
			}
			id := pick(mask, rng)
			if err := m.Accept(id); err != nil {
				t.Fatalf("accept %d after %q: %v", id, out, err)
			}
			done = id == testEOS
			if !done {
				out = append(out, v.token(id)...)
			}
		}
		if !m.Complete() {
			t.Fatalf("output %q incomplete with %d tokens (%s)", out, budget, why)
		}
		if !matches(t, ix, string(out)) {
			t.Fatalf("output %q is not accepted again", out)
		}
	}
	for range 3 {
		run(need+20, fmt.Sprintf("a %d-byte minimum", need))
	}
	// The fewest tokens Fits counts are enough: the masks steer into them.
	if ok, least, exact := ix.Fits(0); !ok && exact && least < need {
		if ok, _, _ := ix.Fits(least); !ok {
			t.Fatalf("Fits(0) needs %d tokens, but Fits(%d) is false", least, least)
		}
		for range 3 {
			run(least, fmt.Sprintf("Fits' fewest, the shortest output being %d bytes", need))
		}
	}
}

func FuzzGBNF(f *testing.F) {
	for _, s := range []string{
		`root ::= "a" | [b-d]+ x` + "\nx ::= (\"y\" | \"z\"){1,3}",
		"root ::= [^\"\\\\] root?  # c\n",
		`root ::= "\u00e9" . "\x41"*`,
		"root ::= a\na ::= \"(\" a? \")\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) { compileAndCheck(t, KindGBNF, src) })
}

func FuzzSchema(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) { compileAndCheck(t, KindJSONSchema, src) })
}

// compileAndCheck compiles any source: it fails with a *grammar.Error or
// compiles to a grammar whose outputs check out.
func compileAndCheck(t *testing.T, kind Kind, src string) {
	g, err := Compile(kind, src, fuzzLimits)
	if err != nil {
		var ge *Error
		if !errors.As(err, &ge) {
			t.Fatalf("error %v is not a *grammar.Error", err)
		}
		return
	}
	checkCompiled(t, g)
}

// FuzzRegex checks the grammar of any pattern Go accepts against Go's own
// engine on the fuzzer's string.
func FuzzRegex(f *testing.F) {
	f.Add(`a+b?`, "aab")
	f.Add(`(x|yz){1,3}[^q]`, "yzxa")
	f.Add(`(?i)é.`, "É\n")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(s) {
			return // outputs are valid UTF-8; Go reads bad bytes as U+FFFD
		}
		g, err := Compile(KindRegex, pattern, fuzzLimits)
		if err != nil {
			return
		}
		re, err := regexp.Compile(`^(?:` + pattern + `)$`)
		if err != nil {
			return
		}
		ix, err := NewIndex(g, testVocab(t), fuzzLimits)
		if err != nil {
			return
		}
		m := ix.NewMatcher()
		ok, err := m.AcceptBytes([]byte(s))
		if err != nil {
			return
		}
		if got, want := ok && m.Complete(), re.MatchString(s); got != want {
			t.Fatalf("pattern %q on %q: grammar %v, Go %v", pattern, s, got, want)
		}
	})
}
