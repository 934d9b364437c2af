package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ttis-dev/ttis/bench/sweep"
)

// TraceCaptureOSL is the output length of a trace-capture request: enough
// decode steps to capture the decode trace, as the server's own background
// capture uses (tt-inference-server utils/prompt_client.py
// get_trace_context_lens, output_len=4, lines 56-73).
const TraceCaptureOSL = 4

// TraceShape is one (input length, batch) the server must have a trace for
// before it is measured: tt-metal captures a prefill trace per padded
// sequence length and a decode trace per batch size, and the first request
// of each shape pays for the capture.
type TraceShape struct {
	ISL   int `json:"isl"`
	Batch int `json:"batch"`
}

// TraceCapture is the outcome of warming one shape up.
type TraceCapture struct {
	TraceShape
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	Seconds   float64 `json:"seconds"`
	Error     string  `json:"error,omitempty"`
}

// TraceShapes lists the distinct (ISL, concurrency) shapes of pts in
// ascending order, as tt-inference-server's benchmark runner collects the
// distinct lengths of its sweep before measuring (llm_module/runner.py
// lines 94-102).
func TraceShapes(pts []sweep.Point) []TraceShape {
	var out []TraceShape
	for _, p := range pts {
		s := TraceShape{ISL: p.ISL, Batch: max(p.Concurrency, 1)}
		if p.ISL > 0 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b TraceShape) int {
		return cmp.Or(cmp.Compare(a.ISL, b.ISL), cmp.Compare(a.Batch, b.Batch))
	})
	return out
}

// CaptureTraces warms the server up for each shape: Batch concurrent
// requests with ISL-token prompts and TraceCaptureOSL output tokens, with
// base's client, dataset kind and auth. Nothing is measured or written; a
// failed capture is reported and the sweep goes on (the runner above
// continues too: its first measured requests then pay for the capture).
// onShape, when set, is called before each shape.
func CaptureTraces(ctx context.Context, base PointConfig, shapes []TraceShape, onShape func(i int, s TraceShape)) []TraceCapture {
	out := make([]TraceCapture, 0, len(shapes))
	for i, s := range shapes {
		if ctx.Err() != nil {
			break
		}
		if onShape != nil {
			onShape(i, s)
		}
		pc := base
		pc.Dataset.InputLen, pc.Dataset.OutputLen = s.ISL, TraceCaptureOSL
		pc.NumPrompts = s.Batch
		pc.Load.MaxConcurrency = s.Batch
		pc.Load.NumWarmups = 0
		pc.Load.RequestRate, pc.Load.Burstiness = math.Inf(1), 1
		pc.Load.RequestIDPrefix = fmt.Sprintf("%strace-isl%d-b%d-", base.Load.RequestIDPrefix, s.ISL, s.Batch)
		start := time.Now()
		pr, err := RunPoint(ctx, pc)
		tc := TraceCapture{TraceShape: s, Seconds: time.Since(start).Seconds()}
		if err != nil {
			tc.Error = err.Error()
		} else {
			tc.Completed, tc.Failed = pr.Summary.Completed, pr.Summary.Failed
		}
		out = append(out, tc)
	}
	return out
}
