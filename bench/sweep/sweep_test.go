package sweep

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

func pointsString(pts []Point) string {
	var s []string
	for _, p := range pts {
		s = append(s, fmt.Sprintf("(%d,%d,%d,%d)", p.ISL, p.OSL, p.Concurrency, p.NumPrompts))
	}
	return strings.Join(s, " ")
}

// The worked examples of the reference (tt-inference-server.md §3.1).
func TestPlanReferenceExamples(t *testing.T) {
	n150 := Limits{MaxConcurrency: 32, MaxContext: 65536, MaxTokensAllUsers: 65536}
	pts, err := Plan(n150, nil, Options{Limit: limit.Full})
	if err != nil {
		t.Fatal(err)
	}
	want := "(128,128,1,8) (128,128,32,256) (128,1024,1,4) (128,1024,32,128) (1024,128,1,4) (1024,128,32,128) " +
		"(2048,128,1,4) (2048,128,30,120) (4096,128,1,4) (4096,128,15,60) (8192,128,1,2) (8192,128,7,14) " +
		"(8192,1024,1,2) (8192,1024,7,14) (10000,1024,1,2) (10000,1024,5,10) (16384,128,1,2) (16384,128,3,6) (32768,128,1,1)"
	if got := pointsString(pts); got != want {
		t.Errorf("n150 plan\n got %s\nwant %s", got, want)
	}

	t3k := Limits{MaxConcurrency: 32, MaxContext: 131072, MaxTokensAllUsers: 131072}
	pts, err = Plan(t3k, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 21 {
		t.Fatalf("t3k plan has %d points, want 21: %s", len(pts), pointsString(pts))
	}
	var cs []string
	for _, p := range pts {
		if p.Concurrency > 1 {
			cs = append(cs, fmt.Sprint(p.Concurrency))
		}
	}
	if got := strings.Join(cs, ","); got != "32,32,32,32,31,15,14,11,7,3" {
		t.Errorf("t3k concurrencies %s", got)
	}
	if last := pts[len(pts)-1]; last.ISL != 65536 || last.Concurrency != 1 || last.NumPrompts != 1 {
		t.Errorf("t3k last point %+v", last)
	}
}

func TestNumPrompts(t *testing.T) {
	l := Limits{MaxConcurrency: 32, MaxContext: 1 << 20, MaxTokensAllUsers: 1 << 20}
	for _, tc := range []struct{ isl, osl, c, want int }{
		{128, 128, 1, 8}, {128, 128, 4, 32}, {128, 2048, 3, 3}, {32768, 128, 2, 2}, {16384, 128, 3, 6},
		{8192, 1024, 7, 14}, {4096, 128, 2, 8}, {128, 1024, 1, 4}, {129, 128, 1, 4}, {64, 16, 1, 8},
	} {
		if got := NumPrompts(tc.isl, tc.osl, tc.c, l); got != tc.want {
			t.Errorf("NumPrompts(%d,%d,%d) = %d, want %d", tc.isl, tc.osl, tc.c, got, tc.want)
		}
	}
	sc := Limits{MaxConcurrency: 64, MaxContext: 1 << 20, MaxTokensAllUsers: 1 << 26, SuperCluster: true}
	if got := NumPrompts(128, 128, 8, sc); got != 128 {
		t.Errorf("super cluster NumPrompts = %d, want 2*64", got)
	}
}

func TestPlanTargetsFirstCappedAndAttached(t *testing.T) {
	l := Limits{MaxConcurrency: 8, MaxContext: 4096, MaxTokensAllUsers: 4096}
	targets := []catalog.PerfTarget{
		{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 20, Tput: 20, Task: "text"},
		{ISL: 128, OSL: 128, Concurrency: 32, TTFTms: 900, TputUser: 15, Task: "text"},  // capped to 8
		{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 10, Task: "vlm", Image: "512x512"}, // image point: skipped
		{ISL: 8192, OSL: 128, Concurrency: 1, TTFTms: 10, Task: "text"},                 // over context
	}
	pts, err := Plan(l, targets, Options{Limit: limit.CICommit})
	if err != nil {
		t.Fatal(err)
	}
	want := "(128,128,1,8) (128,128,8,64) (128,1024,1,4) (128,1024,3,12) (1024,128,1,4) (1024,128,3,12)"
	if got := pointsString(pts); got != want {
		t.Fatalf("plan\n got %s\nwant %s", got, want)
	}
	if pts[0].Source != "target" || pts[0].Target == nil || pts[0].Target.TTFTms != 50 {
		t.Errorf("first point %+v", pts[0])
	}
	if pts[1].Target == nil || pts[1].Target.TTFTms != 900 {
		t.Errorf("capped target point %+v", pts[1])
	}
	if pts[2].Target != nil || pts[2].Source != "sweep" {
		t.Errorf("sweep point %+v", pts[2])
	}

	smoke, _ := Plan(l, targets, Options{Limit: limit.Smoke})
	if got := pointsString(smoke); got != "(128,128,1,8) (128,128,8,64)" {
		t.Errorf("smoke plan %s", got)
	}
	none, _ := Plan(l, nil, Options{Limit: limit.Smoke})
	if got := pointsString(none); got != "(16,4,1,8)" || none[0].Target != nil {
		t.Errorf("smoke plan without targets %s", got)
	}
	if _, err := Plan(l, nil, Options{TargetsOnly: true}); err == nil {
		t.Error("targets-only without targets accepted")
	}
	only, _ := Plan(l, targets, Options{TargetsOnly: true, MinNumPrompts: 10})
	if got := pointsString(only); got != "(128,128,1,10) (128,128,8,64)" {
		t.Errorf("targets-only plan %s", got)
	}
}

func TestPlanFromCatalog(t *testing.T) {
	spec, err := catalog.Lookup("Llama-3.1-8B-Instruct", "n150")
	if err != nil {
		t.Skipf("catalog lookup: %v", err)
	}
	pts, err := Plan(LimitsOf(spec), spec.Targets, Options{Limit: limit.Smoke})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) == 0 || pts[0].Target == nil || pts[0].ISL != 128 {
		t.Fatalf("smoke plan from catalog: %s", pointsString(pts))
	}
}

