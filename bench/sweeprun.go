package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/metrics"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/result"
	"github.com/ttis-dev/ttis/bench/sweep"
)

// SweepConfig is a planned sweep against one server.
type SweepConfig struct {
	// Base is the template of every point: client, dataset kind, traffic
	// options. Each point sets ISL, OSL, prompts and concurrency.
	Base   PointConfig
	Points []sweep.Point
	// Factors and Required drive grading (grade.Factors,
	// catalog.RequiredTiers).
	Factors  []grade.TierFactor
	Required []string
	Metadata report.Metadata
	// OutDir receives the per-point result files and the summaries; it is
	// created if missing.
	OutDir string
	// OnPoint is called before each point runs (progress display).
	OnPoint func(i int, p sweep.Point)
	// TraceCapture warms the server up for every (ISL, concurrency) of the
	// points left to run before measuring any (see CaptureTraces);
	// OnTraceCapture is called before each shape.
	TraceCapture   bool
	OnTraceCapture func(i, n int, s TraceShape)
	// Done are points an earlier, interrupted run of the same plan
	// measured (ParseJSON of its SummaryJSON): they are kept, not run
	// again. A point that failed runs again.
	Done []report.Point
}

// Summary file names inside a sweep's folder.
const (
	SummaryMarkdown = "bench_summary.md"
	SummaryCSV      = "bench_summary.csv"
	SummaryJSON     = "bench_report.json"
)

// SweepResult is a finished sweep.
type SweepResult struct {
	Points []report.Point
	// Files are the paths written.
	Files []string
	// Incomplete is true when a point did not run or a request failed.
	Incomplete bool
	// TraceCaptures are the warm-ups run before measuring.
	TraceCaptures []TraceCapture
}

