package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ttis-dev/ttis/ctl"
	"github.com/ttis-dev/ttis/packaging/clidoc"
)

// TestLiveTreeIsDocumented walks ctl.App as ttisctl runs it: every
// visible command and flag must be in ttisctl(1) and the completions.
func TestLiveTreeIsDocumented(t *testing.T) {
	files, err := generate("v9.9.9", "../../units/sim-llama-8b.toml")
	if err != nil {
		t.Fatal(err)
	}
	man := string(files["man/ttisctl.1"])
	var visit func(path string, cmds []*cli.Command, flags []cli.Flag)
	visit = func(path string, cmds []*cli.Command, flags []cli.Flag) {
		for _, f := range flags {
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			name := f.Names()[0]
			spelled := "--" + name
			if len(name) == 1 {
				spelled = "-" + name
			}
			if !strings.Contains(man, strings.ReplaceAll(spelled, "-", `\-`)) {
				t.Errorf("ttisctl(1) lacks %s %s", path, spelled)
			}
			for _, c := range []string{"completions/ttisctl.bash", "completions/_ttisctl", "completions/ttisctl.fish"} {
				if !strings.Contains(string(files[c]), name) {
					t.Errorf("%s lacks %s %s", c, path, spelled)
				}
			}
		}
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			p := strings.TrimSpace(path + " " + c.Name)
			if !strings.Contains(man, `.SS "ttisctl `+strings.ReplaceAll(p, "-", `\-`)) {
				t.Errorf("ttisctl(1) lacks command %q", p)
			}
			if !strings.Contains(string(files["completions/ttisctl.bash"]), "'"+p+"'") {
				t.Errorf("bash completion lacks command %q", p)
			}
			visit(p, c.Subcommands, c.Flags)
		}
	}
	app := ctl.App("v9.9.9")
	visit("", app.Commands, app.Flags)
	for _, e := range ctl.ExitStatuses() {
		if !strings.Contains(man, e.Meaning) {
			t.Errorf("ttisctl(1) lacks exit status %d", e.Code)
		}
	}
	for _, name := range []string{"man/ttisctl.1", "man/ttis.unit.5"} {
		if _, err := clidoc.Lint(files[name]); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if unit := string(files["man/ttis.unit.5"]); !strings.Contains(unit, `.SH "TABLE [[schedule]]"`) || !strings.Contains(unit, "time_scale") {
		t.Errorf("ttis.unit(5) lacks the schedule table or the example:\n%s", unit)
	}
}

func TestRunWritesTheFiles(t *testing.T) {
	out := t.TempDir()
	if err := run(out, "dev", "../../units/sim-llama-8b.toml"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"man/ttisctl.1", "man/ttis.unit.5", "completions/ttisctl.bash", "completions/_ttisctl", "completions/ttisctl.fish"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := run(out, "dev", "no-such-example.toml"); err == nil || !strings.Contains(err.Error(), "example unit") {
		t.Errorf("missing example: %v", err)
	}
}
