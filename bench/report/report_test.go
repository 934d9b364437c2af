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
		Metadata   Metadata
		Acceptance Acceptance
		Points     []map[string]any
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Acceptance.Passed || back.Acceptance.Pass != 1 || back.Acceptance.Errors != 1 || back.Acceptance.NA != 1 {
		t.Errorf("acceptance %+v", back.Acceptance)
	}
	if back.Points[2]["mean_ttft_ms"] != nil || back.Points[0]["mean_ttft_ms"] != 60.25 {
		t.Errorf("points %v", back.Points)
	}
	golden(t, "summary.json", b)
}

func TestAccept(t *testing.T) {
	pass := Point{Grade: grade.Point{Status: grade.StatusPass}}
	na := Point{Grade: grade.Point{Status: grade.StatusNA}}
	waived := Point{Grade: grade.Point{Status: grade.StatusWaived}}
	fail := Point{Grade: grade.Point{Status: grade.StatusFail, Blockers: []string{"x"}}}
	if a := Accept([]Point{pass, na, waived}); !a.Passed {
		t.Errorf("pass+na+waived: %+v", a)
	}
	if a := Accept([]Point{na}); a.Passed {
		t.Error("an ungraded sweep must not pass")
	}
	if a := Accept([]Point{pass, fail}); a.Passed || len(a.Blockers) != 1 {
		t.Errorf("pass+fail: %+v", a)
	}
}
