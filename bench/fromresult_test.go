package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/bench/sweep"
	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

func TestPointFromResult(t *testing.T) {
	tgt := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 80}
	pt := sweep.Point{ISL: 128, OSL: 128, Concurrency: 1, NumPrompts: 8, Source: "target", Target: tgt}
	f := grade.Factors(nil)
	rp, err := PointFromResult(pt, "b.json", []byte(`{"completed": 8, "failed": 0, "total_input_tokens": 1024, "total_output_tokens": 1024,
	  "mean_ttft_ms": 45, "median_ttft_ms": 44, "p99_ttft_ms": null, "mean_tpot_ms": 10, "output_throughput": 90, "total_token_throughput": 180}`), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rp.MeanInputLen != 128 || rp.TputUser != 100 || rp.TputInput != 90 || !math.IsNaN(rp.P99TTFTms) || !math.IsNaN(rp.ReqTput) ||
		rp.Grade.TargetCheck != verdict.Pass || rp.ResultFile != "b.json" {
		t.Errorf("point %+v", rp)
	}
	none, err := PointFromResult(pt, "b.json", []byte(`{"completed": 0, "failed": 8}`), f, nil)
	if err != nil || !math.IsNaN(none.TTFTms) || none.Grade.Status != grade.StatusError {
		t.Errorf("all failed: %+v, %v", none, err)
	}
	for _, bad := range []string{`[]`, `{"failed": 0}`, `{"completed": -1, "failed": 0}`, `{"completed": "8", "failed": 0}`} {
		if _, err := PointFromResult(pt, "b.json", []byte(bad), f, nil); err == nil || !strings.Contains(err.Error(), "b.json") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func FuzzPointFromResult(f *testing.F) {
	f.Add([]byte(`{"completed": 8, "failed": 0, "mean_ttft_ms": 45, "mean_tpot_ms": 10}`))
	f.Add([]byte(`{"completed": 0, "failed": 8, "mean_tpot_ms": null}`))
	pt := sweep.Point{ISL: 128, OSL: 128, Concurrency: 1, NumPrompts: 8, Target: &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50}}
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := PointFromResult(pt, "f.json", b, grade.Factors(nil), nil)
		if err != nil {
			return
		}
		if rp.Completed < 0 || rp.Failed < 0 || rp.Grade.Status == "" {
			t.Fatalf("accepted %+v", rp)
		}
	})
}
