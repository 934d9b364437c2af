package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// report prints every format with a server's terminal escape codes shown
// as text, whatever wrote the file (an older ttis, another party).
func TestReportEscapesEveryFormat(t *testing.T) {
	srv := fakeInference(t, false, nil)
	state := t.TempDir()
	if out, code := runCtl(t, "bench", "--url", srv.URL, "--isl", "8", "--osl", "2", "--num-prompts", "1", "--num-warmups", "0",
		"--no-server-tokenizer", "--no-progress", "--state-dir", state); code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, out)
	}
	out, _, _ := runCtlStdout(t, "runs", "--state-dir", state, "-o", "json")
	var list []struct{ ID string }
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("runs: %s", out)
	}
	out, _, _ = runCtlStdout(t, "report", "--state-dir", state, "--format", "path", list[0].ID)
	dir := strings.TrimSpace(out)
	for format, file := range map[string]string{"html": "report.html", "md": "report.md", "json": "report.json"} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte("said \x1b]0;owned\x07\x1b[2J\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, code := runCtlStdout(t, "report", "--state-dir", state, "--format", format, dir)
		if code != 0 || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `said \x1b]0;owned\x07\x1b[2J`) {
			t.Errorf("report --format %s: exit %d, %q", format, code, out)
		}
	}
}
