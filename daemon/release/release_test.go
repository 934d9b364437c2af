package release

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/daemon/runs"
	"github.com/ttis-dev/ttis/evalsuite/results"
	"github.com/ttis-dev/ttis/units/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func f(v float64) *float64 { return &v }

// benchPoint grades one measured point against a target the way
// bench.RunSweep does.
func benchPoint(isl, osl, c int, ttft, tpot, tput float64, target *catalog.PerfTarget, status string, failed int) report.Point {
	p := report.Point{ISL: isl, OSL: osl, Concurrency: c, NumPrompts: 8 * c, Source: "target", Completed: 8*c - failed, Failed: failed,
		MeanInputLen: float64(isl), MeanOutputLen: float64(osl), TTFTms: ttft, P50TTFTms: ttft * 0.9, P99TTFTms: ttft * 1.5,
		TPOTms: tpot, ITLms: tpot, E2ELms: ttft + tpot*float64(osl-1), TputUser: 1000 / tpot, TputInput: tput * float64(isl) / float64(osl),
		TputOutput: tput, TputTotal: tput * float64(isl+osl) / float64(osl), ReqTput: tput / float64(osl),
		ResultFile: "benchmark.json"}
	p.Grade = grade.Grade(grade.Input{Target: target, Factors: grade.Factors(nil), Required: catalog.RequiredTiers(status),
		Measured: grade.Measured{TTFTms: ttft, TputUser: 1000 / tpot, Tput: tput}, Completed: p.Completed, Failed: failed})
	return p
}

func fixtureReport(status string) *Report {
	tgt := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 51, TputUser: 21, Tput: 21}
	pts := []report.Point{
		benchPoint(128, 128, 1, 60, 50, 19.5, tgt, status, 0),
		benchPoint(128, 1024, 1, 70, 48, 20.5, nil, status, 0),
	}
	r := &Report{
		Metadata: Metadata{ReportID: "Llama-3.1-8B-Instruct_2026-01-02_03-04-05", RunID: "20260102T030405Z-release-abcdef",
			Unit: "llama-sim", Model: "Llama-3.1-8B-Instruct", ServedModel: "Llama-3.1-8B-Instruct", Device: "n150", Runtime: "sim",
			Simulated: true, ModelStatus: catalog.StatusDisplay(status), Workflow: WorkflowRelease, Limit: "smoke",
			GeneratedAt: "2026-01-02T03:10:00Z", BaseURL: "http://127.0.0.1:8000", TargetsSource: "catalog",
			EvalTasks: "gsm8k,ttis_arith", TTISVersion: "test"},
		Benchmarks: &BenchSection{Rows: BenchRowsOf(pts), TierFactors: map[string]float64{"functional": 0.1, "complete": 0.5, "target": 1}},
		Evals: &EvalSection{Rows: []EvalRow{
			{Task: "gsm8k", Tolerance: 0.05, Published: f(84.5), GPUReference: f(83.1), Score: f(75), ScoreStderr: f(2.5),
				RatioToPublished: f(75 / 84.5), RatioToReference: f(75 / 83.1), Check: results.Fail, Basis: "GPU reference", Samples: 40},
			{Task: "ttis_arith", Tolerance: 0.05, Score: f(100), ScoreStderr: f(0), Check: results.NA, Basis: "no reference", Samples: 3},
		}},
	}
	r.Acceptance = Accept(status, r.Benchmarks, r.Evals)
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s", name, got)
	}
}

