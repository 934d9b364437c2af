package clidoc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// choiceFlag is a string flag with a fixed set of values (clidoc.Chooser).
type choiceFlag struct {
	*cli.StringFlag
	values []string
}

func (f choiceFlag) Choices() []string { return f.values }

// fixture is a tree with what the generators must handle: nested
// commands, aliases, flags that take values, hidden parts, a command that
// completes its arguments itself and one that takes files.
func fixture() *cli.App {
	units := func(*cli.Context) {}
	return &cli.App{
		Name:                 "prog",
		Usage:                "drive the things",
		Version:              "1.0",
		EnableBashCompletion: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "socket", Value: "/run/x.sock", EnvVars: []string{"PROG_SOCKET"}, Usage: "control `PATH`"},
			choiceFlag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"}, []string{"table", "json"}},
			&cli.BoolFlag{Name: "secret", Hidden: true},
		},
		Commands: []*cli.Command{
			{Name: "status", Usage: "show units", ArgsUsage: "[UNIT...]", BashComplete: units,
				Description: ".starts with a dot\nand has a \\backslash",
				Flags:       []cli.Flag{&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 10, Usage: "log lines"}}},
			{Name: "validate", Usage: "check files", ArgsUsage: "FILE..."},
			{Name: "model", Aliases: []string{"m"}, Usage: "model files", Subcommands: []*cli.Command{
				{Name: "create", Usage: "make one", Flags: []cli.Flag{&cli.DurationFlag{Name: "timeout", Usage: "give up after"}}},
				{Name: "info", Usage: "describe one", ArgsUsage: "GGUF_FILE"},
			}},
			{Name: "debug-dump", Hidden: true},
		},
	}
}

func TestManListsTheTree(t *testing.T) {
	man := string(Man(fixture(), Page{Section: 1, Source: "prog 1.0", Sections: []Section{
		{Title: "SEE ALSO", Blocks: []Block{{Text: "other(1)"}}},
		{Title: "EXIT STATUS", Blocks: []Block{{Tag: "0", Text: "ok"}}},
	}}))
	for _, want := range []string{
		`.TH "PROG" 1 "" "prog 1.0" "ttis manual"`,
		`prog \- drive the things`,
		`.SS "prog status [options] [UNIT...]"`,
		`.SS "prog model create [options]"`,
		`.SS "prog model info [options] GGUF_FILE"`,
		`.B \-\-socket PATH`,
		`.B \-\-output, \-o VALUE`,
		`.B \-\-lines, \-n N`,
		`.B \-\-timeout DURATION`,
		`Control PATH. Default: "/run/x.sock". Environment: PROG_SOCKET.`,
		"Also: m.",
		`\&.starts with a dot`,
		`\ebackslash`,
		".SH \"ENVIRONMENT\"\n.TP\n.B PROG_SOCKET\nDefault for \\-\\-socket.",
	} {
		if !strings.Contains(man, want) {
			t.Errorf("man page lacks %q:\n%s", want, man)
		}
	}
	for _, hidden := range []string{"secret", "debug"} {
		if strings.Contains(man, hidden) {
			t.Errorf("man page shows hidden %q", hidden)
		}
	}
	// man-pages(7) order: ENVIRONMENT, EXIT STATUS, SEE ALSO last.
	env, exit, see := strings.Index(man, `.SH "ENVIRONMENT"`), strings.Index(man, `.SH "EXIT STATUS"`), strings.Index(man, `.SH "SEE ALSO"`)
	if !(strings.Index(man, `.SH "COMMANDS"`) < env && env < exit && exit < see) {
		t.Errorf("sections out of order:\n%s", man)
	}
	CheckRoff(t, []byte(man))
}

// CheckRoff fails t when the page does not render cleanly.
func CheckRoff(t *testing.T, page []byte) {
	t.Helper()
	ran, err := Lint(page)
	if err != nil {
		t.Error(err)
	}
	if len(ran) < 2 {
		t.Logf("checked with %v only (groff or man not installed)", ran)
	}
}

