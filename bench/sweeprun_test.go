package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ttis-dev/ttis/bench/client"
	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/units/catalog"
)

// fakeServer streams max_tokens one-token chunks; every failEvery-th
// request (when > 0) gets a 500.
func fakeServer(t *testing.T, failEvery int32) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		if k := n.Add(1); failEvery > 0 && k%failEvery == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"engine crashed"}}`)
			return
		}
		for i := range b.MaxTokens {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t%d\"}]}\n\n", i)
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", b.MaxTokens)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func sweepConfig(url, dir string, pts []sweep.Point) SweepConfig {
	return SweepConfig{
		Base: PointConfig{
			Client:  client.Config{BaseURL: url, Model: "m", IgnoreEOS: true},
			Dataset: DatasetConfig{Name: "random"},
		},
		Points:   pts,
		Factors:  grade.Factors(nil),
		Required: catalog.RequiredTiers(catalog.StatusTopPerf),
		Metadata: report.Metadata{ReportID: "r", Model: "m", Device: "n150"},
		OutDir:   dir,
	}
}

func TestRunSweepGradesAndWrites(t *testing.T) {
	srv := fakeServer(t, 0)
	dir := t.TempDir()
	target := &catalog.PerfTarget{ISL: 16, OSL: 4, Concurrency: 1, TTFTms: 60000, TputUser: 0.001, Tput: 0.001}
	pts := []sweep.Point{{ISL: 16, OSL: 4, Concurrency: 1, NumPrompts: 3, Target: target, Source: "target"}, {ISL: 16, OSL: 8, Concurrency: 2, NumPrompts: 4, Source: "sweep"}}
	res, err := RunSweep(context.Background(), sweepConfig(srv.URL, dir, pts))
	if err != nil {
		t.Fatal(err)
	}
	if res.Incomplete || len(res.Points) != 2 || res.Points[0].Grade.Status != grade.StatusPass || res.Points[1].Grade.Status != grade.StatusNA {
		t.Fatalf("result %+v", res)
	}
	if p := res.Points[1]; p.Completed != 4 || p.MeanOutputLen != 8 || p.MeanInputLen != 16 || p.ResultFile == "" {
		t.Errorf("point %+v", p)
	}
	if len(res.Files) != 5 {
		t.Errorf("files %v", res.Files)
	}
}

func TestRunSweepFailuresAndCancel(t *testing.T) {
	srv := fakeServer(t, 2)
	dir := t.TempDir()
	pts := []sweep.Point{{ISL: 16, OSL: 4, Concurrency: 1, NumPrompts: 4}, {ISL: 16, OSL: 4, Concurrency: 1, NumPrompts: 2}, {ISL: 16, OSL: 4, Concurrency: 1, NumPrompts: 2}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := sweepConfig(srv.URL, dir, pts)
	sc.OnPoint = func(i int, _ sweep.Point) {
		if i == 2 {
			cancel()
		}
	}
	res, err := RunSweep(ctx, sc)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("err %v res %v", err, res)
	}
	if !res.Incomplete || len(res.Points) != 2 {
		t.Fatalf("result %+v", res)
	}
	if p := res.Points[0]; p.Failed != 2 || p.Completed != 2 || p.Grade.Status != grade.StatusError {
		t.Errorf("point %+v", p)
	}
	md, err := os.ReadFile(filepath.Join(dir, SummaryMarkdown))
	if err != nil || !strings.Contains(string(md), "2 of 4 requests failed") {
		t.Errorf("summary %s %v", md, err)
	}
	var raw map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, res.Points[0].ResultFile))
	if json.Unmarshal(b, &raw) != nil || raw["failure_reasons"].(map[string]any)["HTTP 500: engine crashed"] != 2.0 {
		t.Errorf("failure reasons in %s", b)
	}
}

func TestTraceShapes(t *testing.T) {
	pts := []sweep.Point{{ISL: 2048, OSL: 128, Concurrency: 32}, {ISL: 128, OSL: 128, Concurrency: 1}, {ISL: 128, OSL: 1024, Concurrency: 1},
		{ISL: 128, OSL: 128, Concurrency: 32}, {ISL: 0, Concurrency: 4}}
	got := TraceShapes(pts)
	want := []TraceShape{{128, 1}, {128, 32}, {2048, 32}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TraceShapes = %v, want %v", got, want)
	}
}

// TestSweepCapturesTracesFirst checks that every (ISL, batch) shape is
// warmed up, with batch concurrent requests of TraceCaptureOSL tokens,
// before the first measured request, and that the condition is recorded.
func TestSweepCapturesTracesFirst(t *testing.T) {
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
	t.Cleanup(srv.Close)
	pts := []sweep.Point{{ISL: 16, OSL: 8, Concurrency: 2, NumPrompts: 2}, {ISL: 32, OSL: 8, Concurrency: 1, NumPrompts: 1}}
	sc := sweepConfig(srv.URL, t.TempDir(), pts)
	sc.TraceCapture = true
	var seen []TraceShape
	sc.OnTraceCapture = func(i, n int, s TraceShape) { seen = append(seen, s) }
	res, err := RunSweep(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TraceCaptures) != 2 || res.TraceCaptures[0].Completed != 2 || res.TraceCaptures[1].Completed != 1 || len(seen) != 2 {
		t.Fatalf("captures = %+v, callbacks %v", res.TraceCaptures, seen)
	}
	// The 2 + 1 capture requests come first; no measured request is one.
	mu.Lock()
	defer mu.Unlock()
	if len(maxTokens) < 6 {
		t.Fatalf("only %d requests: %v", len(maxTokens), maxTokens)
	}
	for i, n := range maxTokens {
		if (i < 3) != (n == TraceCaptureOSL) {
			t.Errorf("request %d asked %d tokens (order %v)", i, n, maxTokens)
		}
	}
	b, err := os.ReadFile(filepath.Join(sc.OutDir, SummaryMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "| Trace capture | on: 2 (ISL, batch) shapes warmed up before measuring |") {
		t.Errorf("summary does not record the trace capture:\n%s", b)
	}
}
