package release

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
)

// HTML renders report.html: one self-contained page (inline CSS and SVG,
// no scripts, no external assets) with the acceptance summary, the eval
// and benchmark tables and, per ISL/OSL pair, charts of TTFT and tput/user
// against concurrency with the catalog's targets.
func HTML(r *Report) ([]byte, error) {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, pageData(r)); err != nil {
		return nil, fmt.Errorf("render %s: %w", ReportHTML, err)
	}
	return buf.Bytes(), nil
}

type htmlCategory struct {
	Category
	Badge string
}

type htmlPair struct {
	ISL, OSL int
	TTFT     template.HTML
	TputUser template.HTML
}

type htmlTable struct {
	Header []string
	Rows   [][]string
}

type htmlPage struct {
	Heading     string
	Title       string
	Simulated   bool
	Passed      bool
	Meta        [][2]string
	Status      string
	Enforcement string
	Categories  []htmlCategory
	Blockers    []Blocker
	Regressions *Regressions
	Evals       *htmlTable
	EvalError   string
	Bench       *htmlTable
	BenchError  string
	Pairs       []htmlPair
}

func pageData(r *Report) htmlPage {
	md := &r.Metadata
	p := htmlPage{Heading: heading(md.Workflow), Title: title(md), Simulated: md.Simulated, Passed: r.Acceptance.Passed,
		Status: r.Acceptance.ModelStatus, Enforcement: r.Acceptance.EnforcementResult,
		Blockers: r.Acceptance.Blockers, Regressions: r.Regressions}
	for _, kv := range [][2]string{
		{"Run", md.RunID}, {"Unit", md.Unit}, {"Model", md.Model}, {"Served model", md.ServedModel}, {"Device", md.Device},
		{"Runtime", md.Runtime}, {"Simulated", strconv.FormatBool(md.Simulated)}, {"Workflow", md.Workflow}, {"Limit", md.Limit},
		{"Generated", md.GeneratedAt}, {"Server", md.BaseURL}, {"Model status", md.ModelStatus}, {"Engine", md.InferenceEngine},
		{"Implementation", md.ModelImpl}, {"tt-metal commit", md.TTMetalCommit}, {"vLLM commit", md.VllmCommit},
		{"Docker image", md.DockerImage}, {"Targets", md.TargetsSource}, {"Eval tasks", md.EvalTasks}, {"Eval settings", md.EvalSettings}, {"ttis", md.TTISVersion},
	} {
		if kv[1] != "" {
			p.Meta = append(p.Meta, kv)
		}
	}
	for _, c := range r.Acceptance.Categories {
		p.Categories = append(p.Categories, htmlCategory{c, c.Status})
	}
	if e := r.Evals; e != nil {
		p.EvalError = e.Error
		t := &htmlTable{Header: []string{"Task", "Tolerance", "Published", "GPU Reference", "Score", "Stderr", "Ratio to Reference", "Samples", "Errored", "Check"}}
		for _, row := range e.Rows {
			t.Rows = append(t.Rows, []string{row.Task, strconv.FormatFloat(row.Tolerance, 'f', 2, 64), num(row.Published, 2),
				num(row.GPUReference, 2), num(row.Score, 2), num(row.ScoreStderr, 2), num(row.RatioToReference, 3),
				strconv.Itoa(row.Samples), strconv.Itoa(row.Errored), string(row.Check)})
		}
		p.Evals = t
	}
	if b := r.Benchmarks; b != nil {
		p.BenchError = b.Error
		t := &htmlTable{}
		for _, c := range benchColumns {
			t.Header = append(t.Header, c.header)
		}
		for i := range b.Rows {
			var row []string
			for _, c := range benchColumns {
				row = append(row, c.cell(&b.Rows[i]))
			}
			t.Rows = append(t.Rows, row)
		}
		p.Bench = t
		p.Pairs = charts(b.Rows)
	}
	return p
}

