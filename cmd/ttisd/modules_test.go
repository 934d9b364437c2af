package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/cmd/testbin"
)

// conformanceModule is the nested module of the checks that need
// third-party parsers the build does not (Kubernetes, Prometheus): see
// packaging/conformance/doc.go.
const conformanceModule = "packaging/conformance"

// requires reads the require directives of a go.mod: module path →
// version. Only the forms `go mod tidy` writes are read.
func requires(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	block := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
			continue
		case line == "require (":
			block = true
			continue
		case block && line == ")":
			block = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !block:
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want a module path and a version, got %q", n, line)
		}
		out[f[0]] = f[1]
	}
	return out, sc.Err()
}

// versionSkew lists the modules both go.mod files require at different
// versions (the nested module would build with the higher one, and its
// go.sum lacks it), and a missing replacement of the main module.
func versionSkew(main, nested map[string]string, nestedMod []byte) []string {
	var out []string
	for path, v := range nested {
		if mv, ok := main[path]; ok && mv != v {
			out = append(out, fmt.Sprintf("%s: %s here, %s in the main module", path, v, mv))
		}
	}
	slices.Sort(out)
	if !bytes.Contains(nestedMod, []byte("replace "+strings.TrimSuffix(module, "/")+" => ../..")) {
		out = append(out, "no `replace "+strings.TrimSuffix(module, "/")+" => ../..`: the checks must run against this checkout")
	}
	return out
}

// The conformance module tests the main module of this checkout with the
// versions of its dependencies that the build uses. When a requirement of
// the main go.mod changes, this says how to bring the nested one in step,
// offline, instead of a failed download in make test. (A module the main
// module newly needs fails there with Go's own "missing go.sum entry"
// message; the cure is the same.)
func TestConformanceModuleInStep(t *testing.T) {
	root := testbin.ModuleRoot(t)
	mainMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	nestedMod, err := os.ReadFile(filepath.Join(root, conformanceModule, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	main, err := requires(mainMod)
	if err != nil {
		t.Fatalf("go.mod: %v", err)
	}
	nested, err := requires(nestedMod)
	if err != nil {
		t.Fatalf("%s/go.mod: %v", conformanceModule, err)
	}
	if len(nested) < 3 {
		t.Fatalf("%s/go.mod requires %d modules", conformanceModule, len(nested))
	}
	if skew := versionSkew(main, nested, nestedMod); len(skew) > 0 {
		t.Errorf("%s/go.mod is out of step with go.mod:\n\t%s\nbring it in step with\n\tcd %s && go mod tidy",
			conformanceModule, strings.Join(skew, "\n\t"), conformanceModule)
	}
}

func TestVersionSkew(t *testing.T) {
	mainMod := []byte("module " + strings.TrimSuffix(module, "/") + "\n\nrequire (\n\tgithub.com/a/b v1.2.0\n\tgithub.com/c/d v0.1.0 // indirect\n)\n\nrequire github.com/e/f v3.0.0\n")
	main, err := requires(mainMod)
	if err != nil || len(main) != 3 || main["github.com/c/d"] != "v0.1.0" || main["github.com/e/f"] != "v3.0.0" {
		t.Fatalf("requires: %v %v", main, err)
	}
	nestedMod := []byte("module x\n\nrequire (\n\tgithub.com/a/b v1.3.0\n\tgithub.com/c/d v0.1.0 // indirect\n)\n\nreplace " + strings.TrimSuffix(module, "/") + " => ../..\n")
	nested, _ := requires(nestedMod)
	got := strings.Join(versionSkew(main, nested, nestedMod), "\n")
	if want := "github.com/a/b: v1.3.0 here, v1.2.0 in the main module"; got != want {
		t.Errorf("skew %q, want %q", got, want)
	}
	if strings.Contains(got, "c/d") || strings.Contains(got, "e/f") {
		t.Errorf("skew %q reports what is in step", got)
	}
	if got := versionSkew(main, nested, bytes.ReplaceAll(nestedMod, []byte("replace"), []byte("//"))); !strings.Contains(strings.Join(got, "\n"), "no `replace") {
		t.Errorf("a missing replace is not reported: %q", got)
	}
	if _, err := requires([]byte("require (\n\tgithub.com/a/b\n)\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad line: %v", err)
	}
}
