package tasks

import (
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
)

// textHarness reports whether a catalog reference is a text (or
// vision-language) task of the kind this registry covers; media tests
// (images, video, speech, embeddings) have their own suites.
func textHarness(r catalog.EvalRef) bool {
	switch r.Harness {
	case "common", "meta", "vision", "agentic":
		return r.API != "media-test"
	}
	return false
}

// TestCatalogReferencesAreKnown walks every reference of the catalog: each
// text task must be registered, either runnable (with a builder, a cited
// definition and its Hub data) or listed as not runnable with a reason.
func TestCatalogReferencesAreKnown(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range catalog.EvalRefs() {
		if !textHarness(r) || seen[r.Task] {
			continue
		}
		seen[r.Task] = true
		b, ok := registry[r.Task]
		switch {
		case !ok:
			t.Errorf("catalog references %s (%s, model %s): neither implemented nor listed as not runnable", r.Task, r.Harness, r.Model)
		case b.info.NotRunnable != "":
			if _, err := Build(r.Task, Source{NumFewShot: -1}); err == nil {
				t.Errorf("%s is listed as not runnable but builds", r.Task)
			}
		default:
			if b.build == nil {
				t.Errorf("%s has no builder", r.Task)
			}
			if b.info.Follows == "" {
				t.Errorf("%s does not cite the definition it follows", r.Task)
			}
			if !b.info.Builtin && len(b.info.Data) == 0 {
				t.Errorf("%s declares no Hub data", r.Task)
			}
		}
	}
	if len(seen) < 30 {
		t.Fatalf("only %d text tasks among the catalog's references; the filter is wrong", len(seen))
	}
}

// TestDataDeclarations checks the shape of every declared Hub split.
func TestDataDeclarations(t *testing.T) {
	for _, info := range List() {
		for _, d := range info.Data {
			if d.Repo == "" || d.Split == "" || d.Files == "" || d.Role == "" {
				t.Errorf("%s: incomplete Hub data %+v", info.Name, d)
			}
		}
	}
}
