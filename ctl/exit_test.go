package ctl

import (
	"strings"
	"testing"
)

// The results-store commands follow the README's exit-code table: a run
// that is not there is 4, like an unknown unit; a name no unit can have is
// a usage error, 2; each says why once.
func TestStoreExitCodes(t *testing.T) {
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"report", "nosuchrun", "--state-dir", state}, exitNoUnit, `no run "nosuchrun"`},
		{[]string{"report", "nosuchrun", "--state-dir", state, "--format", "html"}, exitNoUnit, `no run "nosuchrun"`},
		{[]string{"runs", "../../etc", "--state-dir", state}, exitUsage, `unit name "../../etc"`},
		{[]string{"runs", "a/b", "--state-dir", state}, exitUsage, `unit name "a/b"`},
		{[]string{"runs", "no-runs-yet", "--state-dir", state}, 0, "No runs in"},
		{[]string{"eval", "--resume", "nosuchrun", "--state-dir", state}, exitNoUnit, `no run "nosuchrun"`},
	} {
		out, code := runCtl(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.says) || strings.Count(out, tc.says) != 1 {
			t.Errorf("ttisctl %s: exit %d, want %d saying %q once:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.says, out)
		}
	}
}
