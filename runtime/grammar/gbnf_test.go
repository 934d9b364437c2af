package grammar

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestGBNFMatches(t *testing.T) {
	v := testVocab(t)
	for _, c := range []struct {
		src      string
		accept   []string
		reject   []string
		prefixes []string // valid but incomplete
	}{
		{src: `root ::= "hello" | "hi"`, accept: []string{"hello", "hi"}, reject: []string{"hey", "hello!", ""}, prefixes: []string{"h", "hel"}},
		{src: "root ::= [a-c]+ \"-\" [0-9]{2,3}\n", accept: []string{"a-12", "abc-123"}, reject: []string{"-12", "a-1", "a-1234", "d-12"}},
		{src: `root ::= [^"\\]* "!"`, accept: []string{"!", "xyz é!"}, reject: []string{`a"!`, `\!`}},
		{src: "root ::= greeting \" \" name  # comment\ngreeting ::= (\"hello\" |\n  \"hi\")\nname ::= [A-Z] [a-z]{1,3}\n", accept: []string{"hi Bob", "hello Al"}, reject: []string{"hi bob", "hi B", "hi Bobby"}},
		{src: `root ::= "a" root? "b"`, accept: []string{"ab", "aabb", "aaabbb"}, reject: []string{"aab", "ba"}},
		{src: `root ::= "\x41\u00e9\n\t\"" .`, accept: []string{"Aé\n\t\"z", "Aé\n\t\"日"}, reject: []string{"Aé\n\t\""}},
		{src: `root ::= x{,2} "." ` + "\nx ::= \"ab\"", accept: []string{".", "ab.", "abab."}, reject: []string{"ababab."}},
		{src: `root ::= "日本" [語]`, accept: []string{"日本語"}, reject: []string{"日本人"}},
	} {
		g := mustCompile(t, KindGBNF, c.src)
		ix := mustIndex(t, g, v)
		for _, s := range c.accept {
			if !matches(t, ix, s) {
				t.Errorf("%q should accept %q\n%s", c.src, s, g)
			}
		}
		for _, s := range c.reject {
			if matches(t, ix, s) {
				t.Errorf("%q should reject %q", c.src, s)
			}
		}
		for _, s := range c.prefixes {
			m := ix.NewMatcher()
			if ok, _ := m.AcceptBytes([]byte(s)); !ok || m.Complete() {
				t.Errorf("%q: %q should be a valid incomplete prefix", c.src, s)
			}
		}
	}
}

func TestGBNFErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		kind error
		want string
	}{
		{`root ::= "a`, ErrSyntax, "1:10: unterminated literal"},
		{"root ::= x\n", ErrSyntax, "rule x is used but never defined"},
		{`x ::= "a"`, ErrSyntax, "does not define the rule root"},
		{`root ::= root "a" | "b"`, ErrUnsupported, "left-recursive (root -> root)"},
		{"root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"z\"", ErrUnsupported, "left-recursive"},
		{`root ::= "a" root`, ErrUnsatisfiable, "no finite output"},
		{`root ::= [b-a]`, ErrSyntax, "backwards"},
		{`root ::= "a"{5,2}`, ErrSyntax, "maximum below its minimum"},
		{`root ::= "a"{100000}`, ErrLimit, "above the limit"},
		{`root ::= <[1234]>`, ErrUnsupported, "token references"},
		{"root ::= \"a\"\nroot ::= \"b\"", ErrSyntax, "defined twice"},
		{`root ::= ("a"`, ErrSyntax, "unclosed parenthesis"},
		{`root ::= "\q"`, ErrSyntax, "unknown escape"},
		{`root ::= "a" ::=`, ErrSyntax, "expected the end of the line"},
	} {
		_, err := Compile(KindGBNF, c.src, Limits{})
		if err == nil || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %v containing %q", c.src, err, c.kind, c.want)
		}
	}
}

func TestGBNFGrammarSizeLimit(t *testing.T) {
	_, err := Compile(KindGBNF, `root ::= [a-z]{2000}`, Limits{MaxElements: 1000})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("got %v, want a limit error", err)
	}
}

func TestGenerateCompletesWithinBudget(t *testing.T) {
	v := testVocab(t)
	g := mustCompile(t, KindGBNF, `root ::= "<" [a-z]* ">" ("," [0-9]+ ";")*`)
	ix := mustIndex(t, g, v)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		budget := 2 + rng.IntN(40)
		out, ok := generate(t, ix, rng, budget)
		if !ok || !matches(t, ix, out) {
			t.Fatalf("budget %d: output %q incomplete", budget, out)
		}
	}
}
