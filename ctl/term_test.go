package ctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/daemon/api"
	"github.com/ttis-dev/ttis/units"
)

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":            "plain name",
		"evil\x1b[2J\x1b]0;x\a": `evil\x1b[2J\x1b]0;x\x07`,
		"two\nlines\r":          `two\nlines\r`,
		"tab\there":             `tab\there`,
		"bad utf8 \xff":         `bad utf8 \xff`,
		"c1 \u009b31m":          `c1 \x9b31m`,
		"ünïcødé fine, ● × ◌ ○": "ünïcødé fine, ● × ◌ ○",
	} {
		if got := safe(in); got != want {
			t.Errorf("safe(%q) = %q, want %q", in, got, want)
		}
	}
	var b bytes.Buffer
	_, _ = safeWriter{&b}.Write([]byte("line one\n\x1b[31mred\x1b[0m\ttab\n"))
	if got := b.String(); got != "line one\n\\x1b[31mred\\x1b[0m\ttab\n" {
		t.Errorf("safeWriter kept %q", got)
	}
}

// A unit file name, description or error text cannot reach the operator's
// terminal as control sequences.
func TestStatusEscapesHostileText(t *testing.T) {
	evil := "x\x1b[1A\x1b[2Kfake\nline"
	u := api.Unit{View: units.View{Name: evil, Model: evil, Device: "n150"}, State: api.StateFailed, SubState: api.SubFailed, LastError: evil, Since: now}
	var b bytes.Buffer
	printTable(&b, api.UnitList{Units: []api.Unit{u}, Errors: []string{evil}}, now)
	printDetail(&b, api.UnitDetail{Unit: u, Detail: evil, Logs: []api.LogLine{{Time: time.Unix(0, 0), Stream: "stdout", Text: evil}}}, now)
	out := b.String()
	if strings.ContainsRune(out, 0x1b) || strings.Contains(out, "fake\nline") {
		t.Errorf("control characters reached the output:\n%q", out)
	}
	if !strings.Contains(out, `x\x1b[1A\x1b[2Kfake\nline`) {
		t.Errorf("hostile text not shown escaped:\n%s", out)
	}
}

// Errors are printed once with one prefix, escaped.
func TestMainErrorPrefixAndEscaping(t *testing.T) {
	out, code := runCtl(t, "status", "--socket", "/nonexistent/ttisd.sock")
	if code != exitUnavailable || !strings.HasPrefix(out, "ttisctl status: ") || strings.Count(out, "ttisctl") != 1 {
		t.Errorf("exit %d %q", code, out)
	}
	out, code = runCtl(t, "catalog", "no\x1b[2Jmodel")
	if code != exitNoUnit || strings.ContainsRune(out, 0x1b) || !strings.HasPrefix(out, "ttisctl catalog: ") {
		t.Errorf("exit %d %q", code, out)
	}
}

// validate prints one escaped line per result: a file whose name holds a
// newline and escape sequences cannot forge an "OK" line, and a quoted
// value from the file cannot reach the terminal raw.
func TestValidateEscapesHostileText(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "x\x1b[2J\nOK forged.toml")
	if err := os.WriteFile(name, []byte("model = \"Llama\x1b]0;pwned\a\"\ndevice = \"n150\"\nruntime = \"sim\"\nlisten = \"127.0.0.1:8000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCtl(t, "validate", name)
	if code != exitError || strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, '\a') || strings.Contains(out, "\nOK forged") {
		t.Errorf("exit %d, control characters or a forged line in:\n%q", code, out)
	}
	if !strings.Contains(out, `x\x1b[2J\nOK forged.toml`) {
		t.Errorf("file name not shown escaped:\n%s", out)
	}
}

// reload's unit names (file names) and errors are escaped.
func TestReloadEscapesHostileText(t *testing.T) {
	evil := "u\x1b[1A\x1b[2Kfake\nline"
	var out, errs bytes.Buffer
	printReload(&out, &errs, api.ReloadResult{Units: 2, Started: []string{evil}, Changed: []string{"ok"}, Errors: []string{evil}})
	all := out.String() + errs.String()
	if strings.ContainsRune(all, 0x1b) || strings.Contains(all, "fake\nline") {
		t.Errorf("control characters reached the output:\n%q", all)
	}
	if !strings.Contains(out.String(), `started [u\x1b[1A\x1b[2Kfake\nline]`) || !strings.Contains(errs.String(), `error: u\x1b[1A`) {
		t.Errorf("names or errors not shown escaped:\n%s\n%s", out.String(), errs.String())
	}
}