// fakeProg writes an executable "prog" that answers urfave/cli's
// completion request for status with two unit names, as ttisctl does
// with ttisd's units.
func fakeProg(t *testing.T) string {
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$*\" in\n\"status --generate-bash-completion\") echo alpha; echo beta ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "prog"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBashCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := fakeProg(t)
	script := filepath.Join(dir, "prog.bash")
	if err := os.WriteFile(script, Bash(fixture()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // the command line; the cursor is at its end
		want []string
	}{
		{"prog ", []string{"status", "validate", "model", "m"}},
		{"prog st", []string{"status"}},
		{"prog -", []string{"--socket", "--output", "-o", "--help", "-h", "--version", "-v"}},
		{"prog status --", []string{"--lines", "--help"}},
		{"prog status ", []string{"alpha", "beta"}},
		{"prog status -n 5 b", []string{"beta"}},
		{"prog status alpha --li", []string{"--lines"}}, // a flag after an argument
		{"prog --socket /tmp/s model ", []string{"create", "info"}},
		{"prog -o json m c", []string{"create"}},
		{"prog model create --t", []string{"--timeout"}},
		{"prog status --lines ", nil}, // a value: left to file completion
		{"prog validate ", nil},
		{"prog -o ", []string{"table", "json"}}, // a value with a fixed set
		{"prog --output j", []string{"json"}},
	} {
		words := strings.Split(tc.line, " ")
		var arr strings.Builder
		for _, w := range words {
			fmt.Fprintf(&arr, "%q ", w)
		}
		prog := `source "$1"; COMP_WORDS=(` + arr.String() + `); COMP_WORDS[0]="$2/prog"; COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _prog; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command(bash, "-c", prog, "bash", script, dir).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		got := strings.Fields(string(out))
		if !sameSet(got, tc.want) {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestZshCompletes runs the completion function with zsh's completion
// builtins replaced by functions that print what they are given.
func TestZshCompletes(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed")
	}
	dir := fakeProg(t)
	script := filepath.Join(dir, "_prog")
	if err := os.WriteFile(script, Zsh(fixture()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	stubs := `compdef() { : }
_describe() { local -a a; a=("${(@P)4}"); print -l -- "${a[@]%%:*}" }
compadd() { local -a a; a=("${(@P)2}"); print -l -- "${a[@]}" }
_files() { print -- FILES }
`
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"prog ", []string{"status", "validate", "model", "m"}},
		{"prog status ", []string{"alpha", "beta"}},
		{"prog status alpha -", []string{"--lines", "-n", "--help", "-h"}},
		{"prog -o json model ", []string{"create", "info"}},
		{"prog status --lines ", []string{"FILES"}},
		{"prog validate ", []string{"FILES"}},
		{"prog -o ", []string{"table", "json"}},
	} {
		words := strings.Split(tc.line, " ")
		var arr strings.Builder
		for _, w := range words {
			fmt.Fprintf(&arr, "%q ", w)
		}
		prog := stubs + `source "$1"; words=(` + arr.String() + `); words[1]="$2/prog"; CURRENT=${#words}; PREFIX="${words[CURRENT]}"; _prog`
		out, err := exec.Command(zsh, "-f", "-c", prog, "zsh", script, dir).CombinedOutput()
		if err != nil && len(out) == 0 {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		if got := strings.Fields(string(out)); !sameSet(got, tc.want) {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestFishCompletes(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not installed")
	}
	dir := fakeProg(t)
	script := filepath.Join(dir, "prog.fish")
	if err := os.WriteFile(script, Fish(fixture()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(fish, "--no-execute", script).CombinedOutput(); err != nil {
		t.Fatalf("fish --no-execute: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"prog ", []string{"status", "validate", "model", "m"}},
		{"prog status ", []string{"alpha", "beta"}},
		{"prog status alpha --l", []string{"--lines"}},
		{"prog --socket /tmp/s model ", []string{"create", "info"}},
		{"prog -o ", []string{"table", "json"}},
		{"prog --output j", []string{"json"}},
	} {
		cmd := exec.Command(fish, "--no-config", "-c", `source $argv[1]; complete -C $argv[2] | cut -f1`, script, tc.line)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.line, err, out)
		}
		if got := strings.Fields(string(out)); !sameSet(got, tc.want) {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}
