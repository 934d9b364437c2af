package grammar

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestMaskIsExact checks a mask against a brute-force walk of every token:
// a token is allowed exactly when its bytes continue a valid output (with
// a budget large enough not to matter), EOS exactly when the output may
// end.
func TestMaskIsExact(t *testing.T) {
	v := testVocab(t)
	g := mustCompile(t, KindJSONSchema, testSchemas[3])
	ix := mustIndex(t, g, v)
	rng := rand.New(rand.NewPCG(3, 4))
	for run := 0; run < 20; run++ {
		m := ix.NewMatcher()
		var prefix []byte
		for step := 0; step < 60; step++ {
			mask, err := m.Allowed(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			for id := 0; id < v.Size(); id++ {
				got := mask[id/64]>>(id%64)&1 == 1
				var want bool
				switch {
				case id == testEOS:
					want = m.Complete()
				case id == testSpecial:
					want = false
				default:
					probe := ix.NewMatcher()
					ok, _ := probe.AcceptBytes(append(append([]byte(nil), prefix...), v.token(id)...))
					want = ok
				}
				if got != want {
					t.Fatalf("after %q token %d (%q): allowed %v, want %v", prefix, id, v.token(id), got, want)
				}
			}
			id := pick(mask, rng)
			if id == testEOS {
				break
			}
			if err := m.Accept(id); err != nil {
				t.Fatal(err)
			}
			prefix = append(prefix, v.token(id)...)
		}
	}
}

func TestAcceptRefusesWhatTheMaskForbids(t *testing.T) {
	v := testVocab(t)
	ix := mustIndex(t, mustCompile(t, KindChoice, `["ab"]`), v)
	m := ix.NewMatcher()
	if err := m.Accept('x'); err == nil {
		t.Error("accepted x")
	}
	if err := m.Accept(testEOS); err == nil {
		t.Error("accepted EOS before the output was complete")
	}
	if err := m.Accept(testSpecial); err == nil {
		t.Error("accepted a special token")
	}
	for _, id := range []int{'a', 'b', testEOS} {
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if mask, _ := m.Allowed(10); mask[testEOS/64]>>(testEOS%64)&1 != 1 {
		t.Error("EOS not allowed after the end")
	}
}

// TestRegexAgreesWithGo compares the grammar of a pattern with Go's own
// regexp engine on outputs the grammar generates and on random strings.
func TestRegexAgreesWithGo(t *testing.T) {
	v := testVocab(t)
	for _, p := range []string{
		`[a-c]+x?`, `(ab|a)(bc|c)`, `a{2,4}b*`, `[^a-z\n]{1,3}`, `(?i)x[0-9]`, `\d+\.\d{2}`, `é|[日本]+`, `(a|b|)c`, `.{0,2}z`,
	} {
		ix := mustIndex(t, mustCompile(t, KindRegex, p), v)
		re := regexp.MustCompile(`^(?:` + p + `)$`)
		rng := rand.New(rand.NewPCG(5, 6))
		for k := 0; k < 100; k++ {
			out, ok := generate(t, ix, rng, 40)
			if !ok || !re.MatchString(out) {
				t.Fatalf("pattern %s generated %q, which Go does not match", p, out)
			}
		}
		alphabet := []rune("abcxyz019.é日\n")
		for k := 0; k < 500; k++ {
			var sb strings.Builder
			for n := rng.IntN(6); n > 0; n-- {
				sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
			s := sb.String()
			if got, want := matches(t, ix, s), re.MatchString(s); got != want {
				t.Fatalf("pattern %s on %q: grammar %v, Go %v", p, s, got, want)
			}
		}
	}
}

func TestIndexConcurrentUse(t *testing.T) {
	v := testVocab(t)
	ix := mustIndex(t, mustCompile(t, KindJSONSchema, testSchemas[0]), v)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for k := 0; k < 10; k++ {
				if out, ok := generate(t, ix, rng, 120); !ok {
					t.Errorf("incomplete %q", out)
				}
			}
		}(uint64(w))
	}
	wg.Wait()
}

func TestStateLimit(t *testing.T) {
	v := testVocab(t)
	g := mustCompile(t, KindGBNF, `root ::= [a-z]{0,500}`)
	ix, err := NewIndex(g, v, Limits{MaxStates: 50})
	if err != nil {
		t.Fatal(err)
	}
	m := ix.NewMatcher()
	var lastErr error
	for i := 0; i < 100 && lastErr == nil; i++ {
		if _, lastErr = m.Allowed(1000); lastErr == nil {
			lastErr = m.Accept('a')
		}
	}
	if lastErr == nil || !strings.Contains(lastErr.Error(), "more than 50 states") || ix.Err() == nil {
		t.Fatalf("got %v, want the state limit", lastErr)
	}
}

func TestMaskCacheEviction(t *testing.T) {
	v := testVocab(t)
	g := mustCompile(t, KindGBNF, `root ::= [a-z]{0,40}`)
	ix, err := NewIndex(g, v, Limits{MaxMaskBytes: 10 * len(v.eosMask) * 8})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for k := 0; k < 5; k++ {
		if _, ok := generate(t, ix, rng, 50); !ok {
			t.Fatal("incomplete")
		}
	}
	if ix.maskBytes > 10*len(v.eosMask)*8 {
		t.Errorf("mask cache holds %d bytes, above its limit", ix.maskBytes)
	}
}
