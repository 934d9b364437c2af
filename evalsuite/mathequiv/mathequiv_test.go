package mathequiv

import (
	"encoding/json"
	"os"
	"testing"
)

// TestMinervaMatchesPython checks extraction and normalisation against the
// outputs of lm-eval's own functions (testdata/README).
func TestMinervaMatchesPython(t *testing.T) {
	raw, err := os.ReadFile("testdata/minerva_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		In           string `json:"in"`
		Boxed        string `json:"boxed"`
		Normalized   string `json:"normalized"`
		Unnormalized string `json:"unnormalized"`
		StripString  string `json:"strip_string"`
		StripOK      bool   `json:"strip_ok"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 30 {
		t.Fatalf("%d golden rows", len(rows))
	}
	for _, r := range rows {
		if got := BoxedAnswer(r.In); got != r.Boxed {
			t.Errorf("BoxedAnswer(%q) = %q, Python %q", r.In, got, r.Boxed)
		}
		if got := NormalizeFinalAnswer(r.In); got != r.Normalized {
			t.Errorf("NormalizeFinalAnswer(%q) = %q, Python %q", r.In, got, r.Normalized)
		}
		if got := UnnormalizedAnswer(r.In); got != r.Unnormalized {
			t.Errorf("UnnormalizedAnswer(%q) = %q, Python %q", r.In, got, r.Unnormalized)
		}
		got, ok := StripString(r.In)
		if ok != r.StripOK || (ok && got != r.StripString) {
			t.Errorf("StripString(%q) = %q, %v; Python %q, %v", r.In, got, ok, r.StripString, r.StripOK)
		}
	}
}

// TestGoldFormsAgree takes gold answers of MATH, MATH-500 and AIME rows and
// writes each in the other forms the sets (and models) use: every form
// must be Equal to the gold, and the nearby wrong answers must not.
func TestGoldFormsAgree(t *testing.T) {
	cases := []struct {
		gold  string
		same  []string
		wrong []string
	}{
		// MATH-500 test/precalculus/807: a point in polar coordinates.
		{`\left( 3, \frac{\pi}{2} \right)`, []string{`(3,\frac{\pi}{2})`, `(3, \pi/2)`, `\left(3,\dfrac{\pi}{2}\right)`, `$(3, \tfrac{\pi}{2})$`}, []string{`(3,\pi)`, `[3,\frac{\pi}{2}]`, `(\frac{\pi}{2},3)`}},
		// MATH-500 test/intermediate_algebra/1994: a fraction.
		{`\frac{14}{3}`, []string{`14/3`, `\dfrac{14}{3}`, `\frac{28}{6}`, `\boxed{\frac{14}{3}}`}, []string{`4.67`, `\frac{3}{14}`, `14`, `4\frac{2}{3}`}}, // parse_latex reads a mixed number as a product
		// MATH algebra (Level 5): an interval.
		{`[2,5)`, []string{`[2, 5)`, `\left[2,5\right)`}, []string{`[2,5]`, `(2,5)`, `[2,6)`}},
		// MATH intermediate algebra: a union of intervals.
		{`(-\infty,-2)\cup(3,\infty)`, []string{`(-\infty, -2) \cup (3, \infty)`}, []string{`(-\infty,-2]\cup(3,\infty)`, `(-\infty,-2)\cup(4,\infty)`}},
		// A radical.
		{`2\sqrt{3}`, []string{`\sqrt{12}`, `2 \cdot \sqrt{3}`, `\sqrt{3}\cdot 2`, `2\sqrt3`, `\frac{6}{\sqrt{3}}`}, []string{`3\sqrt{2}`, `\sqrt{6}`, `3.46`}},
		// π.
		{`6\pi`, []string{`6 \pi`, `\pi \cdot 6`, `\frac{12\pi}{2}`}, []string{`6`, `18.85`, `6\pi^2`}},
		// AIME 2024 I problem 1: an integer (the sets keep answers as text).
		{`204`, []string{`204.0`, `\boxed{204}`, `$204$`, `204.`}, []string{`240`, `20.4`, `2040`}},
		// A decimal and its fraction.
		{`0.25`, []string{`\frac{1}{4}`, `1/4`, `.25`}, []string{`0.24`, `\frac{1}{5}`}},
		// Units in \text and degrees.
		{`10\text{ cm}`, []string{`10`, `10 \text{cm}`}, []string{`100`}},
		{`30^\circ`, []string{`30`, `30^{\circ}`}, []string{`60`}},
		// An expression in a symbol.
		{`x^2+2x+1`, []string{`(x+1)^2`, `(1+x)(x+1)`, `y = (x+1)^2`}, []string{`x^2+1`, `(x-1)^2`}},
		// A set (order does not matter) and a bare list.
		{`\{1,2,3\}`, []string{`\{3, 2, 1\}`}, []string{`\{1,2\}`}},
		{`-2, 1`, []string{`1, -2`, `1,-2`}, []string{`-2`, `2, 1`}},
		// An equation.
		{`y = 2x + 3`, []string{`y=3+2x`, `2x + 3 = y`}, []string{`y = 2x - 3`}},
		// A tuple of fractions.
		{`\left( \frac{1}{2}, -\frac{3}{4} \right)`, []string{`(0.5,-0.75)`, `(1/2, -3/4)`}, []string{`(-0.75, 0.5)`}},
		// Trigonometric and logarithmic values.
		{`\frac{\sqrt{3}}{2}`, []string{`\sin(\pi/3)`, `\cos\frac{\pi}{6}`}, []string{`\frac{1}{2}`}},
		{`\log_2 8`, []string{`3`}, []string{`8`}},
		{`5!`, []string{`120`}, []string{`24`}},
		{`\binom{5}{2}`, []string{`10`}, []string{`5`}},
	}
	for _, c := range cases {
		for _, s := range c.same {
			if !Equal(c.gold, s) || !Equal(s, c.gold) {
				t.Errorf("%q and %q should be equal", c.gold, s)
			}
		}
		for _, s := range c.wrong {
			if Equal(c.gold, s) {
				t.Errorf("%q and %q should differ", c.gold, s)
			}
		}
	}
}

// TestSameValueIsStrict mirrors parse_latex's refusals: text, tuples and
// malformed input are equal to nothing.
func TestSameValueIsStrict(t *testing.T) {
	for _, c := range [][2]string{
		{`\text{Monday}`, `\text{Monday}`},
		{`(1,2)`, `(1,2)`},
		{`\frac{1}{`, `\frac{1}{`},
		{``, ``},
	} {
		if SameValue(c[0], c[1]) {
			t.Errorf("SameValue(%q, %q) must be false: sympy cannot parse it", c[0], c[1])
		}
	}
	if !SameValue(`\frac{1}{2}`, `0.5`) || SameValue(`0.333333`, `\frac{1}{3}`) {
		t.Error("exact values: 1/2 is 0.5, 1/3 is not 0.333333")
	}
	if !IsEquiv(NormalizeFinalAnswer(`\dfrac{3}{4}`), NormalizeFinalAnswer(`0.75`)) {
		t.Error(`normalised \dfrac{3}{4} and 0.75 are one value`)
	}
}

func TestHendrycksEquiv(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`\frac12`, `\frac{1}{2}`, true},
		{`0.5`, `\frac{1}{2}`, true},
		{`3/4`, `\dfrac{3}{4}`, true},
		{`5\text{ cm}`, `5`, true},
		{`a/b`, `a/b`, true}, // strip_string raises: the raw strings are compared
		{`a/b`, `b/a`, false},
		{`204`, `0204`, false},
	} {
		if got := HendrycksEquiv(c.a, c.b); got != c.want {
			t.Errorf("HendrycksEquiv(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func FuzzEqual(f *testing.F) {
	for _, s := range []string{`\frac{1}{2}`, `(1,2]`, `\sqrt[3]{-8}`, `x^2`, `\{1,2\}`, `a=b`, `\left(`, `2^{-`, `\log_`} {
		f.Add(s, `1`)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 256 || len(b) > 256 {
			return
		}
		_ = Equal(a, b)
		if Equal(a, b) != Equal(b, a) && a != "" && b != "" {
			// Equations against bare values are compared one way only
			// (x = 3 against 3); symmetry holds elsewhere.
			if _, _, ok := equation(Canon(a)); !ok {
				if _, _, ok := equation(Canon(b)); !ok {
					t.Errorf("Equal(%q, %q) is not symmetric", a, b)
				}
			}
		}
	})
}