func TestParseTargets(t *testing.T) {
	in := `{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 128, "osl": 128, "max_concurrency": 1,
	  "targets": {"theoretical": {"ttft_ms": 51, "tput_user": 21, "tput": 21}}}]}}`
	got, found, err := ParseTargets(strings.NewReader(in), "t.json", "meta-llama/Llama-3.1-8B-Instruct", "N150")
	if err != nil || !found || len(got) != 1 || got[0].TTFTms != 51 || got[0].TputUser != 21 || got[0].Concurrency != 1 {
		t.Fatalf("ParseTargets = %+v, %v, %v", got, found, err)
	}
	if _, found, _ := ParseTargets(strings.NewReader(in), "t.json", "other", "n150"); found {
		t.Error("found targets for another model")
	}
	for _, bad := range []string{
		`[]`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 0, "osl": 128}]}}`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 1, "osl": 1, "bogus": 1}]}}`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 1, "osl": 1, "targets": {"theoretical": {"ttft_ms": -1}}}]}}`,
	} {
		if _, _, err := ParseTargets(strings.NewReader(bad), "t.json", "Llama-3.1-8B-Instruct", "n150"); err == nil {
			t.Errorf("accepted %s", bad)
		} else if !strings.Contains(err.Error(), "t.json") {
			t.Errorf("error %q does not name the file", err)
		}
	}
}

// ci-long plans what ci-nightly plans; only eval sizes tell them apart.
func TestCILongSweepsLikeNightly(t *testing.T) {
	n150 := Limits{MaxConcurrency: 32, MaxContext: 65536, MaxTokensAllUsers: 65536}
	nightly, err := Plan(n150, nil, Options{Limit: limit.CINightly})
	if err != nil {
		t.Fatal(err)
	}
	long, err := Plan(n150, nil, Options{Limit: limit.CILong})
	if err != nil || len(long) != len(nightly) || len(long) == 0 {
		t.Errorf("ci-long %d points (%v), ci-nightly %d", len(long), err, len(nightly))
	}
	if _, err := Plan(n150, nil, Options{Limit: "weekly"}); err == nil {
		t.Error("an unknown limit was planned")
	}
}
