package results

import (
	"bufio"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttis-dev/ttis/evalsuite"
	"github.com/ttis-dev/ttis/evalsuite/filter"
	"github.com/ttis-dev/ttis/evalsuite/runner"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fp(v float64) *float64 { return &v }

func sampleRun() Run {
	task := &evalsuite.Task{Name: "gsm8k", Version: "3", Output: evalsuite.GenerateUntil, NumFewShot: 5,
		Filters: []filter.Chain{filter.GSM8KStrict(), filter.GSM8KFlexible()},
		Metrics: []evalsuite.MetricSpec{{Name: "exact_match", Aggregation: "mean", HigherIsBetter: true}},
		Config:  map[string]any{"task": "gsm8k"}}
	res := &runner.Result{
		Task: task, NOriginal: 1319, NEffective: 4,
		Aggregates: []evalsuite.Aggregate{
			{Metric: "exact_match", Filter: "strict-match", Value: 0.5, Stderr: 0.28867513459481287, N: 4},
			{Metric: "exact_match", Filter: "flexible-extract", Value: 0.75, Stderr: 0.25, N: 4},
		},
		Errors: runner.ErrorSummary{Errored: 1, ByKind: map[string]int{"http_status": 1}, Policy: runner.ErrorsAsWrong,
			Examples: []string{"doc 3 (http_status): request 0: http_status 500 after 3 attempts: POST /v1/completions: boom"}},
		Samples: []runner.Sample{{DocID: 0, Doc: map[string]any{"question": "q", "answer": "#### 1"}, Target: "#### 1",
			Requests:  []evalsuite.Instance{{Kind: evalsuite.KindGenerate, Context: "Question: q\nAnswer:", Gen: &evalsuite.GenKwargs{MaxGenToks: 256}}},
			Responses: []evalsuite.Response{{Text: " #### 1"}},
			Scored: []evalsuite.Scored{{Filter: "strict-match", Filtered: "1", Scores: evalsuite.Scores{"exact_match": {1}}},
				{Filter: "flexible-extract", Filtered: "1", Scores: evalsuite.Scores{"exact_match": {1}}}}},
			{DocID: 3, Doc: map[string]any{"question": "q3"}, Err: &runner.SampleError{Kind: "http_status", Message: "boom"}}},
	}
	start := time.Date(2026, 11, 22, 1, 2, 3, 456789000, time.UTC)
	ref := catalog.EvalRef{Model: "M", Task: "gsm8k", Published: fp(80), GPUReference: fp(70), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"exact_match,flexible-extract"}}
	return Run{Model: "org/M", BaseURL: "http://127.0.0.1:8000", API: "completions", Concurrency: 8, Limit: "gsm8k=4", LimitMode: "smoke",
		Seed: 1234, MaxRetries: 3, Start: start, End: start.Add(2500 * time.Millisecond), Tasks: []*runner.Result{res},
		Grades: []Grade{GradeTask("gsm8k", res.Aggregates, &ref, "")}, Version: "test"}
}

func TestSummaryGolden(t *testing.T) {
	got := Markdown(sampleRun())
	path := filepath.Join("testdata", "summary.golden.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("summary differs from %s (go test -update to accept):\n%s", path, got)
	}
}

