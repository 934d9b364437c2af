package release

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/units/catalog"
)

// testRows is a spec-test section: liveness passed, stop failed with its
// evidence, tool_calls not run, context_full not required.
func testRows() *TestSection {
	return &TestSection{Class: "text", Rows: []spectest.Result{
		{Name: "liveness", Template: "liveness", Description: "the server is live", Required: true, Verdict: spectest.Pass, Summary: "2 checks passed",
			Requests: 2, DurationS: 0.01, Evidence: []spectest.Evidence{{Check: "GET /health", Request: "GET /health", Expected: "HTTP 200", Got: "HTTP 200 (empty body)", Pass: true}}},
		{Name: "stop", Template: "stop", Upstream: "test_stop", Description: "stop strings end the answer", Required: true, Verdict: spectest.Fail,
			Summary: `1 of 2 checks failed; first: completions stop ["| b"]: expected text "a ", got text "a | b c"`, Requests: 3, Failed: 1, DurationS: 0.5,
			Evidence: []spectest.Evidence{
				{Check: `completions stop ["| b"]`, Request: `{"prompt":"x","stop":["| b"]}`, Expected: `text "a "`, Got: "text \"a | b c\" `x`"},
				{Check: "completions without stop", Request: `{"prompt":"x"}`, Expected: "HTTP 200", Got: `text "a | b c"`, Pass: true},
			}},
		{Name: "tool_calls", Template: "tool_calls", Description: "named tool calls", Required: true, NotRun: "skipped by the unit's [tests] skip",
			Summary: "not run: skipped by the unit's [tests] skip", Evidence: []spectest.Evidence{}},
		{Name: "context_full", Template: "context_full", Description: "a full context is served", NotRun: "runs in ci-nightly runs, not smoke",
			Summary: "not run: runs in ci-nightly runs, not smoke", Evidence: []spectest.Evidence{}},
	}}
}

// TestAcceptSpecTests is the verdict table of the spec-test category.
func TestAcceptSpecTests(t *testing.T) {
	spec := func(status string, known ...catalog.KnownIssue) *catalog.Spec {
		return &catalog.Spec{Status: status, KnownIssues: known}
	}
	passing := func() *TestSection {
		s := testRows()
		s.Rows = []spectest.Result{s.Rows[0], s.Rows[3]}
		return s
	}
	failing := func() *TestSection {
		s := testRows()
		s.Rows = s.Rows[:2]
		return s
	}
	for _, tc := range []struct {
		name     string
		spec     *catalog.Spec
		tests    *TestSection
		verdict  string
		blockers string
		missing  string
		waived   int
		status   string
	}{
		{"functional, every required test passed", spec(catalog.StatusFunctional), passing(), VerdictPass, "", "", 0, CategoryPass},
		{"functional, stop failed", spec(catalog.StatusFunctional), failing(), VerdictFail, "spec_tests:stop", "", 0, CategoryFail},
		{"functional, a required test skipped", spec(catalog.StatusFunctional), testRows(), VerdictFail, "spec_tests:stop", "spec_tests:tool_calls", 0, CategoryFail},
		{"known issue by upstream's name", spec(catalog.StatusFunctional, catalog.KnownIssue{Workflow: "SPEC_TESTS", Task: "test_stop"}), failing(), VerdictPass, "", "", 1, CategoryPass},
		{"experimental enforces nothing", spec(catalog.StatusExperimental), failing(), VerdictUngraded, "", "", 1, CategoryPass},
		{"no catalog entry: the failure counts", nil, failing(), VerdictFail, "spec_tests:stop", "", 0, CategoryFail},
		{"no catalog entry, all passed", nil, passing(), VerdictUngraded, "", "", 0, CategoryPass},
		{"the tests could not run", spec(catalog.StatusComplete), &TestSection{Error: "no suite"}, VerdictIncomplete, "", "task:spec_tests", 0, CategoryIncomplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := AcceptRun(tc.spec, nil, nil, tc.tests)
			keys := func(bs []Blocker) string {
				var k []string
				for _, b := range bs {
					k = append(k, b.Key)
				}
				return strings.Join(k, ",")
			}
			if a.Verdict != tc.verdict || keys(a.Blockers) != tc.blockers || keys(a.Missing) != tc.missing || len(a.Waived) != tc.waived {
				t.Errorf("verdict %s (%s), blockers %q, missing %q, waived %+v", a.Verdict, a.Summary, keys(a.Blockers), keys(a.Missing), a.Waived)
			}
			if len(a.Categories) != 3 || a.Categories[2].Name != "Spec Tests" || a.Categories[2].Status != tc.status {
				t.Errorf("categories %+v", a.Categories)
			}
		})
	}
	// Without a tests step the category is left out, as before.
	if a := Accept(spec(catalog.StatusFunctional), nil, nil); len(a.Categories) != 2 {
		t.Errorf("categories without tests: %+v", a.Categories)
	}
}

// A report with spec tests: the markdown table and evidence, report.json's
// spec_tests section (read back whole), and the HTML page.
func TestReportWithSpecTests(t *testing.T) {
	r := fixtureReport(catalog.StatusFunctional)
	r.Tests = testRows()
	r.Acceptance = AcceptRun(&catalog.Spec{Status: catalog.StatusFunctional}, r.Benchmarks, r.Evals, r.Tests)
	golden(t, "report_tests.md", Markdown(r))
	js, err := JSON(r)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report_tests.json", js)
	back, err := ParseJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if back.Tests == nil || back.Tests.Class != "text" || len(back.Tests.Rows) != 4 || back.Tests.Rows[1].Evidence[0].Got != r.Tests.Rows[1].Evidence[0].Got {
		t.Fatalf("spec tests read back as %+v", back.Tests)
	}
	if js2, _ := JSON(back); !bytes.Equal(js, js2) {
		t.Errorf("report.json with spec tests does not survive a read and re-render:\n%s", js2)
	}
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Spec Tests (text)", `completions stop [&#34;| b&#34;]`, "NOT MEASURED: skipped by the unit&#39;s [tests] skip", "NA: runs in ci-nightly"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A resume keeps a spec-test step that ended, and runs again one that an
// interruption cut short or that could not run.
func TestTestSectionFinished(t *testing.T) {
	cut := testRows()
	cut.Rows[2].NotRun = "the run was interrupted"
	for _, tc := range []struct {
		s    *TestSection
		want bool
	}{
		{nil, false},
		{testRows(), true},
		{cut, false},
		{&TestSection{Error: "not run: the run was interrupted (--resume runs them)"}, false},
	} {
		if got := tc.s.finished(); got != tc.want {
			t.Errorf("finished(%+v) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
