package catalog

import (
	"strings"
	"testing"
)

// TestDevCatalog pins the development catalog's size (111 templates of
// workflows/model_specs/dev at 11ac526e0) and checks that it expands.
func TestDevCatalog(t *testing.T) {
	raw, err := readDevData()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.templates) != 111 {
		t.Errorf("%d dev templates, want 111", len(raw.templates))
	}
	specs, err := SpecsIn(ModeDev)
	if err != nil {
		t.Fatal(err)
	}
	prod := Specs()
	if len(specs) == 0 || len(specs) == len(prod) {
		t.Errorf("%d dev specs, %d prod specs", len(specs), len(prod))
	}
	for _, s := range specs {
		if s.DockerImage != "" && s.Version == "" {
			t.Errorf("%s: image %s without a pinned version", s.ModelID, s.DockerImage)
		}
	}
	if _, err := LookupIn(ModeDev, "Llama-3.1-8B-Instruct", "n150"); err != nil {
		t.Errorf("dev lookup: %v", err)
	}
	if _, err := LookupIn("beta", "Llama-3.1-8B-Instruct", "n150"); err == nil || !strings.Contains(err.Error(), `unknown catalog "beta"`) {
		t.Errorf("bad mode: %v", err)
	}
}
