package release_test

import (
	"context"
	"encoding/json"
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
