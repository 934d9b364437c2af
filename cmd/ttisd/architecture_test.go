package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// topLevel are the folders of the module's packages; ARCHITECTURE.md
// places every package under them.
var topLevel = []string{"units", "runtime", "evalsuite", "bench", "daemon", "ctl", "cmd", "packaging"}

// codeSpan is a `code span` of markdown.
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// namedPaths returns the package paths a map names: every code span,
// with one brace group expanded (`daemon/internal/{change,proc}` names
// daemon/internal/change and daemon/internal/proc).
func namedPaths(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(doc, -1) {
		for _, p := range expandBraces(strings.TrimSpace(m[1])) {
			out[strings.TrimSuffix(p, "/")] = true
		}
	}
	return out
}

// expandBraces expands the first {a,b,...} of s; s without one is itself.
func expandBraces(s string) []string {
	i := strings.IndexByte(s, '{')
	j := strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, s[:i]+strings.TrimSpace(alt)+s[j+1:])
	}
	return out
}

// mapGaps compares the packages with what the map names: the packages it
// leaves out, and the paths it names under a top-level folder that are
// neither a package nor a folder (exists says which are).
func mapGaps(pkgs []string, named map[string]bool, exists func(string) bool) (missing, stale []string) {
	for _, p := range pkgs {
		if !named[p] {
			missing = append(missing, p)
		}
	}
	for p := range named {
		if strings.ContainsAny(p, " .*:(){}$=") || !matchesAny(p, topLevel) || slices.Contains(pkgs, p) {
			continue
		}
		if !exists(p) {
			stale = append(stale, p)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	return missing, stale
}

// ARCHITECTURE.md names every package of the module, so the map shows the
// whole house, and names nothing that is gone.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	root := testbin.ModuleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for p := range moduleImports(t) {
		if matchesAny(p, topLevel) {
			pkgs = append(pkgs, p)
		}
	}
	missing, stale := mapGaps(pkgs, namedPaths(string(doc)), func(p string) bool {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil && st.IsDir()
	})
	for _, p := range missing {
		t.Errorf("ARCHITECTURE.md does not name package %s: add it, in `backquotes`, to its layer with its job in a line", p)
	}
	for _, p := range stale {
		t.Errorf("ARCHITECTURE.md names %s, which is no package or folder of the module", p)
	}
}

// The check finds a package the map leaves out, reads brace groups, and
// finds a name that is gone.
func TestArchitectureGaps(t *testing.T) {
	doc := "`units` and `runtime/cpu/{gguf, tokenizer}`; `daemon/internal/gone` and `bench/release/accept.go`, `ttisctl model bench`, `packaging/monitoring`."
	named := namedPaths(doc)
	for _, want := range []string{"units", "runtime/cpu/gguf", "runtime/cpu/tokenizer"} {
		if !named[want] {
			t.Errorf("%s not read from %q", want, doc)
		}
	}
	missing, stale := mapGaps([]string{"units", "runtime/cpu/gguf", "runtime/cpu/tokenizer", "ctl"}, named,
		func(p string) bool { return p == "packaging/monitoring" })
	if !slices.Equal(missing, []string{"ctl"}) || !slices.Equal(stale, []string{"daemon/internal/gone"}) {
		t.Errorf("missing %q, stale %q; want [ctl], [daemon/internal/gone]", missing, stale)
	}
}
