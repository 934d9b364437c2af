package release_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ttis-dev/ttis/bench"
	"github.com/ttis-dev/ttis/bench/release"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/units/limit"
)

// TestPointCapturesTraces: a single-point bench of a target that asks for
// trace capture first warms its (ISL, batch) up with batch requests of
// TraceCaptureOSL tokens, as a sweep does, and records it; with
// NoTraceCapture it measures cold and says so.
func TestPointCapturesTraces(t *testing.T) {
	for _, off := range []bool{false, true} {
		var mu sync.Mutex
		var maxTokens []int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var b struct {
				MaxTokens int `json:"max_tokens"`
			}
			_ = json.NewDecoder(r.Body).Decode(&b)
			mu.Lock()
			maxTokens = append(maxTokens, b.MaxTokens)
			mu.Unlock()
			for i := range b.MaxTokens {
				fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t%d\"}]}\n\n", i)
			}
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", b.MaxTokens)
		}))
		pc := release.DefaultBench()
		pc.ServerTokenizer = false
		pc.Dataset.InputLen, pc.Dataset.OutputLen = 16, 8
		pc.NumPrompts, pc.Load.MaxConcurrency, pc.Load.NumWarmups = 3, 2, 0
		store := &runs.Store{Root: t.TempDir()}
		out, err := release.Run(context.Background(), release.Config{Workflow: release.WorkflowBenchmarks, Point: true, Bench: &pc,
			NoTraceCapture: off, Store: store,
			Target: &target.Target{Unit: "u", BaseURL: srv.URL, Model: "m", CatalogModel: "m", Device: "n150", Runtime: "vllm", TraceCapture: true}})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if out.Point == nil || out.Point.Summary.Completed != 3 {
			t.Fatalf("off=%v: point %+v", off, out.Point)
		}
		mu.Lock()
		got := maxTokens
		mu.Unlock()
		// Captured: 2 requests (the batch) of TraceCaptureOSL tokens first,
		// then the 3 measured ones of 8.
		want := []int{8, 8, 8}
		if !off {
			want = append([]int{bench.TraceCaptureOSL, bench.TraceCaptureOSL}, want...)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("off=%v: requests asked %v tokens, want %v", off, got, want)
		}
		b, err := os.ReadFile(filepath.Join(out.Dir, "benchmarks", bench.SummaryJSON))
		if err != nil {
			t.Fatal(err)
		}
		d, err := report.ParseJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		wantNote := "on: 1 (ISL, batch) shapes warmed up before measuring"
		if off {
			wantNote = "off"
		}
		if d.Metadata.TraceCapture != wantNote {
			t.Errorf("off=%v: summary records trace capture %q, want %q", off, d.Metadata.TraceCapture, wantNote)
		}
	}
}

// TestResumeKeepsTraceCaptureChoice: a sweep interrupted after its first
// point and resumed from its folder's plan warms the remaining points up
// only if the original run did (--no-trace-capture is not forgotten).
func TestResumeKeepsTraceCaptureChoice(t *testing.T) {
	for _, off := range []bool{true, false} {
		var mu sync.Mutex
		captures := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var b struct {
				MaxTokens int `json:"max_tokens"`
			}
			_ = json.NewDecoder(r.Body).Decode(&b)
			if b.MaxTokens == bench.TraceCaptureOSL {
				mu.Lock()
				captures++
				mu.Unlock()
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", b.MaxTokens)
		}))
		pc := release.DefaultBench()
		pc.ServerTokenizer, pc.Load.NumWarmups = false, 0
		tgt := &target.Target{Unit: "u", BaseURL: srv.URL, Model: "m", CatalogModel: "m", Device: "n150", Runtime: "vllm",
			TraceCapture: true, MaxModelLen: 4096}
		store := &runs.Store{Root: t.TempDir()}
		ctx, cancel := context.WithCancel(context.Background())
		// ci-commit plans several points, none of TraceCaptureOSL tokens.
		part, err := release.Run(ctx, release.Config{Workflow: release.WorkflowBenchmarks, Limit: limit.CICommit, Bench: &pc, NumPrompts: 1, MaxConcurrency: 1,
			NoTraceCapture: off, Store: store, Target: tgt, Progress: &cancelAfter{step: "point 1/", n: 1, cancel: cancel}})
		cancel()
		if part == nil || !errorsIsInterrupted(err) {
			srv.Close()
			t.Fatalf("off=%v: interrupted run: %v", off, err)
		}
		mu.Lock()
		captures = 0
		mu.Unlock()
		cfg, _, err := release.LoadConfig(context.Background(), part.Dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Target, cfg.Store = tgt, store
		done, err := release.Resume(context.Background(), cfg, part.Manifest.ID)
		srv.Close()
		if err != nil || done.Manifest.Status != runs.StatusComplete {
			t.Fatalf("off=%v: resume: %v %+v", off, err, done)
		}
		mu.Lock()
		got := captures
		mu.Unlock()
		if off && got != 0 {
			t.Errorf("a --no-trace-capture run resumed with %d trace-capture requests", got)
		}
		if !off && got == 0 {
			t.Errorf("a trace-capturing run resumed without capturing the remaining points")
		}
	}
}

func errorsIsInterrupted(err error) bool { return errors.Is(err, release.ErrInterrupted) }
