package release

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/bench/spectest"
	"github.com/ttis-dev/ttis/bench/spectest/check"
	"github.com/ttis-dev/ttis/units/catalog"
)

// WorkflowTests runs the spec tests alone (ttisctl test).
const WorkflowTests = "tests"

// SpecTestsKind is the report.json section kind of the spec tests
// (upstream's spec_tests block), and SpecTestsFile their results in the
// run folder.
const (
	SpecTestsKind = "spec_tests"
	SpecTestsFile = "tests/spec_tests.json"
)

// TestSection is the spec-test part of a run: one row per test of the
// suite, run or not.
type TestSection struct {
	// Class is the suite's model class (text, image, ...).
	Class string
	Rows  []spectest.Result
	// Error is set when the tests could not be planned or run at all.
	Error string
}

// finished reports whether a test section is a step that ended (not one
// a signal cut short), so a resume keeps it.
func (s *TestSection) finished() bool {
	if s == nil || s.Error != "" {
		return false
	}
	for _, r := range s.Rows {
		if strings.Contains(r.NotRun, "interrupted") {
			return false
		}
	}
	return true
}

// testInput is what the plan knows of cfg's target: its spec, run size,
// the unit's [tests] (or the command line's), runtime and limits.
func testInput(cfg *Config) spectest.Input {
	t := cfg.Target
	in := spectest.Input{Spec: t.Spec, Limit: cfg.Limit, Tests: t.View.Tests, Runtime: t.Runtime, Device: t.Device,
		MaxContext: t.MaxModelLen, MaxConcurrency: max(t.View.MaxConcurrency, cfg.MaxConcurrency, 1), MaxAudioSeconds: t.View.MaxAudioSeconds}
	if o := cfg.Tests; o != nil {
		// Each field the command line sets replaces the unit's.
		if o.Suite != "" {
			in.Tests.Suite = o.Suite
		}
		if o.Skip != nil {
			in.Tests.Skip = o.Skip
		}
		if o.StabilityDuration.Duration > 0 {
			in.Tests.StabilityDuration = o.StabilityDuration
		}
		if o.StabilityConcurrency > 0 {
			in.Tests.StabilityConcurrency = o.StabilityConcurrency
		}
	}
	return in
}

// PlanTests plans cfg's spec tests (no I/O).
func PlanTests(cfg Config) ([]spectest.Test, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return spectest.Plan(testInput(&cfg))
}

// runTests plans and runs the spec tests, and keeps their results in the
// run folder.
func runTests(ctx context.Context, cfg *Config, run *runs.Run) *TestSection {
	sec := &TestSection{Rows: []spectest.Result{}}
	plan, err := spectest.Plan(testInput(cfg))
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	for _, t := range plan {
		sec.Class = t.Params.Class
		if t.Template == "concurrency" || t.Template == "stability" {
			cfg.logf("spec tests: %s at up to %d requests at once", t.Name, max(t.Params.MaxConcurrency, t.Params.Load))
		}
	}
	conns := 4
	for _, t := range plan {
		conns = max(conns, t.Params.MaxConcurrency, t.Params.Load)
	}
	client, err := cfg.Target.Server(conns)
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	defer client.Close()
	cc := check.Config{Client: client, Model: cfg.Target.Model, Tests: plan, Observe: cfg.Observe, RequestTimeout: 10 * time.Minute, Logf: cfg.logf}
	if cfg.Progress != nil {
		cc.Progress = cfg.Progress
	}
	sec.Rows = check.Run(ctx, cc)
	if b, err := json.MarshalIndent(sec.Rows, "", "  "); err == nil {
		if err := run.WriteFile(filepath.FromSlash(SpecTestsFile), append(b, '\n')); err != nil && ctx.Err() == nil {
			sec.Error = err.Error()
		}
	}
	return sec
}

// acceptTests adds the spec-test category to a verdict. A required test
// that did not run is not measured; one that failed is a blocker, unless a
// SPEC_TESTS known issue names it or the status enforces nothing
// (EXPERIMENTAL). Without a catalog entry the failures still count: the
// tests hold the server to its own limits and the API it serves.
func acceptTests(spec *catalog.Spec, tests *TestSection, status string, fail, missing, waive func(c *Category, key, msg string)) (Category, int) {
	c := Category{Name: "Spec Tests", Blockers: []string{}}
	passed := 0
	if tests.Error != "" {
		missing(&c, "task:spec_tests", tests.Error)
	}
	for i := range tests.Rows {
		r := &tests.Rows[i]
		c.Total++
		key := "spec_tests:" + r.Name
		k, waived := waiver(spec, "SPEC_TESTS", r.Name)
		if !waived && r.Upstream != "" {
			k, waived = waiver(spec, "SPEC_TESTS", r.Upstream)
		}
		switch {
		case !r.Required:
			c.NA++
		case r.NotRun != "" && waived:
			waive(&c, key, fmt.Sprintf("not run: %s (waived: known issue %s)", r.NotRun, knownIssue(k)))
		case r.NotRun != "":
			missing(&c, key, "not run: "+r.NotRun)
		case r.Verdict == spectest.Pass:
			c.Passed++
			passed++
		case waived:
			waive(&c, key, fmt.Sprintf("%s (waived: known issue %s)", r.Summary, knownIssue(k)))
		case spec != nil && !enforcing(status):
			waive(&c, key, fmt.Sprintf("%s, but status %s enforces nothing", r.Summary, catalog.StatusName(status)))
		default:
			fail(&c, key, r.Summary)
		}
	}
	c.Status = categoryStatus(&c)
	return c, passed
}

