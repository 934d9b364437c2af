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
