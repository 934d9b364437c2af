package release

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/target"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
	"github.com/ttis-dev/ttis/units/verdict"
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
			Simulated: true, ModelStatus: catalog.StatusName(status), Workflow: WorkflowRelease, Limit: "smoke",
			GeneratedAt: "2026-01-02T03:10:00Z", BaseURL: "http://127.0.0.1:8000", TargetsSource: "catalog",
			EvalTasks: "gsm8k,ttis_arith", TTISVersion: "test"},
		Benchmarks: &BenchSection{Rows: BenchRowsOf(pts), TierFactors: map[string]float64{"functional": 0.1, "complete": 0.5, "target": 1}},
		Evals: &EvalSection{Rows: []EvalRow{
			{Task: "gsm8k", Tolerance: 0.05, Published: f(84.5), GPUReference: f(83.1), Score: f(75), ScoreStderr: f(2.5),
				RatioToPublished: f(75 / 84.5), RatioToReference: f(75 / 83.1), Check: verdict.Fail, Basis: "GPU reference", Samples: 40},
			{Task: "ttis_arith", Tolerance: 0.05, Score: f(100), ScoreStderr: f(0), Check: verdict.NA, Basis: "no reference", Samples: 3},
			// Two references whose data the Hub could not give, for one
			// reason: said once in the reports, with one fix.
			{Task: "meta_ifeval", Role: RoleReference, Check: verdict.NA, NotRun: "no data: meta-llama/Llama-3.1-8B-Instruct-evals (Llama-3.1-8B-Instruct-evals__ifeval__strict__details; split latest)",
				NotRunCause: "the Hub could not be reached: http://127.0.0.1:9 (dial tcp 127.0.0.1:9: connect: connection refused)",
				Fix:         "ttisctl dataset pull meta_ifeval --catalog-model Llama-3.1-8B-Instruct"},
			{Task: "longbench_code_e", Role: RoleReference, Check: verdict.NA, NotRun: "no data: Xnhyacinth/LongBench (lcc_e, repobench-p_e; split test)",
				NotRunCause: "the Hub could not be reached: http://127.0.0.1:9 (dial tcp 127.0.0.1:9: connect: connection refused)",
				Fix:         "ttisctl dataset pull longbench_code_e"},
		}},
	}
	r.Evals.Rows[0].Role, r.Evals.Rows[1].Role = RoleReference, RoleSmoke
	r.Acceptance = Accept(&catalog.Spec{Status: status}, r.Benchmarks, r.Evals)
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
	// FUNCTIONAL enforces the functional tier alone: its target line is
	// dark, the others grey and labelled not enforced.
	for _, want := range []string{"SIMULATED", "<svg", "TTFT (ms), ISL 128 / OSL 128", "polyline", `class="tg t2 ne"`, `class="tg t0 en"`, "target (not enforced)", "Blockers", "gsm8k", "Targets: ISL 128 / OSL 128, concurrency 1", "Verdict: <span"} {
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

// A tier the status does not enforce reads grey in report.html, never a
// red FAIL beside the point's PASS; a server's terminal escape codes show
// as text (\x1b), and a long reason folds.
func TestHTMLReadsAsTheVerdict(t *testing.T) {
	r := fixtureReport(catalog.StatusFunctional)
	r.Evals.Error = "server said \x1b[31mred\x1b[0m and \u009b2J " + strings.Repeat("and a very long story ", 20)
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, r := range s {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			t.Fatalf("report.html holds control character %U", r)
		}
	}
	if !strings.Contains(s, `\x1b[31mred\x1b[0m`) || !strings.Contains(s, `\x9b2J`) {
		t.Errorf("escape codes not shown as text")
	}
	if !strings.Contains(s, "<details><summary>server said") {
		t.Errorf("a long error does not fold")
	}
	tiers := s[strings.Index(s, "<h3>Targets:"):]
	for _, row := range strings.Split(tiers, "<tr>") {
		if strings.Contains(row, "(not enforced)") && strings.Contains(row, `class="FAIL"`) {
			t.Errorf("a tier that is not enforced shows a red FAIL: %s", row)
		}
	}
	if !strings.Contains(tiers, `class="NOTENF">not enforced: fail`) {
		t.Errorf("the target tier's miss is not shown as not enforced:\n%s", tiers)
	}
}