func TestWriteLayout(t *testing.T) {
	dir := t.TempDir()
	files, err := Write(dir, sampleRun())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(files.Results) != "results_2026-11-22T01-02-03.456789.json" {
		t.Errorf("results name %s", files.Results)
	}
	b, err := os.ReadFile(files.Results)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	r := doc["results"].(map[string]any)["gsm8k"].(map[string]any)
	if r["exact_match,strict-match"] != 0.5 || r["exact_match_stderr,flexible-extract"] != 0.25 || r["alias"] != "gsm8k" {
		t.Errorf("results entry %v", r)
	}
	for _, k := range []string{"configs", "versions", "n-shot", "higher_is_better", "n-samples", "config", "date", "model_name_sanitized", "total_evaluation_time_seconds"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("missing top-level key %s", k)
		}
	}
	if doc["model_name_sanitized"] != "org__M" || doc["total_evaluation_time_seconds"] != "2.500" {
		t.Errorf("sanitized %v, time %v", doc["model_name_sanitized"], doc["total_evaluation_time_seconds"])
	}
	errs := doc["ttis"].(map[string]any)["errors"].(map[string]any)["gsm8k"].(map[string]any)
	if errs["errored"] != 1.0 || errs["counted_as"] != "wrong" {
		t.Errorf("errors %v", errs)
	}
	f, err := os.Open(files.Samples[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 4 {
		t.Fatalf("%d sample lines, want 2 docs × 2 filters", len(lines))
	}
	if lines[0]["filter"] != "strict-match" || lines[0]["exact_match"] != 1.0 || lines[0]["filtered_resps"].([]any)[0] != "1" {
		t.Errorf("sample line %v", lines[0])
	}
	if lines[2]["error"] == nil || lines[2]["exact_match"] != 0.0 || lines[2]["counted_as"] != "wrong" {
		t.Errorf("errored sample line %v", lines[2])
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestGradeTask(t *testing.T) {
	aggs := []evalsuite.Aggregate{{Metric: "exact_match", Filter: "strict-match", Value: 0.70}, {Metric: "exact_match", Filter: "flexible-extract", Value: 0.80}}
	tests := []struct {
		name  string
		ref   *catalog.EvalRef
		mode  string
		score float64
		check verdict.Verdict
		basis string
	}{
		{"no reference", nil, "", 70, verdict.NA, "no reference"},
		{"gpu reference passes at the tolerance edge", &catalog.EvalRef{GPUReference: fp(84.2105263), Published: fp(99), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"exact_match,flexible-extract"}}, "", 80, verdict.Pass, "GPU reference"},
		{"gpu reference fails", &catalog.EvalRef{GPUReference: fp(90), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"exact_match,flexible-extract"}}, "", 80, verdict.Fail, "GPU reference"},
		{"published fallback", &catalog.EvalRef{Published: fp(72), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"exact_match,strict-match"}}, "", 70, verdict.Pass, "published score"},
		{"keys mean", &catalog.EvalRef{Published: fp(75), Tolerance: 0.05, ScoreFn: "task_keys_mean", ScoreKeys: []string{"exact_match,strict-match", "exact_match,flexible-extract"}}, "", 75, verdict.Pass, "published score"},
		{"missing key falls back to the first metric", &catalog.EvalRef{Published: fp(70), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"acc,none"}}, "", 70, verdict.Pass, "published score"},
		{"subset reference for the mode", &catalog.EvalRef{GPUReference: fp(70), SubsetReference: map[string]float64{"ci_nightly": 90}, Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"exact_match,flexible-extract"}}, "ci_nightly", 80, verdict.Fail, "subset reference (ci_nightly)"},
		{"fraction reference read in percent", &catalog.EvalRef{GPUReference: fp(0.80), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"exact_match,strict-match"}}, "", 70, verdict.Fail, "GPU reference"},
	}
	for _, tt := range tests {
		g := GradeTask("t", aggs, tt.ref, tt.mode)
		if g.Score == nil || math.Abs(*g.Score-tt.score) > 1e-9 || g.Check != tt.check || g.Basis != tt.basis {
			t.Errorf("%s: score %v check %s basis %q, want %v %s %q", tt.name, g.Score, g.Check, g.Basis, tt.score, tt.check, tt.basis)
		}
	}
	if g := GradeTask("t", nil, nil, ""); g.Score != nil || g.Check != verdict.NA {
		t.Errorf("no aggregates: %+v", g)
	}
}

