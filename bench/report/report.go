// Package report renders a benchmark sweep: a markdown summary with the
// columns of tt-inference-server's release report, a CSV of the same rows
// and a JSON data file for tooling.
package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/units/verdict"
)

// Metadata describes the sweep.
type Metadata struct {
	ReportID    string `json:"report_id"`
	Model       string `json:"model_name"`
	Device      string `json:"device"`
	Unit        string `json:"unit,omitempty"`
	BaseURL     string `json:"base_url"`
	Endpoint    string `json:"endpoint"`
	ModelStatus string `json:"model_status,omitempty"`
	Limit       string `json:"limit"`
	GeneratedAt string `json:"generated_at"`
	Tokenizer   string `json:"tokenizer"`
	Simulated   bool   `json:"simulated"`
	// TargetsSource says where targets came from ("catalog", a file, or
	// "none").
	TargetsSource string `json:"targets_source"`
	// TraceCapture says whether the server was warmed up per (ISL, batch)
	// before measuring ("off", or "on: ..."); empty when not recorded.
	TraceCapture string `json:"trace_capture,omitempty"`
}

// Point is one measured sweep point. Metric fields are NaN when not
// measured (the point failed to run, or a percentile was not computed).
type Point struct {
	ISL           int     `json:"isl"`
	OSL           int     `json:"osl"`
	Concurrency   int     `json:"concurrency"`
	NumPrompts    int     `json:"num_prompts"`
	Source        string  `json:"source"`
	Completed     int     `json:"num_requests"`
	Failed        int     `json:"errors"`
	MeanInputLen  float64 `json:"input_sequence_length"`
	MeanOutputLen float64 `json:"output_sequence_length"`
	TTFTms        float64 `json:"mean_ttft_ms"`
	P50TTFTms     float64 `json:"p50_ttft_ms"`
	P99TTFTms     float64 `json:"p99_ttft_ms"`
	TPOTms        float64 `json:"mean_tpot_ms"`
	ITLms         float64 `json:"mean_itl_ms"`
	E2ELms        float64 `json:"mean_e2el_ms"`
	TputUser      float64 `json:"tput_user"`
	TputInput     float64 `json:"tps_input_throughput"`
	TputOutput    float64 `json:"tps_output_throughput"`
	TputTotal     float64 `json:"tps_total_throughput"`
	ReqTput       float64 `json:"request_throughput"`
	// ResultFile is the raw result's file name.
	ResultFile string `json:"result_file,omitempty"`
	// Error says why the point could not run at all.
	Error string      `json:"error,omitempty"`
	Grade grade.Point `json:"grade"`
}

// Data is the JSON data file: the sweep's metadata and graded points.
type Data struct {
	Metadata Metadata `json:"metadata"`
	Points   []Point  `json:"points"`
}

// ParseJSON reads a data file written by JSON (null metrics become NaN),
// so that a resumed run keeps the points it had finished.
func ParseJSON(b []byte) (*Data, error) {
	var raw struct {
		Metadata Metadata          `json:"metadata"`
		Points   []json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("read sweep data: %w", err)
	}
	d := &Data{Metadata: raw.Metadata}
	for i, rp := range raw.Points {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(rp, &m); err != nil {
			return nil, fmt.Errorf("read sweep data: point %d: %w", i, err)
		}
		var nulls []string
		for k, v := range m {
			if string(v) == "null" {
				nulls = append(nulls, k)
				delete(m, k)
			}
		}
		clean, _ := json.Marshal(m)
		var p Point
		if err := json.Unmarshal(clean, &p); err != nil {
			return nil, fmt.Errorf("read sweep data: point %d: %w", i, err)
		}
		for _, k := range nulls {
			if f := p.metric(k); f != nil {
				*f = math.NaN()
			}
		}
		d.Points = append(d.Points, p)
	}
	return d, nil
}

// metricKeys are the JSON keys of Point's NaN-able metrics.
var metricKeys = []string{"input_sequence_length", "output_sequence_length", "mean_ttft_ms", "p50_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "mean_itl_ms", "mean_e2el_ms", "tput_user", "tps_input_throughput", "tps_output_throughput",
	"tps_total_throughput", "request_throughput"}