// TestAccept is the verdict table: model statuses × benchmark tier
// outcomes × eval outcomes × what could not be measured.
func TestAccept(t *testing.T) {
	tgt := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 20, Tput: 20}
	// TTFT ratios: 0.9 meets every tier; 1.5 meets complete (2×) but not
	// target; 5 meets only functional (10×); 20 meets none.
	benchOf := func(status string, ttftX float64) *BenchSection {
		return &BenchSection{Rows: BenchRowsOf([]report.Point{benchPoint(128, 128, 1, 50*ttftX, 1000/25.0, 25, tgt, status, 0)})}
	}
	untargeted := func(status string) *BenchSection {
		p := benchPoint(128, 128, 1, 40, 40, 25, nil, status, 0)
		p.Source = "sweep"
		return &BenchSection{Rows: BenchRowsOf([]report.Point{p})}
	}
	evalsOf := func(c verdict.Verdict, errored int) *EvalSection {
		return &EvalSection{Rows: []EvalRow{{Task: "gsm8k", Role: RoleReference, Score: f(50), Check: c, Samples: 10, Errored: errored, Tolerance: 0.05}}}
	}
	notRun := &EvalSection{Rows: []EvalRow{
		{Task: "meta_ifeval", Role: RoleReference, NotRun: "needs its dataset", Check: verdict.NA},
		{Task: "ttis_arith", Role: RoleSmoke, Score: f(100), Check: verdict.NA, Samples: 3},
	}}
	spec := func(status string, known ...catalog.KnownIssue) *catalog.Spec {
		return &catalog.Spec{Status: status, KnownIssues: known}
	}
	const point = "benchmarks:isl-128_osl-128_c-1"
	tests := []struct {
		name             string
		spec             *catalog.Spec
		bench            *BenchSection
		evals            *EvalSection
		verdict          string
		blockers         []string
		missing          []string
		waived           int
		benchSt, evalsSt string
	}{
		{"experimental, every tier fails, eval fails", spec(catalog.StatusExperimental), benchOf(catalog.StatusExperimental, 20), evalsOf(verdict.Fail, 0), VerdictUngraded, nil, nil, 2, CategoryNA, CategoryNA},
		{"experimental, failed requests", spec(catalog.StatusExperimental), &BenchSection{Rows: BenchRowsOf([]report.Point{benchPoint(128, 128, 1, 40, 40, 25, tgt, catalog.StatusExperimental, 2)})}, nil, VerdictIncomplete, nil, []string{point}, 0, CategoryIncomplete, CategoryAbsent},
		{"functional, functional tier met", spec(catalog.StatusFunctional), benchOf(catalog.StatusFunctional, 5), evalsOf(verdict.Pass, 0), VerdictPass, nil, nil, 0, CategoryPass, CategoryPass},
		{"functional, no tier met", spec(catalog.StatusFunctional), benchOf(catalog.StatusFunctional, 20), nil, VerdictFail, []string{point}, nil, 0, CategoryFail, CategoryAbsent},
		{"functional, eval below reference", spec(catalog.StatusFunctional), benchOf(catalog.StatusFunctional, 0.9), evalsOf(verdict.Fail, 0), VerdictFail, []string{"evals:gsm8k"}, nil, 0, CategoryPass, CategoryFail},
		// As upstream: a point passes when any one tier passes all its
		// checks, so enforcement only bites when no tier does.
		{"complete, only functional met", spec(catalog.StatusComplete), benchOf(catalog.StatusComplete, 5), evalsOf(verdict.NA, 0), VerdictPass, nil, nil, 0, CategoryPass, CategoryNA},
		{"complete, no tier met", spec(catalog.StatusComplete), benchOf(catalog.StatusComplete, 20), evalsOf(verdict.NA, 0), VerdictFail, []string{point}, nil, 0, CategoryFail, CategoryNA},
		{"complete, complete tier met", spec(catalog.StatusComplete), benchOf(catalog.StatusComplete, 1.5), evalsOf(verdict.NA, 0), VerdictPass, nil, nil, 0, CategoryPass, CategoryNA},
		{"top perf, every tier met", spec(catalog.StatusTopPerf), benchOf(catalog.StatusTopPerf, 0.9), evalsOf(verdict.Pass, 0), VerdictPass, nil, nil, 0, CategoryPass, CategoryPass},
		{"functional, no target point measured", spec(catalog.StatusFunctional), untargeted(catalog.StatusFunctional), nil, VerdictIncomplete, nil, []string{"benchmarks:targets"}, 0, CategoryIncomplete, CategoryAbsent},
		{"not in the catalog (a custom GGUF)", nil, untargeted(""), &EvalSection{Rows: notRun.Rows[1:]}, VerdictUngraded, nil, nil, 0, CategoryNA, CategoryNA},
		{"eval samples errored", spec(catalog.StatusExperimental), nil, evalsOf(verdict.Pass, 3), VerdictIncomplete, nil, []string{"evals:gsm8k"}, 0, CategoryAbsent, CategoryIncomplete},
		{"sweep could not run", spec(catalog.StatusExperimental), &BenchSection{Error: "connection refused"}, nil, VerdictIncomplete, nil, []string{"task:benchmarks"}, 0, CategoryIncomplete, CategoryAbsent},
		{"eval workflow failed", spec(catalog.StatusComplete), benchOf(catalog.StatusComplete, 0.9), &EvalSection{Error: "no such task"}, VerdictIncomplete, nil, []string{"task:evals"}, 0, CategoryPass, CategoryIncomplete},
		// A reference that could not run is not measured: a smoke task
		// never stands in for it.
		{"complete, reference not run, smoke ran", spec(catalog.StatusComplete), benchOf(catalog.StatusComplete, 0.9), notRun, VerdictIncomplete, nil, []string{"evals:meta_ifeval"}, 0, CategoryPass, CategoryIncomplete},
		{"complete, reference not run, known issue", spec(catalog.StatusComplete, catalog.KnownIssue{Workflow: "EVALS", Task: "meta_ifeval"}), benchOf(catalog.StatusComplete, 0.9), notRun, VerdictPass, nil, nil, 1, CategoryPass, CategoryNA},
		{"complete, eval fails, known issue", spec(catalog.StatusComplete, catalog.KnownIssue{Workflow: "EVALS", Task: "gsm8k"}), benchOf(catalog.StatusComplete, 0.9), evalsOf(verdict.Fail, 0), VerdictPass, nil, nil, 1, CategoryPass, CategoryNA},
		{"a measured failure outranks what is missing", spec(catalog.StatusFunctional), benchOf(catalog.StatusFunctional, 20), notRun, VerdictFail, []string{point}, []string{"evals:meta_ifeval"}, 0, CategoryFail, CategoryIncomplete},
	}
	keys := func(bs []Blocker) string {
		var k []string
		for _, b := range bs {
			if b.Message == "" {
				t.Errorf("%s has no message", b.Key)
			}
			k = append(k, b.Key)
		}
		return strings.Join(k, ",")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Accept(tc.spec, tc.bench, tc.evals)
			if a.Verdict != tc.verdict || a.Passed != (tc.verdict == VerdictPass) || a.Summary == "" {
				t.Errorf("verdict %s (passed %v, %q), want %s", a.Verdict, a.Passed, a.Summary, tc.verdict)
			}
			if got, want := keys(a.Blockers), strings.Join(tc.blockers, ","); got != want {
				t.Errorf("blockers %q, want %q", got, want)
			}
			if got, want := keys(a.Missing), strings.Join(tc.missing, ","); got != want {
				t.Errorf("not measured %q, want %q", got, want)
			}
			if len(a.Waived) != tc.waived {
				t.Errorf("waived %+v, want %d", a.Waived, tc.waived)
			}
			if a.Categories[0].Status != tc.benchSt || a.Categories[1].Status != tc.evalsSt {
				t.Errorf("categories %s/%s, want %s/%s", a.Categories[0].Status, a.Categories[1].Status, tc.benchSt, tc.evalsSt)
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

func TestPlanEvals(t *testing.T) {
	tasksOf := func(plan []EvalChoice) string {
		var out []string
		for _, c := range plan {
			s := c.Task + "/" + c.Role
			if c.NotRun != "" {
				s += "/not-run"
			}
			out = append(out, s)
		}
		return strings.Join(out, ",")
	}
	if got := tasksOf(PlanEvals("no-such-model", nil, nil)); got != "ttis_arith/smoke,ttis_arith_mc_generative/smoke" {
		t.Errorf("unknown model: %s", got)
	}
	refs := catalog.ModelEvalRefs("Llama-3.1-8B-Instruct")
	if len(refs) == 0 {
		t.Fatal("the catalog has no eval reference for Llama-3.1-8B-Instruct")
	}
	// Every reference is listed; none runs without its data, so the smoke
	// tasks check the plumbing next to them.
	plan := PlanEvals("Llama-3.1-8B-Instruct", nil, nil)
	for _, r := range refs {
		if !slices.ContainsFunc(plan, func(c EvalChoice) bool { return c.Task == r.Task && c.Role == RoleReference }) {
			t.Errorf("reference %s missing from the plan %s", r.Task, tasksOf(plan))
		}
	}
	for _, c := range plan {
		if c.Role == RoleReference && c.NotRun == "" {
			t.Errorf("%s runs without a dataset", c.Task)
		}
	}
	if !strings.Contains(tasksOf(plan), "ttis_arith/smoke") {
		t.Errorf("no smoke tasks next to unrunnable references: %s", tasksOf(plan))
	}
	// An implemented reference with its data runs; the smoke tasks stay
	// out.
	for _, r := range refs {
		if r.Task != "meta_gpqa_cot" && r.Task != "meta_gpqa" {
			continue
		}
		got := PlanEvals("Llama-3.1-8B-Instruct", map[string]string{r.Task: "x.jsonl"}, nil)
		if !slices.ContainsFunc(got, func(c EvalChoice) bool { return c.Task == r.Task && c.NotRun == "" }) || strings.Contains(tasksOf(got), "smoke") {
			t.Errorf("with a %s dataset: %s", r.Task, tasksOf(got))
		}
	}
	// Explicit tasks: references not among them are not selected.
	got := PlanEvals("Llama-3.1-8B-Instruct", nil, []string{"ttis_arith"})
	if !strings.HasSuffix(tasksOf(got), "ttis_arith/smoke") || !strings.Contains(tasksOf(got), "/reference/not-run") {
		t.Errorf("explicit: %s", tasksOf(got))
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
	tgt := &target.Target{Unit: "u", BaseURL: "http://127.0.0.1:9", Model: "M"}
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
		{"busy unit", Config{Target: tgt, Workflow: WorkflowRelease, Store: store}, "another workflow run"},
		{"bad workflow", Config{Target: tgt, Workflow: "stress", Store: store}, "workflow \"stress\""},
		{"bad limit", Config{Target: tgt, Workflow: WorkflowEvals, Limit: "huge", Store: store}, "limit \"huge\""},
		{"no store", Config{Target: tgt, Workflow: WorkflowEvals}, "no results store"},
		{"no model", Config{Target: &target.Target{Unit: "u", BaseURL: "http://x"}, Workflow: WorkflowEvals, Store: store}, "model"},
		{"point outside benchmarks", Config{Target: tgt, Workflow: WorkflowRelease, Point: true, Store: store}, "one-point"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run error = %v, want %q", err, tc.want)
			}
		})
	}
	if list, _ := store.List(context.Background(), ""); len(list) != 0 {
		t.Errorf("refused runs were recorded: %v", list)
	}
}

