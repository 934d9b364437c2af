package release

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"

	"github.com/ttis-dev/ttis/bench/media"
	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/units/limit"
)

// Media models are benchmarked with bench/media instead of the text
// sweep: one point at the catalog target's concurrency, graded against the
// media target, reported in the same Benchmarks section with the media
// measurements beside the common columns.

// mediaResultFile is the raw media point in the run's benchmarks folder.
const mediaResultFile = "media.json"

// mediaRequests is how many requests a media point sends per unit of
// concurrency, by run size.
func mediaRequests(m limit.Mode) int {
	switch m {
	case limit.Smoke:
		return 2
	case limit.CICommit:
		return 4
	case limit.CINightly, limit.CILong:
		return 8
	}
	return 16
}

// runMedia measures the media point of cfg's target.
func runMedia(ctx context.Context, cfg *Config, run *runs.Run) *BenchSection {
	t := cfg.Target
	factors, _ := tierSetup(t.Spec)
	sec := &BenchSection{TierFactors: tierFactorMap(factors)}
	mc := media.Config{Model: t.Model, Spec: t.Spec}
	conc := 1
	for _, p := range t.Spec.Targets {
		if p.Concurrency > 0 {
			conc = p.Concurrency
			break
		}
	}
	mc.Concurrency, mc.Requests = conc, conc*mediaRequests(cfg.Limit)
	client, err := t.Server(conc)
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	defer client.Close()
	mc.Client = client
	cfg.logf("benchmark: %s, concurrency %d (%d requests)", t.Spec.MediaService(), conc, mc.Requests)
	if cfg.Progress != nil {
		cfg.Progress.Step("benchmark", mc.Requests)
		mc.Done = func() { cfg.Progress.Done(1) }
	}
	p, err := media.Run(ctx, mc)
	if err != nil {
		sec.Error = err.Error()
		return sec
	}
	row := BenchRow{Concurrency: p.Concurrency, NumPrompts: p.Requests, Source: "point", Completed: p.Completed, Errors: p.Failed,
		TTFTms: p.TTFTms, E2ELms: p.E2ELms, TputUser: p.UserRate, Grade: p.Grade, Media: p}
	if p.Target != nil {
		row.Source = "target"
		if v := p.Target.TTFTms; v > 0 {
			row.TargetTTFTms = &v
		}
	}
	if p.Duration > 0 {
		row.ReqTput = opt(float64(p.Completed) / p.Duration)
	}
	if js, err := json.MarshalIndent(p, "", "  "); err == nil {
		if err := run.WriteFile(filepath.Join("benchmarks", mediaResultFile), js); err != nil {
			sec.Error = err.Error()
		} else {
			row.ResultFile = mediaResultFile
		}
	}
	sec.Rows = []BenchRow{row}
	return sec
}

// isMediaSection reports whether rows are media points.
func isMediaSection(rows []BenchRow) bool { return len(rows) > 0 && rows[0].Media != nil }

// mediaColumns are the benchmark table's columns for media points.
var mediaColumns = []struct {
	header string
	cell   func(r *BenchRow) string
}{
	{"Task", func(r *BenchRow) string { return r.Media.Task }},
	{"Concurrency", func(r *BenchRow) string { return strconv.Itoa(r.Concurrency) }},
	{"Num Requests", func(r *BenchRow) string { return strconv.Itoa(r.Completed) }},
	{"TTFT (ms)", func(r *BenchRow) string { return num(r.TTFTms, 1) }},
	{"E2EL (ms)", func(r *BenchRow) string { return num(r.E2ELms, 1) }},
	{"Seconds per Image", func(r *BenchRow) string { return num(r.Media.SecondsPerImage, 3) }},
	{"Images/s", func(r *BenchRow) string { return num(r.Media.ImagesPerSecond, 3) }},
	{"Real-Time Factor", func(r *BenchRow) string { return num(r.Media.RTF, 2) }},
	{"Embeddings/s", func(r *BenchRow) string { return num(r.Media.EmbeddingsPerSecond, 1) }},
	{"Prompt Tokens/s", func(r *BenchRow) string { return num(r.Media.TokensPerSecond, 1) }},
	{"Graded Rate (user)", func(r *BenchRow) string {
		if r.TputUser == nil {
			return ""
		}
		return num(r.TputUser, 3) + " " + r.Media.RateName
	}},
	{"Errors", func(r *BenchRow) string {
		if r.Errors == 0 {
			return ""
		}
		return strconv.Itoa(r.Errors)
	}},
	{"Verdict", pointVerdict},
}

// columnsFor picks the table columns for a section's rows.
func columnsFor(rows []BenchRow) []struct {
	header string
	cell   func(r *BenchRow) string
} {
	if isMediaSection(rows) {
		return mediaColumns
	}
	return benchColumns
}

// mediaNotes explain a media table.
const mediaNotes = "- Media point (bench/media): one point at the catalog target's concurrency. TTFT is the time to the first result: the first streamed segment for speech to text, the whole answer otherwise (a video job's completion). The real-time factor is audio seconds per wall second. The graded rate is images/s per user (image, CNN), the real-time factor (rtr: speech), prompt tokens/s per user (embeddings) or videos/s per user, against the target's tput_user (or rtr). Seconds per Image is seconds per video for video models.\n"
