package main

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// The import rules of the module. Each layer imports only layers below it,
// so a package can be read, tested and replaced without the ones above:
//
//	units          schema and catalog; imports nothing of ours but units/...
//	runtime        the server side (front door, engines, the OpenAI protocol)
//	evalsuite      accuracy evals (tasks, scoring, the eval workflow)
//	bench          benchmarks, and bench/release: the workflows and results
//	               store that ctl and the daemon's scheduler both call
//	daemon         what runs inside ttisd (its internals never run a workflow)
//	ctl            ttisctl's flags and output
//	cmd            thin mains (and cmd/testbin, for tests only)
//	packaging      install files, and generators of man pages and completions
//
// Violations fail here, naming the import and the rule.

const module = "github.com/ttis-dev/ttis/"

// rule forbids packages matching from to import packages matching any of
// to; except lists importers the rule does not cover.
type rule struct {
	why    string
	from   []string
	to     []string
	except []string
}

var rules = []rule{
	{"units is the bottom layer: the schema and the catalog stand alone",
		[]string{"units"}, []string{"runtime", "evalsuite", "bench", "daemon", "ctl", "cmd"}, nil},
	{"the server side never depends on the client side or the daemon",
		[]string{"runtime"}, []string{"evalsuite", "bench", "daemon", "ctl", "cmd"}, nil},
	{"evals are measured without the benchmark or the daemon",
		[]string{"evalsuite"}, []string{"bench", "daemon", "ctl", "cmd"}, nil},
	{"benchmarks and workflows run without the daemon (ttisctl --url needs none)",
		[]string{"bench"}, []string{"daemon", "ctl", "cmd"}, nil},
	{"daemon internals supervise servers; workflows run through daemon/schedule alone",
		[]string{"daemon/internal"}, []string{"bench", "evalsuite", "ctl", "cmd"}, nil},
	{"the daemon never imports the CLI",
		[]string{"daemon"}, []string{"ctl", "cmd"}, nil},
	{"only ttisctl's main (and the generator of its man page) imports the CLI",
		[]string{""}, []string{"ctl"}, []string{"ctl", "cmd/ttisctl", "packaging/internal/gendocs"}},
	{"the engine's internals are its own",
		[]string{""}, []string{"runtime/cpu/internal"}, []string{"runtime/cpu"}},
}

// under reports whether rel (a path relative to the module) is pkg or
// below it; "" matches every package.
func under(rel, pkg string) bool {
	return pkg == "" || rel == pkg || strings.HasPrefix(rel, pkg+"/")
}

// violations checks imports (package → its imports, paths relative to the
// module) against rules.
func violations(imports map[string][]string, rules []rule) []string {
	var out []string
	for from, deps := range imports {
		for _, dep := range deps {
			// One message per import: the first rule it breaks.
			for _, r := range rules {
				if matchesAny(from, r.from) && !matchesAny(from, r.except) && matchesAny(dep, r.to) && !under(dep, from) {
					out = append(out, from+" imports "+dep+": "+r.why)
					break
				}
			}
		}
	}
	return out
}

func matchesAny(rel string, pkgs []string) bool {
	for _, p := range pkgs {
		if under(rel, p) {
			return true
		}
	}
	return false
}

// moduleImports lists every package of the module with its direct imports
// of the module (tests' imports are not counted: go list reports them
// apart).
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = testbin.ModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	imports := map[string][]string{}
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, module)
		imports[rel] = []string{}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				imports[rel] = append(imports[rel], strings.TrimPrefix(imp, module))
			}
		}
	}
	return imports
}

func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	imports := moduleImports(t)
	if len(imports) < 20 {
		t.Fatalf("go list found %d packages", len(imports))
	}
	for _, v := range violations(imports, rules) {
		t.Error(v)
	}
}

// The checker itself fails on a forbidden import, and lets the allowed
// ones through.
func TestImportRulesCatchViolations(t *testing.T) {
	bad := map[string][]string{
		"runtime/serve":           {"bench/release", "units"},
		"daemon/internal/watch":   {"evalsuite/tasks"},
		"bench/sweep":             {"daemon/api"},
		"units/catalog":           {"runtime"},
		"daemon":                  {"ctl"},
		"evalsuite/runner":        {"runtime/cpu/internal/kernels"},
		"runtime/cpu/tokenizer":   {"runtime/cpu/internal/model"},
		"ctl":                     {"bench/release", "daemon/api/client"},
		"cmd/ttisctl":             {"ctl"},
		"daemon/schedule":         {"bench/release"},
		"bench/release":           {"evalsuite/workflow", "runtime/openai"},
		"daemon/internal/control": {"daemon/api"},
	}
	got := violations(bad, rules)
	want := []string{
		"runtime/serve imports bench/release",
		"daemon/internal/watch imports evalsuite/tasks",
		"bench/sweep imports daemon/api",
		"units/catalog imports runtime",
		"daemon imports ctl",
		"evalsuite/runner imports runtime/cpu/internal/kernels",
	}
	if len(got) != len(want) {
		t.Errorf("%d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w+":")
		}
		if !found {
			t.Errorf("not caught: %s", w)
		}
	}
}