func TestReportGolden(t *testing.T) {
	r := fixtureReport(catalog.StatusFunctional)
	prev := fixtureReport(catalog.StatusFunctional)
	prev.Benchmarks.Rows[0].TTFTms = f(50) // now 60: +20 %
	prev.Evals.Rows[0].Score = f(82)       // now 75, stderr 2.5
	r.Regressions = Compare("20260101T030405Z-release-123456", prev, r, DefaultThresholds())
	if len(r.Regressions.Items) != 2 {
		t.Errorf("fixture regressions = %+v, want TTFT and gsm8k", r.Regressions.Items)
	}
	golden(t, "report.md", Markdown(r))
	js, err := JSON(r)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", js)

	// report.json reads back into the same report.
	back, err := ParseJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	js2, err := JSON(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(js, js2) {
		t.Errorf("report.json does not survive a read and re-render:\n%s", js2)
	}
}

func TestHTMLSelfContained(t *testing.T) {
	r := fixtureReport(catalog.StatusFunctional)
	r.Metadata.Unit = `<script>alert(1)</script>`
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, want := range []string{"SIMULATED", "<svg", "TTFT (ms), ISL 128 / OSL 128", "polyline", "class=\"tg\"", "Blockers", "gsm8k"} {
		if !strings.Contains(s, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(s, "<script>alert") {
		t.Error("report.html does not escape metadata")
	}
	// No external assets: the only URL is the SVG namespace and the
	// server's address in the metadata table.
	ext := regexp.MustCompile(`(?i)(src|href)\s*=|@import|url\(`)
	if m := ext.FindString(s); m != "" {
		t.Errorf("report.html references an external asset: %q", m)
	}
}

// TestAccept is the acceptance table: model statuses × benchmark tier
// outcomes × eval outcomes.
func TestAccept(t *testing.T) {
	tgt := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 20, Tput: 20}
	// TTFT ratios: 0.9 meets every tier; 1.5 meets complete (2×) but not
	// target; 5 meets only functional (10×); 20 meets none.
	benchOf := func(status string, ttftX float64) *BenchSection {
		return &BenchSection{Rows: BenchRowsOf([]report.Point{benchPoint(128, 128, 1, 50*ttftX, 1000/25.0, 25, tgt, status, 0)})}
	}
	evalsOf := func(c results.Check, errored int) *EvalSection {
		return &EvalSection{Rows: []EvalRow{{Task: "gsm8k", Score: f(50), Check: c, Samples: 10, Errored: errored, Tolerance: 0.05}}}
	}
	tests := []struct {
		name      string
		status    string
		bench     *BenchSection
		evals     *EvalSection
		pass      bool
		blockers  []string
		benchStat string
		evalStat  string
	}{
		{"experimental, every tier fails, eval fails", catalog.StatusExperimental, benchOf(catalog.StatusExperimental, 20), evalsOf(results.Fail, 0), true, nil, CategoryNA, CategoryNA},
		{"experimental, failed requests", catalog.StatusExperimental, &BenchSection{Rows: BenchRowsOf([]report.Point{benchPoint(128, 128, 1, 40, 40, 25, tgt, catalog.StatusExperimental, 2)})}, nil, false, []string{"benchmarks:isl-128_osl-128_c-1"}, CategoryFail, CategoryAbsent},
		{"functional, functional tier met", catalog.StatusFunctional, benchOf(catalog.StatusFunctional, 5), evalsOf(results.Pass, 0), true, nil, CategoryPass, CategoryPass},
		{"functional, no tier met", catalog.StatusFunctional, benchOf(catalog.StatusFunctional, 20), nil, false, []string{"benchmarks:isl-128_osl-128_c-1"}, CategoryFail, CategoryAbsent},
		{"functional, eval below reference", catalog.StatusFunctional, benchOf(catalog.StatusFunctional, 0.9), evalsOf(results.Fail, 0), false, []string{"evals:gsm8k"}, CategoryPass, CategoryFail},
		// As upstream: a point passes when any one tier passes all its
		// checks, so enforcement only bites when no tier does.
		{"complete, only functional met", catalog.StatusComplete, benchOf(catalog.StatusComplete, 5), evalsOf(results.NA, 0), true, nil, CategoryPass, CategoryNA},
		{"complete, no tier met", catalog.StatusComplete, benchOf(catalog.StatusComplete, 20), evalsOf(results.NA, 0), false, []string{"benchmarks:isl-128_osl-128_c-1"}, CategoryFail, CategoryNA},
		{"experimental, no tier met, waived", catalog.StatusExperimental, benchOf(catalog.StatusExperimental, 20), nil, true, nil, CategoryNA, CategoryAbsent},
		{"complete, complete tier met", catalog.StatusComplete, benchOf(catalog.StatusComplete, 1.5), evalsOf(results.NA, 0), true, nil, CategoryPass, CategoryNA},
		{"top perf, complete met (any tier passes the point)", catalog.StatusTopPerf, benchOf(catalog.StatusTopPerf, 1.5), nil, true, nil, CategoryPass, CategoryAbsent},
		{"top perf, every tier met", catalog.StatusTopPerf, benchOf(catalog.StatusTopPerf, 0.9), evalsOf(results.Pass, 0), true, nil, CategoryPass, CategoryPass},
		{"functional, nothing graded", catalog.StatusFunctional, &BenchSection{Rows: BenchRowsOf([]report.Point{benchPoint(128, 128, 1, 40, 40, 25, nil, catalog.StatusFunctional, 0)})}, nil, false, []string{"benchmarks:targets"}, CategoryFail, CategoryAbsent},
		{"unknown model, nothing graded", "", &BenchSection{Rows: BenchRowsOf([]report.Point{benchPoint(128, 128, 1, 40, 40, 25, nil, "", 0)})}, evalsOf(results.NA, 0), true, nil, CategoryNA, CategoryNA},
		{"eval samples errored", catalog.StatusExperimental, nil, evalsOf(results.Pass, 3), false, []string{"evals:gsm8k"}, CategoryAbsent, CategoryFail},
		{"sweep could not run", catalog.StatusExperimental, &BenchSection{Error: "connection refused"}, nil, false, []string{"task:benchmarks"}, CategoryFail, CategoryAbsent},
		{"eval workflow failed", catalog.StatusComplete, benchOf(catalog.StatusComplete, 0.9), &EvalSection{Error: "no such task"}, false, []string{"task:evals"}, CategoryPass, CategoryFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Accept(tc.status, tc.bench, tc.evals)
			var keys []string
			for _, b := range a.Blockers {
				keys = append(keys, b.Key)
				if b.Message == "" {
					t.Errorf("blocker %s has no message", b.Key)
				}
			}
			if a.Passed != tc.pass || strings.Join(keys, ",") != strings.Join(tc.blockers, ",") {
				t.Errorf("passed=%v blockers=%v; want %v %v", a.Passed, keys, tc.pass, tc.blockers)
			}
			if a.Categories[0].Status != tc.benchStat || a.Categories[1].Status != tc.evalStat {
				t.Errorf("categories %s/%s, want %s/%s", a.Categories[0].Status, a.Categories[1].Status, tc.benchStat, tc.evalStat)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	row := func(ttft, tpot, tput float64) BenchRow {
		return BenchRow{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: f(ttft), TPOTms: f(tpot), TputOutput: f(tput), TputUser: f(1000 / tpot)}
	}
	ev := func(score, se float64) EvalRow { return EvalRow{Task: "gsm8k", Score: f(score), ScoreStderr: f(se)} }
	rep := func(b BenchRow, e EvalRow) *Report {
		return &Report{Benchmarks: &BenchSection{Rows: []BenchRow{b}}, Evals: &EvalSection{Rows: []EvalRow{e}}}
	}
	prev := rep(row(100, 50, 20), ev(80, 2))
	tests := []struct {
		name string
		cur  *Report
		want []string
	}{
		{"unchanged", rep(row(100, 50, 20), ev(80, 2)), nil},
		{"within thresholds", rep(row(109, 54, 18.2), ev(78.5, 2)), nil},
		{"ttft up 11%", rep(row(111, 50, 20), ev(80, 2)), []string{"mean_ttft_ms"}},
		{"tpot up, tput/user down", rep(row(100, 60, 20), ev(80, 2)), []string{"mean_tpot_ms", "tput_user"}},
		{"throughput down 11%", rep(row(100, 50, 17.8), ev(80, 2)), []string{"tps_output_throughput"}},
		{"score beyond stderr", rep(row(100, 50, 20), ev(77, 2)), []string{"score"}},
		{"improvement is no regression", rep(row(50, 25, 40), ev(95, 2)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rg := Compare("prev", prev, tc.cur, DefaultThresholds())
			var got []string
			for _, it := range rg.Items {
				got = append(got, it.Metric)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("regressions %v, want %v", got, tc.want)
			}
			if rg.Compared != 5 {
				t.Errorf("compared %d metrics, want 5", rg.Compared)
			}
		})
	}
	// Sub-millisecond latency jitter (and the tput/user it implies) is not
	// a regression.
	small := Compare("prev", rep(row(1, 0.01, 20), ev(80, 2)), rep(row(1.5, 0.02, 20), ev(80, 2)), DefaultThresholds())
	if len(small.Items) != 0 {
		t.Errorf("sub-millisecond changes flagged: %+v", small.Items)
	}
}

func TestChooseEvalTasks(t *testing.T) {
	if got := ChooseEvalTasks("no-such-model", nil); strings.Join(got, ",") != strings.Join(BuiltinEvalTasks, ",") {
		t.Errorf("unknown model: %v", got)
	}
	refs := catalog.ModelEvalRefs("Llama-3.1-8B-Instruct")
	var task string
	for _, r := range refs {
		if r.Task == "gsm8k" || r.Task == "ifeval" {
			task = r.Task
			break
		}
	}
	if task == "" {
		t.Skip("the catalog has no gsm8k or ifeval reference for Llama-3.1-8B-Instruct")
	}
	if got := ChooseEvalTasks("Llama-3.1-8B-Instruct", nil); strings.Join(got, ",") != strings.Join(BuiltinEvalTasks, ",") {
		t.Errorf("no datasets: %v, want the built-in tasks", got)
	}
	if got := ChooseEvalTasks("Llama-3.1-8B-Instruct", map[string]string{task: "x.jsonl"}); strings.Join(got, ",") != task {
		t.Errorf("with a %s dataset: %v", task, got)
	}
}

func FuzzParseJSON(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "report.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"sections":[{"kind":"benchmarks","data":[{"isl":1,"mean_ttft_ms":null}]},{"kind":"evals","data":{}}]}`))
	f.Add([]byte(`{"sections":[{"kind":"benchmarks","targets":{"tier_factors":{"x":"y"}},"data":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseJSON(b)
		if err != nil {
			return
		}
		// Whatever parses renders again.
		if _, err := JSON(r); err != nil {
			t.Errorf("JSON of a parsed report: %v", err)
		}
		_ = Markdown(r)
		if _, err := HTML(r); err != nil {
			t.Errorf("HTML of a parsed report: %v", err)
		}
	})
}

// BenchmarkRender renders the three report files of the fixture.
func BenchmarkRender(b *testing.B) {
	r := fixtureReport(catalog.StatusFunctional)
	for i := 0; i < b.N; i++ {
		_ = Markdown(r)
		if _, err := JSON(r); err != nil {
			b.Fatal(err)
		}
		if _, err := HTML(r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRunRefusals(t *testing.T) {
	store := &runs.Store{Root: t.TempDir()}
	target := Target{Unit: "u", BaseURL: "http://127.0.0.1:9", Model: "M"}
	unlock, err := store.Lock("u")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"busy unit", Config{Target: target, Workflow: WorkflowRelease, Store: store}, "another workflow run"},
		{"bad workflow", Config{Target: target, Workflow: "stress", Store: store}, "workflow \"stress\""},
		{"bad limit", Config{Target: target, Workflow: WorkflowEvals, Limit: "huge", Store: store}, "limit \"huge\""},
		{"no store", Config{Target: target, Workflow: WorkflowEvals}, "no results store"},
		{"no model", Config{Target: Target{Unit: "u", BaseURL: "http://x"}, Workflow: WorkflowEvals, Store: store}, "model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run error = %v, want %q", err, tc.want)
			}
		})
	}
	if list, _ := store.List(""); len(list) != 0 {
		t.Errorf("refused runs were recorded: %v", list)
	}
}