// metric is the NaN-able field of p stored under JSON key k.
func (p *Point) metric(k string) *float64 {
	return map[string]*float64{
		"input_sequence_length": &p.MeanInputLen, "output_sequence_length": &p.MeanOutputLen,
		"mean_ttft_ms": &p.TTFTms, "p50_ttft_ms": &p.P50TTFTms, "p99_ttft_ms": &p.P99TTFTms,
		"mean_tpot_ms": &p.TPOTms, "mean_itl_ms": &p.ITLms, "mean_e2el_ms": &p.E2ELms, "tput_user": &p.TputUser,
		"tps_input_throughput": &p.TputInput, "tps_output_throughput": &p.TputOutput,
		"tps_total_throughput": &p.TputTotal, "request_throughput": &p.ReqTput,
	}[k]
}

// JSON renders the data file; NaN metrics become null.
func JSON(md Metadata, pts []Point) ([]byte, error) {
	clean := make([]jsonPoint, len(pts))
	for i := range pts {
		clean[i] = jsonPoint(pts[i])
	}
	b, err := json.MarshalIndent(struct {
		Metadata Metadata    `json:"metadata"`
		Points   []jsonPoint `json:"points"`
	}{md, clean}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render report JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// jsonPoint marshals NaN fields as null.
type jsonPoint Point

// MarshalJSON implements json.Marshaler.
func (p jsonPoint) MarshalJSON() ([]byte, error) {
	type plain Point
	q := Point(p)
	var nulls []string
	for _, k := range metricKeys {
		if v := q.metric(k); math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
			nulls = append(nulls, k)
		}
	}
	b, err := json.Marshal(plain(q))
	if err != nil || len(nulls) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range nulls {
		m[k] = json.RawMessage("null")
	}
	return json.Marshal(m)
}

// column is one table column: a header and how to render a point.
type column struct {
	header, csvName string
	cell            func(p *Point) string
}

func fixed(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "NA"
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

var columns = []column{
	{"ISL", "isl", func(p *Point) string { return strconv.Itoa(p.ISL) }},
	{"OSL", "osl", func(p *Point) string { return strconv.Itoa(p.OSL) }},
	{"Concurrency", "concurrency", func(p *Point) string { return strconv.Itoa(p.Concurrency) }},
	{"Num Requests", "num_requests", func(p *Point) string { return strconv.Itoa(p.Completed) }},
	{"Mean ISL", "input_sequence_length", func(p *Point) string { return fixed(math.Round(p.MeanInputLen), 0) }},
	{"Mean OSL", "output_sequence_length", func(p *Point) string { return fixed(p.MeanOutputLen, 1) }},
	{"TTFT (ms)", "mean_ttft_ms", func(p *Point) string { return fixed(p.TTFTms, 1) }},
	{"P50 TTFT (ms)", "p50_ttft_ms", func(p *Point) string { return fixed(p.P50TTFTms, 1) }},
	{"P99 TTFT (ms)", "p99_ttft_ms", func(p *Point) string { return fixed(p.P99TTFTms, 1) }},
	{"TPOT (ms)", "mean_tpot_ms", func(p *Point) string { return fixed(p.TPOTms, 1) }},
	{"ITL (ms)", "mean_itl_ms", func(p *Point) string { return fixed(p.ITLms, 1) }},
	{"E2EL (ms)", "mean_e2el_ms", func(p *Point) string { return fixed(p.E2ELms, 1) }},
	{"Tput User (TPS)", "tput_user", func(p *Point) string { return fixed(p.TputUser, 2) }},
	{"Tput Input (TPS)", "tps_input_throughput", func(p *Point) string { return fixed(p.TputInput, 1) }},
	{"Tput Output (TPS)", "tps_output_throughput", func(p *Point) string { return fixed(p.TputOutput, 1) }},
	{"Tput Total (TPS)", "tps_total_throughput", func(p *Point) string { return fixed(p.TputTotal, 1) }},
	{"Req Tput (RPS)", "request_throughput", func(p *Point) string { return fixed(p.ReqTput, 3) }},
	{"Errors", "errors", func(p *Point) string { return strconv.Itoa(p.Failed) }},
	{"Verdict", "verdict", func(p *Point) string { return p.Grade.Words(p.Error != "") }},
}

// CSV renders one row per point with machine-friendly headers.
func CSV(pts []Point) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	hdr := make([]string, 0, len(columns)+1)
	for _, c := range columns {
		hdr = append(hdr, c.csvName)
	}
	hdr = append(hdr, "result_file")
	if err := w.Write(hdr); err != nil {
		return nil, err
	}
	for i := range pts {
		row := make([]string, 0, len(hdr))
		for _, c := range columns {
			row = append(row, c.cell(&pts[i]))
		}
		row = append(row, pts[i].ResultFile)
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// checkCell writes a check's verdict; anything but PASS or FAIL is NA.
func checkCell(v verdict.Verdict) string {
	if v == verdict.Pass || v == verdict.Fail {
		return string(v)
	}
	return string(verdict.NA)
}

// TargetChecks renders a graded point's tiers as the reference's "Target
// Checks" markdown table: one row per tier, target, ratio and verdict for
// TTFT, tput/user and output tput.
func TargetChecks(g grade.Point) string {
	var b strings.Builder
	b.WriteString("| Tier | TTFT Target | TTFT Ratio | TTFT Check | Tput User Target | Tput User Ratio | Tput User Check | Tput Output Target | Tput Output Ratio | Tput Output Check |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range g.Tiers {
		name := t.Name
		if t.Enforced {
			name += " (enforced)"
		}
		fmt.Fprintf(&b, "| %s |", name)
		for _, c := range t.Checks {
			target, ratio := "NA", "NA"
			if c.Threshold > 0 {
				target = fixed(c.Threshold, 2)
			}
			if c.Verdict != verdict.NA {
				ratio = fixed(c.Ratio, 3)
			}
			fmt.Fprintf(&b, " %s | %s | %s |", target, ratio, checkCell(c.Verdict))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Markdown renders the summary.
func Markdown(md Metadata, pts []Point) []byte {
	var b strings.Builder
	title := md.Model + " on " + md.Device
	fmt.Fprintf(&b, "## Benchmark Summary: %s\n\n", title)
	if md.Simulated {
		b.WriteString("> **Simulated**: these figures come from the `sim` runtime, not from hardware.\n\n")
	}
	b.WriteString("Each point is graded below; the run's verdict, which weighs every point and eval together, is in its report.md.\n\n")
	if md.ModelStatus != "" {
		fmt.Fprintf(&b, "Model status: %s\n\n", md.ModelStatus)
	}
	b.WriteString("### Metadata\n\n")
	fmt.Fprintf(&b, "| Key | Value |\n|---|---|\n")
	for _, kv := range [][2]string{
		{"Report ID", md.ReportID}, {"Unit", md.Unit}, {"Server", md.BaseURL + md.Endpoint},
		{"Limit", md.Limit}, {"Generated", md.GeneratedAt}, {"Tokenizer", md.Tokenizer},
		{"Targets", md.TargetsSource}, {"Simulated", strconv.FormatBool(md.Simulated)},
		{"Trace capture", md.TraceCapture},
	} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", kv[0], escapeCell(kv[1]))
		}
	}
	fmt.Fprintf(&b, "\n---\n\n### Benchmark Sweep for %s\n\n", title)
	b.WriteString("|")
	for _, c := range columns {
		b.WriteString(" " + c.header + " |")
	}
	b.WriteString("\n|")
	for range columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for i := range pts {
		b.WriteString("|")
		for _, c := range columns {
			b.WriteString(" " + c.cell(&pts[i]) + " |")
		}
		b.WriteString("\n")
	}
	for i := range pts {
		p := &pts[i]
		if p.Error != "" {
			fmt.Fprintf(&b, "\nPoint ISL %d / OSL %d, concurrency %d did not run: %s\n", p.ISL, p.OSL, p.Concurrency, escapeCell(p.Error))
		}
	}
	for i := range pts {
		p := &pts[i]
		if len(p.Grade.Tiers) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n---\n\n### Targets — ISL %d / OSL %d, concurrency %d\n\n", p.ISL, p.OSL, p.Concurrency)
		b.WriteString(TargetChecks(p.Grade))
	}
	b.WriteString("\n**Notes**\n\n")
	b.WriteString("- Columns without a percentile label are means. TPOT excludes the first token; ITL is per output token (a chunk's gap shared among the tokens it carried); Tput User = 1000 / mean TPOT.\n")
	b.WriteString("- Verdict: a point passes when any single tier (functional, complete, target) meets all its checks, and names the strictest tier met; failures in tiers the model status does not enforce are waived; a missing target or measurement is NA, never a pass. `NOT MEASURED` and `INCOMPLETE` points did not run or had failed requests.\n")
	return []byte(b.String())
}

func escapeCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
