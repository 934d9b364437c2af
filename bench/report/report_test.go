package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ttis-dev/ttis/bench/grade"
	"github.com/ttis-dev/ttis/units/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func fixture() (Metadata, []Point) {
	md := Metadata{
		ReportID: "Llama-3.1-8B-Instruct_n150_2026-01-02_03-04-05", Model: "Llama-3.1-8B-Instruct", Device: "n150",
		Unit: "llama", BaseURL: "http://127.0.0.1:8000", Endpoint: "/v1/completions", ModelStatus: "🟢 Complete",
		Limit: "smoke", GeneratedAt: "2026-01-02T03:04:05Z", Tokenizer: "server http://127.0.0.1:8000/tokenize (model m)",
		Simulated: true, TargetsSource: "catalog",
	}
	target := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 51, TputUser: 21, Tput: 21}
	graded := Point{ISL: 128, OSL: 128, Concurrency: 1, NumPrompts: 8, Source: "target", Completed: 8,
		MeanInputLen: 128, MeanOutputLen: 128, TTFTms: 60.25, P50TTFTms: 59.5, P99TTFTms: 70.125, TPOTms: 47.5,
		ITLms: 47.5, E2ELms: 6092.75, TputUser: 1000 / 47.5, TputInput: 20.5, TputOutput: 20.25, TputTotal: 40.75,
		ReqTput: 0.158, ResultFile: "benchmark_a.json"}
	graded.Grade = grade.Grade(grade.Input{Target: target, Factors: grade.Factors(nil),
		Required: catalog.RequiredTiers(catalog.StatusComplete), Completed: 8,
		Measured: grade.Measured{TTFTms: graded.TTFTms, TputUser: graded.TputUser, Tput: graded.TputOutput}})
	ungraded := Point{ISL: 128, OSL: 1024, Concurrency: 32, NumPrompts: 128, Source: "sweep", Completed: 128,
		MeanInputLen: 128.4, MeanOutputLen: 1023.5, TTFTms: 300, P50TTFTms: 290, P99TTFTms: 410, TPOTms: 55,
		ITLms: 54.9, E2ELms: 56565, TputUser: 1000.0 / 55, TputInput: 70, TputOutput: 580.3, TputTotal: 650.3,
		ReqTput: 0.567, ResultFile: "benchmark_b.json"}
	ungraded.Grade = grade.Grade(grade.Input{Factors: grade.Factors(nil), Completed: 128})
	nan := math.NaN()
	broken := Point{ISL: 1024, OSL: 128, Concurrency: 1, NumPrompts: 4, Source: "sweep", Failed: 4,
		MeanInputLen: nan, MeanOutputLen: nan, TTFTms: nan, P50TTFTms: nan, P99TTFTms: nan, TPOTms: nan, ITLms: nan,
		E2ELms: nan, TputUser: nan, TputInput: nan, TputOutput: nan, TputTotal: nan, ReqTput: nan,
		ResultFile: "benchmark_c.json"}
	broken.Grade = grade.Grade(grade.Input{Factors: grade.Factors(nil), Failed: 4})
	return md, []Point{graded, ungraded, broken}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	md, pts := fixture()
	golden(t, "summary.md", Markdown(md, pts))
}

func TestCSVGolden(t *testing.T) {
	_, pts := fixture()
	b, err := CSV(pts)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.csv", b)
}

func TestJSON(t *testing.T) {
	md, pts := fixture()
	b, err := JSON(md, pts)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Metadata Metadata
		Points   []map[string]any
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Points[2]["mean_ttft_ms"] != nil || back.Points[0]["mean_ttft_ms"] != 60.25 {
		t.Errorf("points %v", back.Points)
	}
	golden(t, "summary.json", b)
	// The data file reads back into the same points (NaN for nulls).
	d, err := ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := JSON(d.Metadata, d.Points)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("a parsed data file renders differently (%v):\n%s", err, again)
	}
	if !math.IsNaN(d.Points[2].TTFTms) {
		t.Errorf("null TTFT read as %v, want NaN", d.Points[2].TTFTms)
	}
}

func FuzzParseJSON(f *testing.F) {
	md, pts := fixture()
	if b, err := JSON(md, pts); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"points":[{"isl":1,"mean_ttft_ms":null,"grade":{"status":"na"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseJSON(b)
		if err != nil {
			return
		}
		if _, err := JSON(d.Metadata, d.Points); err != nil {
			t.Errorf("render a parsed data file: %v", err)
		}
	})
}
