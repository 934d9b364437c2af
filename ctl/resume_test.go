package ctl

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/units/limit"
)

// cancelOnFirst cancels a run once its first request finishes.
type cancelOnFirst struct{ cancel context.CancelFunc }

func (p cancelOnFirst) Logf(string, ...any) {}
func (p cancelOnFirst) Step(string, int)    {}
func (p cancelOnFirst) Done(int)            { p.cancel() }

// TestResumeIgnoresNewTraceCaptureChoice: `ttisctl bench --resume RUN
// --no-trace-capture` on a run that started with trace capture finishes it
// as it started, and says the flag was ignored.
func TestResumeIgnoresNewTraceCaptureChoice(t *testing.T) {
	var n atomic.Int32
	inf := fakeInference(t, false, &n)
	state := t.TempDir()
	store := &runs.Store{Root: filepath.Join(state, "runs")}
	pc := release.DefaultBench()
	pc.ServerTokenizer, pc.Load.NumWarmups = false, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	part, err := release.Run(ctx, release.Config{Workflow: release.WorkflowBenchmarks, Limit: limit.CICommit, Bench: &pc,
		NumPrompts: 1, MaxConcurrency: 1, Store: store, Progress: cancelOnFirst{cancel},
		Target: &target.Target{Unit: "url-served-model-n150", BaseURL: inf.URL, Model: "served-model", CatalogModel: "served-model",
			Device: "n150", TraceCapture: true, MaxModelLen: 2048}})
	if !errors.Is(err, release.ErrInterrupted) || part == nil {
		t.Fatalf("interrupted run: %v", err)
	}
	out, code := runCtl(t, "bench", "--resume", part.Manifest.ID, "--state-dir", state, "--no-trace-capture", "--no-progress")
	if code != 0 || !strings.Contains(out, "--no-trace-capture ignored: run "+part.Manifest.ID+" resumes with the choice it started with (trace capture as the target asks)") {
		t.Errorf("resume: exit %d\n%s", code, out)
	}
}
