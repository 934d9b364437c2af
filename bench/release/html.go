package release

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/ttis-dev/ttis/units/verdict"
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
	return showControls(buf.Bytes()), nil
}

// showControls writes the control characters of a page as visible escapes
// (ESC as \x1b). The template escapes HTML but passes them through, and a
// server's error or log text may carry terminal escape codes, which a
// browser drops silently and a terminal that prints the page obeys. The
// page's own markup uses newlines and nothing else of the kind.
func showControls(page []byte) []byte {
	clean := true
	for _, r := range string(page) {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return page
	}
	var b bytes.Buffer
	for _, r := range string(page) {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.Bytes()
}

func isControl(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }

// foldAt is the length past which a reason is folded: its start shows,
// the rest opens on a click.
const foldAt = 160

// fold renders text that may be long (a reason, an error): as it is when
// short, else folded in a <details> whose summary is its start.
func fold(s string) template.HTML {
	rs := []rune(s)
	if len(rs) <= foldAt {
		return template.HTML(html.EscapeString(s)) //nolint:gosec // escaped
	}
	cut := foldAt - 20
	// Cut at a word boundary.
	for i := cut; i > cut/2; i-- {
		if rs[i] == ' ' {
			cut = i
			break
		}
	}
	return template.HTML(fmt.Sprintf(`<details><summary>%s…</summary>%s</details>`, //nolint:gosec // escaped
		html.EscapeString(string(rs[:cut])), html.EscapeString(s)))
}

// htmlList is one list of blockers, grouped (GroupBlockers).
type htmlList struct {
	Title  string
	Groups []Group
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

// htmlTiers is one graded point's per-tier target table.
type htmlTiers struct {
	Point string
	Table htmlTable
}

type htmlTable struct {
	Header []string
	Rows   [][]string
}

type htmlPage struct {
	Heading     string
	Title       string
	Simulated   bool
	Interrupted bool
	RunID       string
	Verdict     string
	Summary     string
	Conditions  string
	Meta        [][2]string
	Status      string
	Enforcement string
	Categories  []htmlCategory
	Lists       []htmlList
	Tiers       []htmlTiers
	Regressions *Regressions
	Evals       *htmlTable
	EvalError   string
	Media       *htmlTable
	MediaLists  []htmlKeyed
	Bench       *htmlTable
	BenchError  string
	Pairs       []htmlPair
	Tests       *htmlTests
}

func pageData(r *Report) htmlPage {
	md := &r.Metadata
	a := &r.Acceptance
	p := htmlPage{Heading: heading(md.Workflow), Title: title(md), Simulated: md.Simulated, Interrupted: r.Interrupted, RunID: md.RunID,
		Verdict: a.Verdict, Summary: a.Summary,
		Conditions: conditionsLine(md), Status: a.ModelStatus, Enforcement: a.EnforcementResult, Regressions: r.Regressions}
	for _, l := range []struct {
		title string
		items []Blocker
	}{{"Blockers (enforced checks that failed)", a.Blockers}, {"Not measured (required, so the run cannot pass)", a.Missing}, {"Waived (not counted, and why)", a.Waived}} {
		if len(l.items) > 0 {
			p.Lists = append(p.Lists, htmlList{Title: l.title, Groups: GroupBlockers(l.items)})
		}
	}
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
	for _, k := range slices.Sorted(maps.Keys(md.Conditions)) {
		p.Meta = append(p.Meta, [2]string{"Condition: " + k, md.Conditions[k]})
	}
	for _, c := range r.Acceptance.Categories {
		p.Categories = append(p.Categories, htmlCategory{c, c.Status})
	}
	if e := r.Evals; e != nil {
		p.EvalError = e.Error
		t := &htmlTable{Header: []string{"Task", "Role", "Tolerance", "Published", "GPU Reference", "Score", "Stderr", "Ratio to Reference", "Samples", "Errored", "Check"}}
		for i := range e.Rows {
			row := &e.Rows[i]
			t.Rows = append(t.Rows, []string{row.Task, row.Role, tolerance(row), num(row.Published, 2),
				num(row.GPUReference, 2), num(row.Score, 2), num(row.ScoreStderr, 2), num(row.RatioToReference, 3),
				strconv.Itoa(row.Samples), strconv.Itoa(row.Errored), evalVerdict(row)})
		}
		p.Evals = t
		p.Media, p.MediaLists = mediaHTML(e)
	}
	if ts := r.Tests; ts != nil {
		p.Tests = testsPage(ts)
	}
	if b := r.Benchmarks; b != nil {
		p.BenchError = b.Error
		t := &htmlTable{}
		benchColumns := columnsFor(b.Rows)
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
		for i := range b.Rows {
			if r := &b.Rows[i]; len(r.Grade.Tiers) > 0 {
				p.Tiers = append(p.Tiers, htmlTiers{Point: fmt.Sprintf("ISL %d / OSL %d, concurrency %d", r.ISL, r.OSL, r.Concurrency), Table: tierTable(r)})
			}
		}
	}
	return p
}

// tierTable is a point's checks, one row per tier.
func tierTable(r *BenchRow) htmlTable {
	t := htmlTable{Header: []string{"Tier", "TTFT target (ms)", "TTFT ratio", "TTFT", "Tput/user target", "Tput/user ratio", "Tput/user", "Tput target", "Tput ratio", "Tput"}}
	for _, tier := range r.Grade.Tiers {
		name := tier.Name + " (enforced)"
		if !tier.Enforced {
			// A tier the status does not enforce decides nothing: its
			// checks read grey, so a miss there is not a red FAIL beside
			// the point's PASS.
			name = tier.Name + " (not enforced)"
		}
		row := []string{name}
		for _, c := range tier.Checks {
			target, ratio := "NA", "NA"
			if c.Threshold > 0 {
				target = strconv.FormatFloat(c.Threshold, 'f', 2, 64)
			}
			if c.Verdict != verdict.NA {
				ratio = strconv.FormatFloat(c.Ratio, 'f', 3, 64)
			}
			cell := string(c.Verdict)
			if !tier.Enforced && c.Verdict != verdict.NA {
				cell = notEnforced + strings.ToLower(cell)
			}
			row = append(row, target, ratio, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// notEnforced heads the check cells of a tier the status does not enforce.
const notEnforced = "not enforced: "

// charts draws, per ISL/OSL pair, TTFT and tput/user against concurrency,
// with every tier's target.
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
		var ttft, user []*float64
		var tiers []string
		enforced := map[string]bool{}
		ttftT, userT := map[string][]*float64{}, map[string][]*float64{}
		for i, r := range g {
			xs = append(xs, r.Concurrency)
			ttft, user = append(ttft, r.TTFTms), append(user, r.TputUser)
			for _, t := range r.Grade.Tiers {
				enforced[t.Name] = enforced[t.Name] || t.Enforced
				if !slices.Contains(tiers, t.Name) {
					tiers = append(tiers, t.Name)
					ttftT[t.Name], userT[t.Name] = make([]*float64, len(g)), make([]*float64, len(g))
				}
				for _, c := range t.Checks {
					if c.Threshold <= 0 {
						continue
					}
					v := c.Threshold
					switch c.Metric {
					case "ttft":
						ttftT[t.Name][i] = &v
					case "tput_user":
						userT[t.Name][i] = &v
					}
				}
			}
		}
		var tt, ut []targetSeries
		for _, name := range tiers {
			tt = append(tt, targetSeries{name, enforced[name], ttftT[name]})
			ut = append(ut, targetSeries{name, enforced[name], userT[name]})
		}
		out = append(out, htmlPair{ISL: k.isl, OSL: k.osl,
			TTFT:     lineChart(fmt.Sprintf("TTFT (ms), ISL %d / OSL %d", k.isl, k.osl), xs, ttft, tt),
			TputUser: lineChart(fmt.Sprintf("Tput/user (tok/s), ISL %d / OSL %d", k.isl, k.osl), xs, user, ut),
		})
	}
	return out
}

// targetSeries is one tier's target at each concurrency (nil: none).
type targetSeries struct {
	tier     string
	enforced bool
	values   []*float64
}

// niceStep is the tick step for an axis up to top with about n ticks: 1,
// 2, 2.5 or 5 times a power of ten, so tick labels are round numbers.
func niceStep(top float64, n int) float64 {
	raw := top / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// tierClass tells a tier's target line from the others by its dashes
// (three tiers in the catalog); its colour says whether the status
// enforces it (dark) or not (grey), never a verdict's red or green.
var tierClass = map[string]string{"functional": "t0", "complete": "t1", "target": "t2"}

// lineChart is an SVG line chart of measured values (dots, solid line) and
// each tier's targets (ticks, dashed lines) at evenly spaced
// concurrencies, on an axis with round ticks. Missing values are skipped.
func lineChart(label string, xs []int, ys []*float64, targets []targetSeries) template.HTML {
	const w, h, left, right, top, bottom = 440.0, 260.0, 56.0, 16.0, 52.0, 40.0
	ymax := 0.0
	ok := func(v *float64) bool { return v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) }
	for _, v := range ys {
		if ok(v) {
			ymax = max(ymax, *v)
		}
	}
	for _, t := range targets {
		for _, v := range t.values {
			if ok(v) {
				ymax = max(ymax, *v)
			}
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	step := niceStep(ymax*1.05, 4)
	ymax = math.Ceil(ymax*1.05/step) * step
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
	for v := 0.0; v <= ymax*(1+1e-9); v += step {
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" class="gr"/>`, left, py(v), w-right, py(v))
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" class="yl">%s</text>`, left-4, py(v)+4, strconv.FormatFloat(v, 'f', -1, 64))
	}
	for i, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" class="xl">%d</text>`, px(i), h-bottom+16, x)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" class="xl">concurrency</text>`, left+(w-left-right)/2, h-6)
	series := func(vals []*float64, class, name string) {
		var pts []string
		for i, v := range vals {
			if !ok(v) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(i), py(*v)))
			tip := strconv.FormatFloat(*v, 'f', 2, 64)
			if name != "" {
				// A target is a horizontal tick, so a measurement right on
				// it (a dot) does not hide it.
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="tg %s"><title>%s target %s</title></line>`, px(i)-14, py(*v), px(i)+14, py(*v), class, name, tip)
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" class="me"><title>measured %s</title></circle>`, px(i), py(*v), tip)
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" class="%s"/>`, strings.Join(pts, " "), class)
		}
	}
	legend := []string{`<tspan class="me">● measured</tspan>`}
	for _, t := range targets {
		class := tierClass[t.tier]
		if class == "" {
			class = "t2"
		}
		label := t.tier
		if t.enforced {
			class += " en"
		} else {
			class += " ne"
			label += " (not enforced)"
		}
		series(t.values, class, t.tier)
		legend = append(legend, fmt.Sprintf(`<tspan class="%s">— %s</tspan>`, class, html.EscapeString(label)))
	}
	series(ys, "me", "")
	fmt.Fprintf(&b, `<text x="%g" y="36" class="lg">%s</text>`, w-right, strings.Join(legend, " "))
	b.WriteString(`</svg>`)
	// The markup is built from numbers and escaped labels only.
	return template.HTML(b.String()) //nolint:gosec
}

// verdictClass styles a table cell by its verdict, if it holds one.
func verdictClass(cell string) string {
	if strings.HasPrefix(cell, notEnforced) {
		return "NOTENF"
	}
	for _, v := range []string{"PASS", "FAIL", "INCOMPLETE", "NOT MEASURED", "UNGRADED", "NA", "waived"} {
		if strings.HasPrefix(cell, v) {
			return strings.ReplaceAll(strings.ToUpper(v), " ", "_")
		}
	}
	return ""
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"verdict": verdictClass, "fold": fold}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{if .Simulated}}[SIMULATED] {{end}}{{.Heading}}: {{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px;max-width:100%}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;overflow-wrap:break-word}
td.NOT_MEASURED,td.INCOMPLETE,td details{text-align:left}summary{cursor:pointer}li{margin:.2em 0}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
table.meta td{text-align:left;overflow-wrap:anywhere;max-width:900px}
.sim{background:#fff3cd;border:2px solid #e0a800;padding:1em;font-size:1.2em;font-weight:bold}
.PASS{color:#137333;font-weight:bold}.FAIL,.fail{color:#b3261e;font-weight:bold}.INCOMPLETE,.NOT_MEASURED{color:#b06000;font-weight:bold}.NA,.ABSENT,.UNGRADED,.WAIVED{color:#8a6d00}.NOTENF{color:#80868b}
.charts{display:flex;flex-wrap:wrap;gap:1em}
svg{border:1px solid #ddd;background:#fff}
.ax{stroke:#555}.ct{font-size:13px;font-weight:bold}.yl{font-size:10px;text-anchor:end}.xl{font-size:10px;text-anchor:middle}.lg{font-size:11px;text-anchor:end}
polyline.me{fill:none;stroke:#1a73e8;stroke-width:2}circle.me,tspan.me{fill:#1a73e8}
.gr{stroke:#eee}
polyline.t0,polyline.t1,polyline.t2{fill:none;stroke-width:1.5}
polyline.t0{stroke-dasharray:2 3}polyline.t1{stroke-dasharray:6 3}polyline.t2{stroke-dasharray:10 3 2 3}
.en{stroke:#3c4043;fill:#3c4043}.ne{stroke:#bdc1c6;fill:#9aa0a6}line.tg{stroke-width:2}tspan{stroke:none}
</style></head><body>
<h1>{{.Heading}}: {{.Title}}</h1>
{{if .Simulated}}<p class="sim">SIMULATED: these results come from the sim runtime, not from hardware. They certify nothing about a device.</p>{{end}}
{{if .Interrupted}}<p class="sim">INTERRUPTED: a signal stopped this run; what finished is kept below. <code>--resume {{.RunID}}</code> finishes it.</p>{{end}}
<h2>Verdict: <span class="{{verdict .Verdict}}">{{.Verdict}}</span></h2>
<p>{{.Summary}}{{if .Conditions}}<br>Conditions: {{.Conditions}}{{end}}<br>Model status: {{.Status}}<br>Enforcement: {{.Enforcement}}</p>
<table><tr><th>Category</th><th>Status</th><th>Total</th><th>Passed</th><th>Failed</th><th>Not measured</th><th>Waived</th><th>Smoke (not graded)</th><th>NA</th></tr>
{{range .Categories}}<tr><td>{{.Name}}</td><td class="{{verdict .Badge}}">{{if eq .Status "ABSENT"}}not run{{else}}{{.Status}}{{end}}</td><td>{{.Total}}</td><td>{{.Passed}}</td><td>{{.Failed}}</td><td>{{.Missing}}</td><td>{{.Waived}}</td><td>{{.Skipped}}</td><td>{{.NA}}</td></tr>
{{end}}</table>
{{range .Lists}}<h3>{{.Title}}</h3><ul>{{range .Groups}}{{if not .Cause}}<li>{{range $i, $b := .Items}}{{if $i}}, {{end}}<code>{{$b.Key}}</code>{{end}}: {{fold (index .Items 0).Message}}{{with .Fix}}; fix: <code class="fix">{{.}}</code>{{end}}</li>
{{else}}<li>{{len .Items}} check(s): {{fold .Cause}}{{with .Fix}}; fix: <code class="fix">{{.}}</code>{{end}}<ul>{{range .Items}}<li><code>{{.Key}}</code>: {{fold .Message}}</li>{{end}}</ul></li>
{{end}}{{end}}</ul>{{end}}
<h2>Metadata</h2>
<table class="meta">{{range .Meta}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{with .Regressions}}{{if .Against}}<h2>Regressions against run {{.Against}}</h2>{{else}}<h2>Regressions</h2><p>No earlier run was taken under the same conditions, so nothing was compared.</p>{{end}}
{{if .Skipped}}<p>Not compared (other conditions):</p><ul>{{range .Skipped}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if not .Against}}{{else if .Items}}<table><tr><th>Kind</th><th>Point / Task</th><th>Metric</th><th>Previous</th><th>Current</th><th>Change %</th><th>Allowed</th></tr>
{{range .Items}}<tr><td>{{.Kind}}</td><td>{{.Key}}</td><td>{{.Metric}}</td><td>{{printf "%.2f" .Previous}}</td><td>{{printf "%.2f" .Current}}</td><td class="fail">{{printf "%+.1f" .ChangePct}}</td><td>{{.Allowed}}</td></tr>
{{end}}</table>{{else}}<p>No regressions ({{.Compared}} metrics compared).</p>{{end}}{{end}}
{{with .Evals}}<h2>Accuracy Evaluations</h2>{{if $.EvalError}}<p class="fail">The eval workflow did not finish: {{fold $.EvalError}}</p>{{end}}
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{fold .}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{with .Media}}<h3>Image and Video Figures</h3>{{if $.Simulated}}<p><strong>SIMULATED</strong>: the images and videos come from the sim runtime; their scores are computed, not assumed.</p>{{end}}
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{fold .}}</td>{{end}}</tr>
{{end}}</table>
{{range $.MediaLists}}<h4>{{.Title}}</h4><ul>{{range .Items}}<li><code>{{.Key}}</code>: {{fold .Message}}</li>{{end}}</ul>{{end}}{{end}}
{{with .Bench}}<h2>Benchmark Sweeps</h2>{{if $.BenchError}}<p class="fail">The benchmark sweep did not finish: {{fold $.BenchError}}</p>{{end}}
<div class="charts">{{range $.Pairs}}{{.TTFT}}{{.TputUser}}{{end}}</div>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{fold .}}</td>{{end}}</tr>
{{end}}</table>
{{range $.Tiers}}<h3>Targets: {{.Point}}</h3><table><tr>{{range .Table.Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr>{{range .}}<td{{with verdict .}} class="{{.}}"{{end}}>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{end}}
{{template "tests" .Tests}}
</body></html>
` + testsTemplate))