// Regressions compare only runs taken under the same conditions.
func TestBaselineMatchesConditions(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	store := &runs.Store{Root: t.TempDir(), Now: func() time.Time { clock = clock.Add(time.Minute); return clock }}
	mk := func(ts string, status string) string {
		r, err := store.Create(runs.Manifest{Unit: "u", Workflow: WorkflowRelease, Conditions: map[string]string{"runtime": "sim", "time_scale": ts, "server_version": ts}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Finish(status, VerdictPass, ""); err != nil {
			t.Fatal(err)
		}
		return r.ID()
	}
	same := mk("1", runs.StatusComplete)
	_ = mk("1", runs.StatusIncomplete)
	other := mk("0.05", runs.StatusComplete)
	cur := mk("1", runs.StatusComplete)
	prev, skipped, ok := Baseline(context.Background(), store, "u", WorkflowRelease, cur, map[string]string{"runtime": "sim", "time_scale": "1", "server_version": "2"})
	if !ok || prev.ID != same {
		t.Fatalf("baseline %s (ok %v), want %s", prev.ID, ok, same)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], other) || !strings.Contains(skipped[0], "time_scale 0.05, now 1") {
		t.Errorf("skipped %q", skipped)
	}
	if _, _, ok := Baseline(context.Background(), store, "u", WorkflowRelease, cur, map[string]string{"runtime": "cpu"}); ok {
		t.Error("a cpu run was compared with sim runs")
	}
}

// A run folder whose manifest is a named pipe (or a file over its bound)
// is passed over with its reason: the search for a baseline neither hangs
// on it nor loses the good runs beside it.
func TestBaselinePassesOverBadEntries(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	store := &runs.Store{Root: t.TempDir(), Now: func() time.Time { clock = clock.Add(time.Minute); return clock }}
	r, err := store.Create(runs.Manifest{Unit: "u", Workflow: WorkflowRelease, Conditions: map[string]string{"runtime": "sim"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(runs.StatusComplete, VerdictPass, ""); err != nil {
		t.Fatal(err)
	}
	pipeDir := filepath.Join(store.Root, "u", "20260102T040000Z-release-0000ff")
	if err := os.Mkdir(pipeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(pipeDir, runs.ManifestFile), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		prev    runs.Manifest
		skipped []string
		ok      bool
	}
	done := make(chan result, 1)
	go func() {
		prev, skipped, ok := Baseline(context.Background(), store, "u", WorkflowRelease, "", map[string]string{"runtime": "sim"})
		done <- result{prev, skipped, ok}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Baseline blocked on a named pipe for 30s")
	}
	if !res.ok || res.prev.ID != r.ID() {
		t.Errorf("baseline %s (ok %v), want %s", res.prev.ID, res.ok, r.ID())
	}
	if len(res.skipped) != 1 || !strings.Contains(res.skipped[0], filepath.Join(pipeDir, runs.ManifestFile)+": not a regular file (a named pipe)") {
		t.Errorf("skipped %q", res.skipped)
	}
}

// TestRunPyReportDataGolden: the fixture report in run.py's
// report_data_<id>.json shape (bench/release/runpy.go).
func TestRunPyReportDataGolden(t *testing.T) {
	r := fixtureReport(catalog.StatusFunctional)
	js, err := RunPyReportData(r)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report_data.json", js)
	md, data := runPyReportPaths(&r.Metadata)
	if md != "reports_output/release/report_Llama-3.1-8B-Instruct_2026-01-02_03-04-05.md" ||
		data != "reports_output/release/data/report_data_Llama-3.1-8B-Instruct_2026-01-02_03-04-05.json" {
		t.Errorf("run.py report paths %s, %s", md, data)
	}
}

// TestRebuildGolden rebuilds a Galaxy Llama-3.3-70B release from raw files
// alone (testdata/rebuild: two vLLM-style result files, one lm-eval
// results file): its points are graded on the galaxy's own targets,
// 2048/128 included, meta_ifeval against its reference, meta_gpqa_cot is
// listed with the reason the earlier report gave.
func TestRebuildGolden(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	store := &runs.Store{Root: filepath.Join(t.TempDir(), "runs"), Now: func() time.Time { return clock }, Rand: bytes.NewReader(make([]byte, 64))}
	run, err := store.Create(runs.Manifest{Unit: "glx", Model: "Llama-3.3-70B-Instruct", Device: "galaxy", Runtime: "vllm", Workflow: WorkflowRelease,
		Limit: "smoke", BaseURL: "http://127.0.0.1:8000"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.Lookup("Llama-3.3-70B-Instruct", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Target: &target.Target{Unit: "glx", BaseURL: "http://127.0.0.1:8000", Model: "meta-llama/Llama-3.3-70B-Instruct",
		CatalogModel: "Llama-3.3-70B-Instruct", Device: "galaxy", Spec: spec}, Workflow: WorkflowRelease, Limit: limit.Smoke}
	if err := saveConfig(&cfg, run.WriteFile); err != nil {
		t.Fatal(err)
	}
	// What the run had reported: meta_gpqa_cot could not be pulled.
	old := &Report{Metadata: metadataOf(&cfg), Evals: &EvalSection{Rows: []EvalRow{{Task: "meta_gpqa_cot", Role: RoleReference,
		NotRun: "its dataset could not be pulled: gated", Check: verdict.NA}}}}
	old.Metadata.RunID, old.Metadata.ReportID = run.ID(), "Llama-3.3-70B-Instruct_2026-01-02_03-04-05"
	js, err := JSON(old)
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"benchmarks/benchmark_Llama-3.3-70B-Instruct_galaxy_2026-01-02_03-04-05_isl-128_osl-128_maxcon-1_n-8.json":  "benchmark_isl-128.json",
		"benchmarks/benchmark_Llama-3.3-70B-Instruct_galaxy_2026-01-02_03-05-00_isl-2048_osl-128_maxcon-1_n-8.json": "benchmark_isl-2048.json",
		"evals/" + EvalResultsDir(cfg.Target) + "/results_2026-01-02T03-06-00.000000.json":                          "results.json",
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "rebuild", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := run.WriteFile(name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.WriteFile(ReportJSON, js); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(runs.StatusIncomplete, VerdictIncomplete, ""); err != nil {
		t.Fatal(err)
	}
	rep, dir, err := Rebuild(context.Background(), store, run.ID(), RebuildOptions{Now: func() time.Time { return clock.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ReportMarkdown, ReportJSON} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("rebuild", name), b)
	}
	var galaxy2048 *BenchRow
	for i := range rep.Benchmarks.Rows {
		if r := &rep.Benchmarks.Rows[i]; r.ISL == 2048 {
			galaxy2048 = r
		}
	}
	if galaxy2048 == nil || galaxy2048.TargetTTFTms == nil || *galaxy2048.TargetTTFTms != 800 || galaxy2048.Grade.TargetCheck != "FAIL" {
		t.Errorf("2048/128 row %+v, want graded on the galaxy's 800 ms (and failing it at 900 ms)", galaxy2048)
	}
	m, _, err := store.Open(context.Background(), run.ID())
	if err != nil || m.Verdict != rep.Acceptance.Verdict || m.Status != runs.StatusIncomplete {
		t.Errorf("manifest after the rebuild: %+v, %v (verdict %s)", m, err, rep.Acceptance.Verdict)
	}
	if _, _, err := Rebuild(context.Background(), store, "nope", RebuildOptions{}); err == nil {
		t.Error("rebuilt a run that does not exist")
	}
}

func FuzzParseLMResults(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "rebuild", "results.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"results": {"t": {"acc,none": null, "acc_stderr,none": "N/A"}}, "group_subtasks": {"t": []}}`))
	f.Add([]byte(`{"results": {}, "group_subtasks": {"t": []}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, tasks, err := parseLMResults("r.json", b)
		if err != nil {
			if !strings.Contains(err.Error(), "r.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, task := range tasks {
			tr, ok := got[task]
			if !ok || tr.n < 0 {
				t.Fatalf("task %s: %+v", task, tr)
			}
			for _, a := range tr.aggs {
				if strings.HasSuffix(a.Metric, "_stderr") {
					t.Fatalf("stderr read as a metric: %+v", a)
				}
			}
		}
	})
}
