package bench

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/report"
	"github.com/ttis-dev/ttis/bench/sweep"
)

// resultKeys are the keys of a result file (vLLM's `bench serve
// --save-result` names, which bench/result writes) that a report row is
// made of; a missing or null value is not measured.
type resultKeys struct {
	Completed          *int     `json:"completed"`
	Failed             *int     `json:"failed"`
	TotalInputTokens   *float64 `json:"total_input_tokens"`
	TotalOutputTokens  *float64 `json:"total_output_tokens"`
	MeanTTFTms         *float64 `json:"mean_ttft_ms"`
	MedianTTFTms       *float64 `json:"median_ttft_ms"`
	P99TTFTms          *float64 `json:"p99_ttft_ms"`
	MeanTPOTms         *float64 `json:"mean_tpot_ms"`
	MeanITLms          *float64 `json:"mean_itl_ms"`
	MeanE2ELms         *float64 `json:"mean_e2el_ms"`
	OutputThroughput   *float64 `json:"output_throughput"`
	TotalTokThroughput *float64 `json:"total_token_throughput"`
	RequestThroughput  *float64 `json:"request_throughput"`
}

func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// PointFromResult reads a point's result file (data, named name) back into
// its report row, graded against pt's target as GradePoint grades a fresh
// one: the same figures from the file's keys (run.py's report reads its
// points from the same files). Request counts are required; a metric the
// file lacks is not measured.
func PointFromResult(pt sweep.Point, name string, data []byte, factors []grade.TierFactor, required []string) (report.Point, error) {
	var k resultKeys
	if err := json.Unmarshal(data, &k); err != nil {
		return report.Point{}, fmt.Errorf("%s: %w", name, err)
	}
	if k.Completed == nil || k.Failed == nil || *k.Completed < 0 || *k.Failed < 0 {
		return report.Point{}, fmt.Errorf("%s: completed and failed must be counts", name)
	}
	rp := report.Point{ISL: pt.ISL, OSL: pt.OSL, Concurrency: pt.Concurrency, NumPrompts: pt.NumPrompts, Source: pt.Source,
		Completed: *k.Completed, Failed: *k.Failed, ResultFile: name}
	if rp.Completed == 0 {
		fillMissing(&rp)
	} else {
		n := float64(rp.Completed)
		rp.MeanInputLen, rp.MeanOutputLen = orNaN(k.TotalInputTokens)/n, orNaN(k.TotalOutputTokens)/n
		rp.TTFTms, rp.P50TTFTms, rp.P99TTFTms = orNaN(k.MeanTTFTms), orNaN(k.MedianTTFTms), orNaN(k.P99TTFTms)
		rp.TPOTms, rp.ITLms, rp.E2ELms = orNaN(k.MeanTPOTms), orNaN(k.MeanITLms), orNaN(k.MeanE2ELms)
		// No request produced two tokens when vLLM's mean TPOT is 0.
		if !(rp.TPOTms > 0) {
			rp.TPOTms, rp.ITLms, rp.TputUser = math.NaN(), math.NaN(), math.NaN()
		} else {
			rp.TputUser = 1000 / rp.TPOTms
		}
		rp.TputOutput, rp.TputTotal, rp.ReqTput = orNaN(k.OutputThroughput), orNaN(k.TotalTokThroughput), orNaN(k.RequestThroughput)
		rp.TputInput = rp.TputTotal - rp.TputOutput
	}
	rp.Grade = grade.Grade(grade.Input{Target: pt.Target, Factors: factors, Required: required,
		Measured: measured(&rp), Completed: rp.Completed, Failed: rp.Failed})
	return rp, nil
}
