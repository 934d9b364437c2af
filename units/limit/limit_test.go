package limit

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]Mode{"smoke": Smoke, " ci-commit ": CICommit, "ci-nightly": CINightly, "ci-long": CILong, "full": Full, "smoke-test": Smoke} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "nightly", "SMOKE", "weekly"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := Parse("weekly"); err == nil || err.Error() != `limit "weekly": want smoke, ci-commit, ci-nightly, ci-long or full` {
		t.Errorf("message: %v", err)
	}
}

func TestEvalKeysAndDefaults(t *testing.T) {
	want := map[Mode][2]string{Smoke: {"smoke_test", "3"}, CICommit: {"ci_commit", "10"}, CINightly: {"ci_nightly", ""}, CILong: {"ci_long", ""}, Full: {"", ""}}
	for _, m := range All() {
		if got := [2]string{m.EvalKey(), m.DefaultEvalLimit()}; got != want[m] {
			t.Errorf("%s: %v, want %v", m, got, want[m])
		}
	}
	if len(want) != len(All()) {
		t.Errorf("All() has %d modes, the table %d", len(All()), len(want))
	}
}

func TestParseDocs(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want int
	}{{"", 10, 10}, {"full", 10, 10}, {"none", 10, 10}, {"3", 10, 3}, {"30", 10, 10}, {"0.25", 10, 3}, {"0.001", 10, 1}, {" 7 ", 10, 7}}
	for _, tt := range tests {
		d, err := ParseDocs(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Apply(tt.n); got != tt.want {
			t.Errorf("limit %q of %d = %d, want %d", tt.in, tt.n, got, tt.want)
		}
	}
	for bad, msg := range map[string]string{
		"-1":   `limit "-1": want a count (a whole number ≥ 1) or a fraction in (0, 1), got -1`,
		"0":    `limit "0": want a count (a whole number ≥ 1) or a fraction in (0, 1), got 0`,
		"2.5":  `limit "2.5": want a count (a whole number ≥ 1) or a fraction in (0, 1), got 2.5`,
		"abc":  `limit "abc": want a count, a fraction in (0,1), or full`,
		"NaN":  `limit "NaN": want a count (a whole number ≥ 1) or a fraction in (0, 1), got NaN`,
		"+Inf": `limit "+Inf": want a count (a whole number ≥ 1) or a fraction in (0, 1), got +Inf`,
		"1e12": `limit "1e12": want a count (a whole number ≥ 1) or a fraction in (0, 1), got 1e+12`,
	} {
		if _, err := ParseDocs(bad); err == nil || err.Error() != msg {
			t.Errorf("ParseDocs(%q): %v, want %s", bad, err, msg)
		}
	}
}

// A unit's or the catalog's number reads as the same Docs as its text.
func TestDocsOf(t *testing.T) {
	for v, want := range map[float64]Docs{0.5: {Fraction: 0.5}, 1: {Count: 1}, 250: {Count: 250}} {
		got, err := DocsOf(v)
		if err != nil || got != want {
			t.Errorf("DocsOf(%v) = %+v, %v; want %+v", v, got, err, want)
		}
		if back, err := ParseDocs(got.String()); err != nil || back != got {
			t.Errorf("ParseDocs(%q) = %+v, %v; want %+v", got.String(), back, err, got)
		}
	}
	if d, err := ParseDocs("full"); err != nil || d != (Docs{}) || d.String() != "full" {
		t.Errorf("full: %+v %v", d, err)
	}
}

// Whatever ParseDocs accepts, it formats back to the same Docs, and
// applies within [min(n, 1), n].
func FuzzParseDocs(f *testing.F) {
	for _, s := range []string{"", "full", "3", "0.25", "1e3", "0x10", "-0", "9223372036854775807", "0.9999999999999999"} {
		f.Add(s, 100)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		d, err := ParseDocs(s)
		if err != nil {
			return
		}
		back, err := ParseDocs(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDocs(%q) = %+v, formatted %q reads back %+v, %v", s, d, d.String(), back, err)
		}
		if n < 0 {
			return
		}
		got := d.Apply(n)
		if got > n || (n > 0 && got < 1) {
			t.Fatalf("%+v.Apply(%d) = %d", d, n, got)
		}
	})
}