// testVerdict is a test row's outcome in words.
func testVerdict(r *spectest.Result) string {
	switch {
	case r.Verdict != "":
		return string(r.Verdict)
	case !r.Required:
		return "NA: " + r.NotRun
	}
	return "NOT MEASURED: " + r.NotRun
}

// measured is what a test found; a test that did not run has its reason
// in the verdict column alone.
func measured(r *spectest.Result) string {
	if r.NotRun != "" {
		return ""
	}
	return r.Summary
}

func testsMarkdown(md *Metadata, s *TestSection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Spec Tests for %s\n\n", title(md))
	if md.Simulated {
		b.WriteString("**SIMULATED**: the sim runtime answered these requests, not hardware.\n\n")
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "The spec tests did not run: %s\n\n", cell(s.Error))
	}
	passed, failed, notRun, na := 0, 0, 0, 0
	var took float64
	for i := range s.Rows {
		r := &s.Rows[i]
		took += r.DurationS
		switch {
		case r.Verdict == spectest.Pass:
			passed++
		case r.Verdict == spectest.Fail:
			failed++
		case !r.Required:
			na++
		default:
			notRun++
		}
	}
	if len(s.Rows) > 0 {
		fmt.Fprintf(&b, "Suite `%s`: %d tests, %d passed, %d failed, %d not run, %d not required (NA); %.1f s.\n\n", s.Class, len(s.Rows), passed, failed, notRun, na, took)
		b.WriteString("| Test | Verdict | Requests | Failed requests | Duration (s) | Summary |\n|---|---|---|---|---|---|\n")
		for i := range s.Rows {
			r := &s.Rows[i]
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %s |\n", cell(r.Name), cell(testVerdict(r)), r.Requests, r.Failed, r.DurationS, cell(measured(r)))
		}
		for i := range s.Rows {
			r := &s.Rows[i]
			if len(r.Evidence) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n#### %s: %s\n\n%s\n\n", r.Name, testVerdict(r), cell(r.Description))
			b.WriteString("| Check | Result | Request | Expected | Got |\n|---|---|---|---|---|\n")
			for _, e := range r.Evidence {
				res := "PASS"
				if !e.Pass {
					res = "FAIL"
				}
				fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", cell(e.Check), res, code(e.Request), cell(e.Expected), cell(e.Got))
			}
		}
	}
	b.WriteString("\n**Notes**\n\n- Each test checks a promise of the model's spec against the served API; the evidence shows what was sent, what was expected and what came back (truncated). A required test that did not run is not measured; a test the spec does not promise, or that belongs to a larger run size, is NA.\n")
	return b.String()
}

// code is a table cell in a code span: backticks cannot end it early.
func code(s string) string { return strings.ReplaceAll(cell(s), "`", "'") }

// htmlTests is the spec-test part of report.html.
type htmlTests struct {
	Class    string
	Error    string
	Table    htmlTable
	Evidence []htmlEvidence
}

type htmlEvidence struct {
	Name, Verdict, Description string
	Table                      htmlTable
}

func testsPage(s *TestSection) *htmlTests {
	h := &htmlTests{Class: s.Class, Error: s.Error, Table: htmlTable{Header: []string{"Test", "Verdict", "Requests", "Failed requests", "Duration (s)", "Summary"}}}
	for i := range s.Rows {
		r := &s.Rows[i]
		h.Table.Rows = append(h.Table.Rows, []string{r.Name, testVerdict(r), strconv.Itoa(r.Requests), strconv.Itoa(r.Failed), strconv.FormatFloat(r.DurationS, 'f', 1, 64), measured(r)})
		if len(r.Evidence) == 0 {
			continue
		}
		ev := htmlEvidence{Name: r.Name, Verdict: testVerdict(r), Description: r.Description, Table: htmlTable{Header: []string{"Check", "Result", "Request", "Expected", "Got"}}}
		for _, e := range r.Evidence {
			res := "PASS"
			if !e.Pass {
				res = "FAIL"
			}
			ev.Table.Rows = append(ev.Table.Rows, []string{e.Check, res, e.Request, e.Expected, e.Got})
		}
		h.Evidence = append(h.Evidence, ev)
	}
	return h
}

// testsTemplate renders htmlTests inside report.html.
const testsTemplate = `{{define "tests"}}{{with .}}<h2>Spec Tests ({{.Class}})</h2>{{if .Error}}<p class="fail">The spec tests did not run: {{.Error}}</p>{{end}}
<table><tr>{{range .Table.Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{range .Evidence}}<h3>{{.Name}}: <span class="{{verdict .Verdict}}">{{.Verdict}}</span></h3><p>{{.Description}}</p><table class="meta"><tr>{{range .Table.Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{end}}{{end}}`