// charts draws, per ISL/OSL pair, TTFT and tput/user against concurrency.
func charts(rows []BenchRow) []htmlPair {
	type pair struct{ isl, osl int }
	var order []pair
	groups := map[pair][]BenchRow{}
	for _, r := range rows {
		k := pair{r.ISL, r.OSL}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []htmlPair
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b BenchRow) int { return a.Concurrency - b.Concurrency })
		var xs []int
		var ttft, ttftT, user, userT []*float64
		for _, r := range g {
			xs = append(xs, r.Concurrency)
			ttft, ttftT = append(ttft, r.TTFTms), append(ttftT, r.TargetTTFTms)
			user, userT = append(user, r.TputUser), append(userT, r.TargetUser)
		}
		out = append(out, htmlPair{ISL: k.isl, OSL: k.osl,
			TTFT:     lineChart(fmt.Sprintf("TTFT (ms), ISL %d / OSL %d", k.isl, k.osl), xs, ttft, ttftT),
			TputUser: lineChart(fmt.Sprintf("Tput/user (tok/s), ISL %d / OSL %d", k.isl, k.osl), xs, user, userT),
		})
	}
	return out
}

// lineChart is an SVG line chart of measured values (dots, solid line) and
// targets (ticks, dashed line) at evenly spaced concurrencies. Missing
// values are skipped.
func lineChart(label string, xs []int, ys, targets []*float64) template.HTML {
	const w, h, left, right, top, bottom = 420.0, 250.0, 56.0, 16.0, 40.0, 40.0
	ymax := 0.0
	for _, s := range [][]*float64{ys, targets} {
		for _, v := range s {
			if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
				ymax = max(ymax, *v)
			}
		}
	}
	if ymax == 0 {
		ymax = 1
	}
	ymax *= 1.1
	px := func(i int) float64 {
		if len(xs) == 1 {
			return left + (w-left-right)/2
		}
		return left + float64(i)*(w-left-right)/float64(len(xs)-1)
	}
	py := func(v float64) float64 { return top + (h-top-bottom)*(1-v/ymax) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`, w, h, w, h, html.EscapeString(label))
	fmt.Fprintf(&b, `<text x="%g" y="18" class="ct">%s</text>`, left, html.EscapeString(label))
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" class="ax"/><line x1="%g" y1="%g" x2="%g" y2="%g" class="ax"/>`,
		left, top, left, h-bottom, left, h-bottom, w-right, h-bottom)
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" class="yl">%s</text>`, left-4, py(v)+4, strconv.FormatFloat(v, 'g', 3, 64))
	}
	for i, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" class="xl">%d</text>`, px(i), h-bottom+16, x)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" class="xl">concurrency</text>`, left+(w-left-right)/2, h-6)
	series := func(vals []*float64, class string) {
		var pts []string
		for i, v := range vals {
			if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(i), py(*v)))
			tip := strconv.FormatFloat(*v, 'f', 2, 64)
			if class == "tg" {
				// A target is a horizontal tick, so a measurement right on
				// it (a dot) does not hide it.
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="tg tk"><title>target %s</title></line>`, px(i)-14, py(*v), px(i)+14, py(*v), tip)
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" class="%s"><title>%s</title></circle>`, px(i), py(*v), class, tip)
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" class="%s"/>`, strings.Join(pts, " "), class)
		}
	}
	series(targets, "tg")
	series(ys, "me")
	fmt.Fprintf(&b, `<text x="%g" y="32" class="lg"><tspan class="me">● measured</tspan> <tspan class="tg">— target</tspan></text>`, w-right)
	b.WriteString(`</svg>`)
	// The markup is built from numbers and escaped labels only.
	return template.HTML(b.String()) //nolint:gosec
}