// RunSweep runs every point in order, grades it and writes the files. A
// point that fails (server down, bad answers) is recorded and the sweep goes
// on. A cancelled context stops it: the summaries of the points finished so
// far are still written, and the result comes back with ctx's error. A
// file that cannot be written stops the sweep with the error and the
// result so far.
func RunSweep(ctx context.Context, sc SweepConfig) (*SweepResult, error) {
	if len(sc.Points) == 0 {
		return nil, fmt.Errorf("sweep: no points planned")
	}
	if err := os.MkdirAll(sc.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	done := map[[4]int]report.Point{}
	for _, p := range sc.Done {
		if p.Error == "" && p.Grade.Status != grade.StatusError {
			done[[4]int{p.ISL, p.OSL, p.Concurrency, p.NumPrompts}] = p
		}
	}
	res := &SweepResult{}
	if sc.TraceCapture {
		var todo []sweep.Point
		for _, pt := range sc.Points {
			if _, ok := done[pt.Key()]; !ok {
				todo = append(todo, pt)
			}
		}
		shapes := TraceShapes(todo)
		res.TraceCaptures = CaptureTraces(ctx, sc.Base, shapes, func(i int, s TraceShape) {
			if sc.OnTraceCapture != nil {
				sc.OnTraceCapture(i, len(shapes), s)
			}
		})
		sc.Metadata.TraceCapture = DescribeCaptures(res.TraceCaptures)
	}
	var cancelled error
	for i, pt := range sc.Points {
		if p, ok := done[pt.Key()]; ok {
			res.Points = append(res.Points, p)
			if p.ResultFile != "" {
				res.Files = append(res.Files, filepath.Join(sc.OutDir, p.ResultFile))
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			cancelled = err
			break
		}
		if sc.OnPoint != nil {
			sc.OnPoint(i, pt)
		}
		pc := sc.Base
		pc.Dataset.InputLen, pc.Dataset.OutputLen = pt.ISL, pt.OSL
		pc.NumPrompts = pt.NumPrompts
		pc.Load.MaxConcurrency = pt.Concurrency
		pc.Load.RequestIDPrefix = fmt.Sprintf("%sisl%d-osl%d-c%d-", sc.Base.Load.RequestIDPrefix, pt.ISL, pt.OSL, pt.Concurrency)
		pr, err := RunPoint(ctx, pc)
		if err != nil {
			if ctx.Err() != nil {
				cancelled = ctx.Err()
				break
			}
			res.Incomplete = true
			res.Points = append(res.Points, NotRunPoint(pt, err.Error(), sc.Factors, sc.Required))
			continue
		}
		if pr.Summary.Failed > 0 {
			res.Incomplete = true
		}
		if sc.Metadata.Tokenizer == "" {
			sc.Metadata.Tokenizer = pr.Run.Tokenizer
		}
		path := filepath.Join(sc.OutDir, pr.FileName)
		if err := result.WriteFileAtomic(path, pr.JSON); err != nil {
			return res, err
		}
		res.Files = append(res.Files, path)
		rp := GradePoint(pt, pr, sc.Factors, sc.Required)
		rp.ResultFile = pr.FileName
		res.Points = append(res.Points, rp)
		// The summaries follow every point, so a run that stops (a signal,
		// a full disk) keeps what it measured.
		if _, err := writeSummaries(sc, res.Points); err != nil {
			return res, err
		}
	}
	if cancelled != nil {
		res.Incomplete = true
		if len(res.Points) == 0 {
			return nil, cancelled
		}
	}
	files, err := writeSummaries(sc, res.Points)
	if err != nil {
		return res, err
	}
	res.Files = append(res.Files, files...)
	return res, cancelled
}

// DescribeCaptures is the trace-capture condition recorded with a sweep
// (or a single point).
func DescribeCaptures(tc []TraceCapture) string {
	failed := 0
	for _, c := range tc {
		if c.Error != "" || c.Failed > 0 {
			failed++
		}
	}
	s := fmt.Sprintf("on: %d (ISL, batch) shapes warmed up before measuring", len(tc))
	if failed > 0 {
		s += fmt.Sprintf(", %d of them with failures", failed)
	}
	return s
}

// writeSummaries writes the sweep's markdown, CSV and JSON summaries of
// pts.
func writeSummaries(sc SweepConfig, pts []report.Point) ([]string, error) {
	md := sc.Metadata
	if md.GeneratedAt == "" {
		md.GeneratedAt = time.Now().UTC().Format(time.RFC3339)
	}
	js, err := report.JSON(md, pts)
	if err != nil {
		return nil, err
	}
	csv, err := report.CSV(pts)
	if err != nil {
		return nil, fmt.Errorf("render CSV: %w", err)
	}
	var files []string
	for _, f := range []struct {
		name string
		data []byte
	}{{SummaryMarkdown, report.Markdown(md, pts)}, {SummaryCSV, csv}, {SummaryJSON, js}} {
		path := filepath.Join(sc.OutDir, f.name)
		if err := result.WriteFileAtomic(path, f.data); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	return files, nil
}

// GradePoint turns a measured point into a report row graded against its
// target (NA when it has none) in the given tiers.
func GradePoint(pt sweep.Point, pr *PointResult, factors []grade.TierFactor, required []string) report.Point {
	rp := report.Point{ISL: pt.ISL, OSL: pt.OSL, Concurrency: pt.Concurrency, NumPrompts: pt.NumPrompts, Source: pt.Source}
	fillPoint(&rp, &pr.Summary)
	rp.Grade = grade.Grade(grade.Input{Target: pt.Target, Factors: factors, Required: required,
		Measured: measured(&rp), Completed: pr.Summary.Completed, Failed: pr.Summary.Failed})
	return rp
}

// NotRunPoint is the report row of a point that could not run: nothing
// measured, every request counted as failed, graded as an error.
func NotRunPoint(pt sweep.Point, why string, factors []grade.TierFactor, required []string) report.Point {
	rp := report.Point{ISL: pt.ISL, OSL: pt.OSL, Concurrency: pt.Concurrency, NumPrompts: pt.NumPrompts, Source: pt.Source,
		Error: why, Failed: pt.NumPrompts}
	fillMissing(&rp)
	rp.Grade = grade.Grade(grade.Input{Target: pt.Target, Factors: factors, Required: required,
		Measured: grade.Measured{TTFTms: grade.Missing, TputUser: grade.Missing, Tput: grade.Missing}, Failed: pt.NumPrompts})
	return rp
}

// measured picks the graded figures; tput_user is 1000 / mean TPOT, NA when
// no request produced two tokens.
func measured(p *report.Point) grade.Measured {
	m := grade.Measured{TTFTms: p.TTFTms, TputUser: p.TputUser, Tput: p.TputOutput, TputUserSource: "1000/mean_tpot_ms"}
	if p.Completed == 0 {
		m.TTFTms, m.Tput = grade.Missing, grade.Missing
	}
	return m
}

func fillMissing(p *report.Point) {
	nan := math.NaN()
	p.MeanInputLen, p.MeanOutputLen, p.TTFTms, p.P50TTFTms, p.P99TTFTms = nan, nan, nan, nan, nan
	p.TPOTms, p.ITLms, p.E2ELms, p.TputUser, p.TputInput = nan, nan, nan, nan, nan
	p.TputOutput, p.TputTotal, p.ReqTput = nan, nan, nan
}

// fillPoint copies a run's summary into a report row.
func fillPoint(p *report.Point, s *metrics.Summary) {
	p.Completed, p.Failed = s.Completed, s.Failed
	if s.Completed == 0 {
		fillMissing(p)
		return
	}
	p.MeanInputLen = float64(s.TotalInputTokens) / float64(s.Completed)
	p.MeanOutputLen = float64(s.TotalOutputTokens) / float64(s.Completed)
	p.TTFTms = s.TTFT.Mean
	p.P50TTFTms = s.TTFT.Median
	p.P99TTFTms = percentileOf(s.TTFT, 99)
	p.TPOTms, p.ITLms, p.E2ELms = s.TPOT.Mean, s.ITL.Mean, s.E2EL.Mean
	if s.TPOT.Count == 0 {
		p.TPOTms, p.ITLms, p.TputUser = math.NaN(), math.NaN(), math.NaN()
	} else {
		p.TputUser = 1000 / s.TPOT.Mean
	}
	p.TputInput = s.TotalTokThroughput - s.OutputThroughput
	p.TputOutput, p.TputTotal, p.ReqTput = s.OutputThroughput, s.TotalTokThroughput, s.RequestThroughput
}

func percentileOf(st metrics.Stats, p float64) float64 {
	for _, q := range st.Percentiles {
		if q.P == p {
			return q.Value
		}
	}
	return math.NaN()
}
