package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// ttisctl's bash completion offers the values of the flags that have a
// fixed set (run sizes for --limit, table or json for -o) wherever they
// stand, and file names for the others.
func TestLiveCompletionValues(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	files, err := generate("v9.9.9", "../../units/sim-llama-8b.toml")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "ttisctl.bash")
	if err := os.WriteFile(script, files["completions/ttisctl.bash"], 0o644); err != nil {
		t.Fatal(err)
	}
	modes := []string{"smoke", "ci-commit", "ci-nightly", "ci-long", "full"}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"ttisctl bench --limit ", modes},
		{"ttisctl eval u --limit ci-", []string{"ci-commit", "ci-nightly", "ci-long"}},
		{"ttisctl release --limit ", modes},
		{"ttisctl status -o ", []string{"table", "json"}},
		{"ttisctl -o ", []string{"table", "json"}},
		{"ttisctl model create x --output j", []string{"json"}},
		{"ttisctl report r --format ", []string{"md", "json", "html", "path"}},
		{"ttisctl runs --limit ", nil}, // a count: nothing to offer
	} {
		var arr strings.Builder
		for _, w := range strings.Split(tc.line, " ") {
			fmt.Fprintf(&arr, "%q ", w)
		}
		prog := `source "$1"; COMP_WORDS=(` + arr.String() + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _ttisctl; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command(bash, "-c", prog, "bash", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q completes to %q, want %q", tc.line, got, want)
		}
	}
}
