package evalsuite

import (
	"math"
	"strings"
	"testing"
)

func TestDocAccessors(t *testing.T) {
	d := Doc{Source: "f.jsonl:3", Fields: map[string]any{"s": "x", "n": 7.0, "f": 2.5, "ns": " 12 ", "l": []any{"a", "b"}, "bad": []any{1.0}, "nil": nil}}
	if v, err := d.Str("n"); err != nil || v != "7" {
		t.Errorf("Str(n) = %q %v", v, err)
	}
	if v, err := d.Int("ns"); err != nil || v != 12 {
		t.Errorf("Int(ns) = %d %v", v, err)
	}
	if _, err := d.Int("f"); err == nil {
		t.Error("2.5 is not an integer")
	}
	if _, err := d.Strings("bad"); err == nil || !strings.Contains(err.Error(), `f.jsonl:3: field "bad"[0]`) {
		t.Errorf("Strings(bad): %v", err)
	}
	if _, err := d.Str("nil"); err == nil || !strings.Contains(err.Error(), `missing field "nil"`) {
		t.Errorf("Str(nil): %v", err)
	}
	if l, err := d.Strings("l"); err != nil || len(l) != 2 {
		t.Errorf("Strings(l) = %v %v", l, err)
	}
}

func TestAggregateFlattensInstructionLevel(t *testing.T) {
	per := map[string][]Scores{"none": {
		{"prompt": {1}, "inst": {1, 1}},
		{"prompt": {0}, "inst": {1, 0, 0}},
	}}
	aggs := AggregateScores([]MetricSpec{{Name: "prompt", Aggregation: "mean"}, {Name: "inst", Aggregation: "agg_inst_level_acc"}}, []string{"none"}, per)
	if len(aggs) != 2 || aggs[0].Key() != "prompt,none" || aggs[0].Value != 0.5 || aggs[0].N != 2 {
		t.Fatalf("%+v", aggs)
	}
	if aggs[1].Value != 0.6 || aggs[1].N != 5 || !math.IsNaN(aggs[1].Stderr) {
		t.Errorf("instruction level %+v, want the mean of 5 flattened values and no stderr", aggs[1])
	}
	if math.IsNaN(aggs[0].Stderr) {
		t.Error("a mean metric has a stderr")
	}
}
