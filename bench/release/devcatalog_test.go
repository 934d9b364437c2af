package release

import (
	"context"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// TestDevCatalogSweepLimits: a dev unit's sweep is planned from the dev
// spec's limits (Qwen3-8B on n150: 32768 tokens of context in dev, 40960 in
// prod), not the prod catalog's.
func TestDevCatalogSweepLimits(t *testing.T) {
	plan := func(mode string) int {
		t.Helper()
		spec, err := catalog.LookupIn(mode, "Qwen3-8B", "n150")
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Target: &target.Target{Unit: "q", BaseURL: "http://127.0.0.1:1", Model: "Qwen3-8B", CatalogModel: "Qwen3-8B",
			Device: "n150", Spec: spec, Catalog: mode}, Workflow: WorkflowBenchmarks, Limit: limit.Full, Store: &runs.Store{Root: t.TempDir()}}
		pts, _, err := PlanSweep(cfg)
		if err != nil {
			t.Fatal(err)
		}
		longest := 0
		for _, p := range pts {
			longest = max(longest, p.ISL+p.OSL)
		}
		return longest
	}
	dev, prod := plan(catalog.ModeDev), plan(catalog.ModeProd)
	if dev > 32768 {
		t.Errorf("dev sweep reaches %d tokens, past the dev spec's 32768 context", dev)
	}
	if dev == prod {
		t.Errorf("dev and prod sweeps both reach %d tokens: the dev spec's limits were not used", dev)
	}
}

// devSpecWithoutTargets finds a dev spec with an enforcing status and no
// targets (Qwen3-32B on galaxy_t3k, FUNCTIONAL, among others).
func devSpecWithoutTargets(t *testing.T) *catalog.Spec {
	t.Helper()
	specs, err := catalog.SpecsIn(catalog.ModeDev)
	if err != nil {
		t.Fatal(err)
	}
	for i := range specs {
		if s := &specs[i]; len(s.Targets) == 0 && enforcing(s.Status) && s.ModelType == "LLM" {
			return s
		}
	}
	t.Fatal("the dev catalog has no enforcing LLM spec without targets")
	return nil
}

// TestDevCatalogWithoutTargetsIsUngraded: benchmarks of a dev spec with no
// targets are UNGRADED with the reason, never graded against the prod
// catalog's targets nor reported as missing them.
func TestDevCatalogWithoutTargetsIsUngraded(t *testing.T) {
	dev := devSpecWithoutTargets(t)
	pt := report.Point{ISL: 128, OSL: 128, Concurrency: 1, NumPrompts: 8, Completed: 8, Source: "sweep",
		Grade: grade.Grade(grade.Input{Factors: grade.Factors(nil), Completed: 8})}
	sec := &BenchSection{Rows: BenchRowsOf([]report.Point{pt})}
	a := Accept(dev, sec, nil)
	if a.Verdict != VerdictUngraded || !strings.Contains(a.Summary, "dev catalog") || !strings.Contains(a.Summary, dev.ModelID) || len(a.Missing) != 0 {
		t.Errorf("dev %s: verdict %s: %s (missing %v)", dev.ModelID, a.Verdict, a.Summary, a.Missing)
	}
	// The same spec as a prod one asks for its target points.
	prod := *dev
	prod.Catalog = ""
	if a := Accept(&prod, sec, nil); a.Verdict != VerdictIncomplete {
		t.Errorf("prod %s: verdict %s: %s", prod.ModelID, a.Verdict, a.Summary)
	}
	// The metadata says where targets came from and the summary line
	// states the catalog.
	md := metadataOf(&Config{Target: &target.Target{CatalogModel: dev.ModelName, Device: dev.Device, Spec: dev,
		Conditions: map[string]string{"catalog": "dev", "device": dev.Device}}})
	if md.TargetsSource != "none" || !strings.Contains(conditionsLine(&md), "catalog dev") {
		t.Errorf("dev metadata: targets %q, conditions %q", md.TargetsSource, conditionsLine(&md))
	}
	withTargets, err := catalog.LookupIn(catalog.ModeDev, "Llama-3.1-8B-Instruct", "n150")
	if err != nil {
		t.Fatal(err)
	}
	if md := metadataOf(&Config{Target: &target.Target{Spec: withTargets}}); len(withTargets.Targets) > 0 && md.TargetsSource != "dev catalog" {
		t.Errorf("dev spec with targets: targets source %q", md.TargetsSource)
	}
}

// TestBaselineNeedsSameCatalog: a dev run is never the baseline of a prod
// one; a run that recorded no catalog was prod.
func TestBaselineNeedsSameCatalog(t *testing.T) {
	store := &runs.Store{Root: t.TempDir()}
	for _, cond := range []map[string]string{{"device": "n150"}, {"device": "n150", "catalog": "dev"}} {
		run, err := store.Create(runs.Manifest{Unit: "u", Workflow: WorkflowBenchmarks, Conditions: cond})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Finish(runs.StatusComplete, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	prev, skipped, ok := Baseline(context.Background(), store, "u", WorkflowBenchmarks, "", map[string]string{"device": "n150", "catalog": "prod"})
	if !ok || prev.Conditions["catalog"] != "" || len(skipped) != 1 || !strings.Contains(skipped[0], "catalog dev, now prod") {
		t.Errorf("baseline %+v ok %v, skipped %v", prev, ok, skipped)
	}
}