// verdictClass styles a table cell by its verdict, if it holds one.
func verdictClass(cell string) string {
	for _, v := range []string{"PASS", "FAIL", "NA", "pass", "fail", "error"} {
		if strings.HasPrefix(cell, v) {
			return strings.ToUpper(v)
		}
	}
	return ""
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"verdict": verdictClass}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{if .Simulated}}[SIMULATED] {{end}}{{.Heading}}: {{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.sim{background:#fff3cd;border:2px solid #e0a800;padding:1em;font-size:1.2em;font-weight:bold}
.PASS{color:#137333;font-weight:bold}.FAIL,.ERROR,.fail{color:#b3261e;font-weight:bold}.NA,.ABSENT{color:#8a6d00}
.charts{display:flex;flex-wrap:wrap;gap:1em}
svg{border:1px solid #ddd;background:#fff}
.ax{stroke:#555}.ct{font-size:13px;font-weight:bold}.yl{font-size:10px;text-anchor:end}.xl{font-size:10px;text-anchor:middle}.lg{font-size:11px;text-anchor:end}
polyline.me{fill:none;stroke:#1a73e8;stroke-width:2}circle.me,tspan.me{fill:#1a73e8}
polyline.tg{fill:none;stroke:#d93025;stroke-width:1.5;stroke-dasharray:5 4}line.tk{stroke:#d93025;stroke-width:2}tspan.tg{fill:#d93025}
</style></head><body>
<h1>{{.Heading}}: {{.Title}}</h1>
{{if .Simulated}}<p class="sim">⚠️ SIMULATED — these results come from the sim runtime, not from hardware. They certify nothing about a device.</p>{{end}}
<h2>Acceptance: <span class="{{if .Passed}}PASS{{else}}FAIL{{end}}">{{if .Passed}}PASS{{else}}FAIL{{end}}</span></h2>
<p>Model status: {{.Status}}<br>Enforcement: {{.Enforcement}}</p>
<table><tr><th>Category</th><th>Status</th><th>Total</th><th>Passed</th><th>Failed</th><th>Waived</th><th>Skipped</th><th>NA</th></tr>
{{range .Categories}}<tr><td>{{.Name}}</td><td class="{{.Badge}}">{{.Status}}</td><td>{{.Total}}</td><td>{{.Passed}}</td><td>{{.Failed}}</td><td>{{.Waived}}</td><td>{{.Skipped}}</td><td>{{.NA}}</td></tr>
{{end}}</table>
{{if .Blockers}}<h3>Blockers</h3><ul>{{range .Blockers}}<li><code>{{.Key}}</code>: {{.Message}}</li>{{end}}</ul>{{else}}<p>All acceptance criteria passed.</p>{{end}}
<h2>Metadata</h2>
<table>{{range .Meta}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{with .Regressions}}<h2>Regressions against run {{.Against}}</h2>
{{if .Items}}<table><tr><th>Kind</th><th>Point / Task</th><th>Metric</th><th>Previous</th><th>Current</th><th>Change %</th><th>Allowed</th></tr>
{{range .Items}}<tr><td>{{.Kind}}</td><td>{{.Key}}</td><td>{{.Metric}}</td><td>{{printf "%.2f" .Previous}}</td><td>{{printf "%.2f" .Current}}</td><td class="fail">{{printf "%+.1f" .ChangePct}}</td><td>{{.Allowed}}</td></tr>
{{end}}</table>{{else}}<p>No regressions ({{.Compared}} metrics compared).</p>{{end}}{{end}}
{{with .Evals}}<h2>Accuracy Evaluations</h2>{{if $.EvalError}}<p class="fail">The eval workflow did not finish: {{$.EvalError}}</p>{{end}}
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{with .Bench}}<h2>Benchmark Sweeps</h2>{{if $.BenchError}}<p class="fail">The benchmark sweep did not finish: {{$.BenchError}}</p>{{end}}
<div class="charts">{{range $.Pairs}}{{.TTFT}}{{.TputUser}}{{end}}</div>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
</body></html>
`))
