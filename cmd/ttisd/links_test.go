package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// The weight rules. The import rules (deps_test.go) see one import at a
// time; what a binary carries is the closure of its imports. Each
// binary's linked packages (ours and third-party, the standard library
// left out) are committed under testdata/links, so a new heavy import is
// a diff someone reads, and a few packages must never reach others.

var update = flag.Bool("update", false, "rewrite the dependency lists in testdata/links")

// linkList is one committed list: the packages `go list -deps` gives for
// roots, which roots returns relative to the module root.
type linkList struct {
	file, what string
	// from names the roots in the list's header.
	from  string
	roots func(t *testing.T, root string) []string
}

var linkLists = []linkList{
	{"ttisd.txt", "the ttisd binary: the daemon, and `ttisd serve`, which is the same binary", "./cmd/ttisd",
		func(*testing.T, string) []string { return []string{"./cmd/ttisd"} }},
	{"ttisd-serve.txt", "the code path of `ttisd serve`: the packages cmd/ttisd/serve.go imports", "(the imports of cmd/ttisd/serve.go)",
		serveImports},
	{"ttisctl.txt", "the ttisctl binary", "./cmd/ttisctl",
		func(*testing.T, string) []string { return []string{"./cmd/ttisctl"} }},
}

// weightRule forbids pkg to link any of never, directly or through
// others.
type weightRule struct {
	pkg   string
	never []string
	why   string
}

var weightRules = []weightRule{
	{"daemon/internal/supervise", []string{"runtime/serve", "github.com/valyala/fasthttp", "runtime/cpu", "bench", "evalsuite"},
		"the supervisor stays small: it reads a server's /health headers from package runtime, never the front door"},
	{"runtime/serve", []string{"daemon", "bench", "evalsuite", "ctl", "runtime/cpu", "runtime/vllm"},
		"the front door serves any engine the command wires in; it carries none itself"},
	{"cmd/ttisctl", []string{"runtime/serve", "runtime/sim", "daemon/internal", "daemon/schedule"},
		"ttisctl is a client: it never serves a unit or supervises one (the cpu engine it carries is for model files, see ARCHITECTURE.md)"},
}

// serveImports lists the imports of cmd/ttisd/serve.go that are not the
// standard library: the runtimes, the front door and what wires them.
func serveImports(t *testing.T, root string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "cmd", "ttisd", "serve.go"), nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("cmd/ttisd/serve.go imports nothing outside the standard library")
	}
	return out
}

// linked returns the packages roots link, outside the standard library:
// ours relative to the module, then the third-party ones, each sorted.
// The target is fixed (linux/amd64), as the binaries ship.
func linked(t *testing.T, root string, roots ...string) (ours, third []string) {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, roots...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			ours = append(ours, rel)
		} else {
			third = append(third, p)
		}
	}
	slices.Sort(ours)
	slices.Sort(third)
	return ours, third
}

// renderLinks is a list file's text.
func renderLinks(l linkList, ours, third []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", l.what)
	fmt.Fprintf(&b, "# go list -deps %s: %d packages of ours, %d third-party (standard library not listed)\n", l.from, len(ours), len(third))
	fmt.Fprintf(&b, "# rewrite: go test ./cmd/ttisd -run TestLinkLists -update\n")
	for _, p := range ours {
		fmt.Fprintln(&b, p)
	}
	for _, p := range third {
		fmt.Fprintln(&b, p)
	}
	return b.Bytes()
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got []byte) string {
	w := strings.Split(strings.TrimSpace(string(want)), "\n")
	g := strings.Split(strings.TrimSpace(string(got)), "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) && !strings.HasPrefix(l, "#") {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) && !strings.HasPrefix(l, "#") {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestLinkLists compares what each binary links with its committed list.
func TestLinkLists(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the binaries")
	}
	root := testbin.ModuleRoot(t)
	for _, l := range linkLists {
		roots := l.roots(t, root)
		ours, third := linked(t, root, roots...)
		got := renderLinks(l, ours, third)
		path := filepath.Join("testdata", "links", l.file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (write it with: go test ./cmd/ttisd -run TestLinkLists -update)", err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s (%s): the linked packages changed (+ added, - removed):\n%s\nIf the change is meant, rewrite the list with\n\tgo test ./cmd/ttisd -run TestLinkLists -update\nand commit it, saying in the commit why the weight is worth it.",
				path, l.what, lineDiff(want, got))
		}
	}
}

// TestWeightRules checks that no package links what its rule forbids.
func TestWeightRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	root := testbin.ModuleRoot(t)
	for _, r := range weightRules {
		ours, third := linked(t, root, "./"+r.pkg)
		for _, v := range weightViolations(r, ours, third) {
			t.Error(v)
		}
	}
}

// weightViolations lists the packages of ours and third (what r.pkg
// links) that r forbids.
func weightViolations(r weightRule, ours, third []string) []string {
	var out []string
	for _, p := range ours {
		if p != r.pkg && matchesAny(p, r.never) {
			out = append(out, r.pkg+" links "+p+": "+r.why)
		}
	}
	for _, p := range third {
		if matchesAny(p, r.never) {
			out = append(out, r.pkg+" links "+p+": "+r.why)
		}
	}
	return out
}

// The weight check fails on a forbidden package, whichever way it came in.
func TestWeightRulesCatchViolations(t *testing.T) {
	r := weightRules[0]
	got := weightViolations(r, []string{"daemon/api", "daemon/internal/supervise", "runtime", "runtime/serve", "units"},
		[]string{"github.com/valyala/fasthttp", "golang.org/x/sys/unix"})
	if len(got) != 2 || !strings.HasPrefix(got[0], "daemon/internal/supervise links runtime/serve:") ||
		!strings.HasPrefix(got[1], "daemon/internal/supervise links github.com/valyala/fasthttp:") {
		t.Errorf("violations %q", got)
	}
	if got := weightViolations(r, []string{"daemon/api", "runtime", "units"}, []string{"golang.org/x/sys/unix"}); len(got) != 0 {
		t.Errorf("allowed links reported: %q", got)
	}
}

// The list check fails, naming the package, when a binary gains one.
func TestLinkListDiff(t *testing.T) {
	l := linkLists[2]
	before := renderLinks(l, []string{"ctl", "units"}, []string{"github.com/urfave/cli/v2"})
	after := renderLinks(l, []string{"ctl", "runtime/cpu", "units"}, []string{"github.com/urfave/cli/v2"})
	if bytes.Equal(before, after) {
		t.Fatal("a new package left the list unchanged")
	}
	if d := lineDiff(before, after); d != "+ runtime/cpu" {
		t.Errorf("diff %q, want %q", d, "+ runtime/cpu")
	}
}
