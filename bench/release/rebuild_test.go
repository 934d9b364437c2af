package release_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/cmd/testbin"
	"github.com/ttis-dev/ttis/units/limit"
)

var generatedAt = regexp.MustCompile(`"generated_at": "[^"]*"|Generated: [^\n|]*`)

// A release rebuilt from its raw files gives the report the run wrote.
func TestRebuildGivesTheRunsReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ttisd serve")
	}
	url := testbin.Serve(t, "model = \"Llama-3.1-8B-Instruct\"\ndevice = \"n150\"\nruntime = \"sim\"\n[sim]\ntime_scale = 0.0\n").URL
	tgt, err := target.Resolve(context.Background(), target.Query{URL: url, Device: "n150"})
	if err != nil {
		t.Fatal(err)
	}
	ec := release.DefaultEvals()
	ec.Tasks = []string{"gsm8k"}
	ec.Datasets = map[string]string{"gsm8k": filepath.Join("..", "..", "evalsuite", "tasks", "testdata", "gsm8k_test.jsonl")}
	ec.NumFewShot, ec.Concurrency = 0, 2
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs")}
	for _, tc := range []struct {
		name string
		cfg  release.Config
	}{
		{"release", release.Config{Workflow: release.WorkflowRelease, Limit: limit.CICommit, Evals: &ec}},
		{"point", release.Config{Workflow: release.WorkflowBenchmarks, Point: true, Bench: func() *bench.PointConfig {
			pc := release.DefaultBench()
			pc.Dataset.InputLen, pc.Dataset.OutputLen, pc.NumPrompts, pc.Load.MaxConcurrency = 128, 128, 3, 1
			return &pc
		}()}},
	} {
		tc.cfg.Target, tc.cfg.Store, tc.cfg.Trigger = tgt, store, "ttisctl"
		out, err := release.Run(context.Background(), tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, name := range []string{release.ReportJSON, release.ReportMarkdown} {
			if files[name], err = os.ReadFile(filepath.Join(out.Dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		rep, dir, err := release.Rebuild(context.Background(), store, out.Manifest.ID, release.RebuildOptions{Now: func() time.Time { return time.Unix(2e9, 0) }})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if dir != out.Dir || rep.Acceptance.Verdict != out.Report.Acceptance.Verdict {
			t.Errorf("%s: rebuilt %s with verdict %s, the run %s with %s", tc.name, dir, rep.Acceptance.Verdict, out.Dir, out.Report.Acceptance.Verdict)
		}
		for name, before := range files {
			after, err := os.ReadFile(filepath.Join(out.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if name == release.ReportJSON && !bytes.Contains(after, []byte(`"generated_at": "2033-05-18T03:33:20Z"`)) {
				t.Errorf("%s: %s was not rewritten", tc.name, name)
			}
			if a, b := generatedAt.ReplaceAll(after, nil), generatedAt.ReplaceAll(before, nil); !bytes.Equal(a, b) {
				t.Errorf("%s: rebuilt %s differs from the run's:\n--- run ---\n%s\n--- rebuilt ---\n%s", tc.name, name, b, a)
			}
		}
	}
}