func TestMultipleChoiceSampleShape(t *testing.T) {
	task := &evalsuite.Task{Name: "mc", Version: "1", Output: evalsuite.MultipleChoice,
		Metrics: []evalsuite.MetricSpec{{Name: "acc"}, {Name: "acc_norm"}}}
	res := &runner.Result{Task: task, NOriginal: 1, NEffective: 1,
		Aggregates: []evalsuite.Aggregate{{Metric: "acc", Filter: "none", Value: 1, Stderr: math.NaN(), N: 1}},
		Errors:     runner.ErrorSummary{Policy: runner.ErrorsAsWrong},
		Samples: []runner.Sample{{DocID: 0, Target: 1,
			Requests: []evalsuite.Instance{{Kind: evalsuite.KindLoglikelihood, Context: "Q:", Continuation: " A"},
				{Kind: evalsuite.KindLoglikelihood, Index: 1, Context: "Q:", Continuation: " B"}},
			Responses: []evalsuite.Response{{LogLikelihood: -2}, {LogLikelihood: -0.5, IsGreedy: true}},
			Scored: []evalsuite.Scored{{Filter: "none", Filtered: [][2]any{{-2.0, false}, {-0.5, true}},
				Scores: evalsuite.Scores{"acc": {1}, "acc_norm": {1}}}}}}}
	run := sampleRun()
	run.Tasks, run.Grades = []*runner.Result{res}, nil
	files, err := Write(t.TempDir(), run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(files.Samples[0])
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Resps         [][][]any                 `json:"resps"`
		FilteredResps [][]any                   `json:"filtered_resps"`
		Arguments     map[string]map[string]any `json:"arguments"`
		Acc           float64                   `json:"acc"`
	}
	if err := json.Unmarshal(b, &line); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(line.Resps) != 2 || len(line.FilteredResps) != 2 || line.FilteredResps[1][1] != true || line.Acc != 1 {
		t.Errorf("sample line %s", b)
	}
	if line.Arguments["gen_args_1"]["arg_1"] != " B" {
		t.Errorf("arguments %v", line.Arguments)
	}
	var doc map[string]any
	rb, _ := os.ReadFile(files.Results)
	_ = json.Unmarshal(rb, &doc)
	if se := doc["results"].(map[string]any)["mc"].(map[string]any)["acc_stderr,none"]; se != "N/A" {
		t.Errorf("a NaN stderr is written as N/A, got %v", se)
	}
}

// TestGradeWERUnit: lmms-eval's librispeech reports WER in percent; a
// WER-unit reference grades 100 − WER, unscaled.
func TestGradeWERUnit(t *testing.T) {
	ref := &catalog.EvalRef{Published: fp(96.09), Tolerance: 0.05, ScoreFn: "task_single_key", ScoreKeys: []string{"wer,none"}, Unit: "WER"}
	for _, tt := range []struct {
		wer, score float64
		check      verdict.Verdict
	}{{3.91, 96.09, verdict.Pass}, {8, 92, verdict.Pass}, {12, 88, verdict.Fail}, {100, 0, verdict.Fail}} {
		g := GradeTask("librispeech_test_other", []evalsuite.Aggregate{{Metric: "wer", Filter: "none", Value: tt.wer}}, ref, "")
		if g.Score == nil || math.Abs(*g.Score-tt.score) > 1e-9 || g.Check != tt.check {
			t.Errorf("WER %v: score %v check %s, want %v %s", tt.wer, g.Score, g.Check, tt.score, tt.check)
		}
	}
}

// TestGradeCustomReferenceNotGraded: a reference whose score function is
// custom (tt-inference-server's own media checks) is shown, never
// compared with the score.
func TestGradeCustomReferenceNotGraded(t *testing.T) {
	ref := &catalog.EvalRef{Published: fp(85.2), Tolerance: 0.05, ScoreFn: "custom"}
	g := GradeTask("embedding", []evalsuite.Aggregate{{Metric: "cosine_spearman", Filter: "none", Value: 0.9}}, ref, "")
	if g.Score == nil || math.Abs(*g.Score-90) > 1e-9 || g.Check != verdict.NA || g.RatioToPublished != nil || !strings.Contains(g.Basis, "not graded") {
		t.Errorf("custom reference: %+v", g)
	}
}

// TestGradeTTSThreshold: tts_generation passes at a mean WER of at most
// 20%, tt-inference-server's bar, whatever the catalog's number.
func TestGradeTTSThreshold(t *testing.T) {
	ref := &catalog.EvalRef{Published: fp(14), Tolerance: 0.05, ScoreFn: "custom"}
	for _, tt := range []struct {
		intel float64
		check verdict.Verdict
	}{{0.95, verdict.Pass}, {0.80, verdict.Pass}, {0.79, verdict.Fail}, {0, verdict.Fail}} {
		g := GradeTask("tts_generation", []evalsuite.Aggregate{{Metric: "intelligibility", Filter: "none", Value: tt.intel}, {Metric: "wer", Filter: "none", Value: 1 - tt.intel}}, ref, "")
		if g.Score == nil || math.Abs(*g.Score-100*tt.intel) > 1e-9 || g.Check != tt.check {
			t.Errorf("intelligibility %v: %+v", tt.intel, g)
		}
	}
}
