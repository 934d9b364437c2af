package sweep

import (
	"bytes"
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
	got, key, found, err := ParseTargets(strings.NewReader(in), "t.json", []string{"meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct"}, "N150")
	if err != nil || !found || key != "Llama-3.1-8B-Instruct" || len(got) != 1 || got[0].TTFTms != 51 || got[0].TputUser != 21 || got[0].Concurrency != 1 {
		t.Fatalf("ParseTargets = %+v, %q, %v, %v", got, key, found, err)
	}
	if _, _, found, _ := ParseTargets(strings.NewReader(in), "t.json", []string{"other"}, "n150"); found {
		t.Error("found targets for another model")
	}
	for _, bad := range []string{
		`[]`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 0, "osl": 128}]}}`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 1, "osl": 1, "bogus": 1}]}}`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 1, "osl": 1, "num_prompts": -3}]}}`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 1, "osl": 1, "targets": {"theoretical": {"ttft_ms": -1}}}]}}`,
		`{"Llama-3.1-8B-Instruct": {"n150": [{"isl": 1, "osl": 1, "targets": {"theoretical": {"tput_usr": 1}}}]}}`,
	} {
		if _, _, _, err := ParseTargets(strings.NewReader(bad), "t.json", []string{"Llama-3.1-8B-Instruct"}, "n150"); err == nil {
			t.Errorf("accepted %s", bad)
		} else if !strings.Contains(err.Error(), "t.json") {
			t.Errorf("error %q does not name the file", err)
		}
	}
}

// Seed 003's override file: keyed by the template's base weight
// (Llama-3.3-70B), its num_prompts kept as given (3 stays 3, where the rule
// would run 4), media and image fields of a copied reference file read.
func TestParseTargetsSeedOverride(t *testing.T) {
	in := `{"Llama-3.3-70B": {"galaxy": [
	  {"isl": 128, "osl": 128, "max_concurrency": 1, "num_prompts": 8, "targets": {"theoretical": {"ttft_ms": 50, "tput_user": 80}}},
	  {"isl": 2048, "osl": 128, "max_concurrency": 1, "num_prompts": 3, "targets": {"theoretical": {"ttft_ms": 800, "tput_user": 80}}},
	  {"isl": 128, "osl": 128, "max_concurrency": 1, "num_prompts": 8, "task_type": "vlm", "image_height": 512, "image_width": 1024,
	   "images_per_prompt": 1, "targets": {"theoretical": {"ttft_ms": 90}}}]},
	 "stable-diffusion-xl-base-1.0": {"galaxy": [{"max_concurrency": 1, "task_type": "image", "num_inference_steps": 20,
	   "num_eval_runs": 2, "targets": {"theoretical": {"ttft_ms": 1000, "tput_user": 1, "tolerance": 0.05}}}]}}`
	spec, err := catalog.Lookup("Llama-3.3-70B-Instruct", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	got, key, found, err := ParseTargets(strings.NewReader(in), "override.json", catalog.TargetKeys("Llama-3.3-70B-Instruct", spec), "galaxy")
	if err != nil || !found || key != "Llama-3.3-70B" || len(got) != 3 {
		t.Fatalf("ParseTargets = %+v, %q, %v, %v", got, key, found, err)
	}
	if got[1].NumPrompts != 3 || got[2].Image != "1024x512" || got[2].Task != "vlm" {
		t.Errorf("points %+v", got)
	}
	pts, err := Plan(LimitsOf(spec), got, Options{Limit: limit.Smoke})
	if err != nil {
		t.Fatal(err)
	}
	if s := pointsString(pts); s != "(128,128,1,8) (2048,128,1,3)" {
		t.Errorf("smoke plan from the override %s, want its num_prompts kept", s)
	}
	media, _, found, err := ParseTargets(strings.NewReader(in), "override.json", []string{"stable-diffusion-xl-base-1.0"}, "galaxy")
	if err != nil || !found || media[0].Steps != 20 || media[0].Tolerance != 0.05 || media[0].Task != "image" {
		t.Errorf("media entry %+v, %v", media, err)
	}
}

// TestPlanGradesEveryCatalogSpecOnItsOwnTargets plans the smoke sweep of
// every catalog spec (prod and dev) and checks that its graded points are
// exactly the text points of the table its targets come from
// (catalog.Spec.TargetsDevice), with the reference's prompt counts: a
// Galaxy Llama-3.3-70B runs and grades the galaxy 2048/128 point.
func TestPlanGradesEveryCatalogSpecOnItsOwnTargets(t *testing.T) {
	n := 0
	for _, mode := range []string{catalog.ModeProd, catalog.ModeDev} {
		specs, err := catalog.SpecsIn(mode)
		if err != nil {
			t.Fatal(err)
		}
		for i := range specs {
			s := &specs[i]
			if s.IsMedia() || s.MaxContext < 1 {
				continue
			}
			l := LimitsOf(s)
			pts, err := Plan(l, s.Targets, Options{Limit: limit.Smoke})
			if err != nil {
				t.Errorf("%s %s: %v", s.ModelName, s.Device, err)
				continue
			}
			var want []string
			for _, tg := range s.Targets {
				if !isTextTarget(tg) || tg.ISL+tg.OSL > l.MaxContext {
					continue
				}
				c, np := max(tg.Concurrency, 1), tg.NumPrompts
				if c > l.MaxConcurrency {
					c, np = l.MaxConcurrency, NumPrompts(tg.ISL, tg.OSL, l.MaxConcurrency, l)
				}
				want = append(want, fmt.Sprintf("(%d,%d,%d,%d)", tg.ISL, tg.OSL, c, np))
			}
			var got []string
			for _, p := range pts {
				if p.Target != nil {
					got = append(got, fmt.Sprintf("(%d,%d,%d,%d)", p.ISL, p.OSL, p.Concurrency, p.NumPrompts))
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s %s %s (targets of %s): graded points %v, want %v", mode, s.ModelName, s.Device, s.TargetsDevice, got, want)
			}
			n++
		}
	}
	if n < 150 {
		t.Errorf("checked %d text specs", n)
	}
	spec, err := catalog.Lookup("Llama-3.3-70B-Instruct", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	pts, _ := Plan(LimitsOf(spec), spec.Targets, Options{Limit: limit.CINightly})
	twice := map[[3]int]int{}
	for _, p := range pts {
		twice[[3]int{p.ISL, p.OSL, p.Concurrency}]++
		if p.ISL == 2048 && p.OSL == 128 && p.Concurrency == 1 && (p.Target == nil || p.Target.TTFTms != 800 || p.NumPrompts != 8) {
			t.Errorf("galaxy 2048/128 point %+v, want the galaxy target (800 ms) with 8 prompts", p)
		}
	}
	for k, v := range twice {
		if v > 1 {
			t.Errorf("shape %v planned %d times", k, v)
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

func FuzzParseTargets(f *testing.F) {
	f.Add([]byte(`{"M": {"n150": [{"isl": 128, "osl": 128, "max_concurrency": 1, "num_prompts": 3, "targets": {"theoretical": {"ttft_ms": 50}}}]}}`))
	f.Add([]byte(`{"M": {"n150": [{"task_type": "image", "num_inference_steps": 20, "targets": {"theoretical": {"tolerance": 0.05}}}]}}`))
	f.Add([]byte(`{"M": {"n150": [{"isl": -1}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, key, found, err := ParseTargets(bytes.NewReader(b), "f.json", []string{"M", "m"}, "N150")
		if err != nil {
			if found || ts != nil || !strings.Contains(err.Error(), "f.json") {
				t.Fatalf("error %v with found=%v targets=%v", err, found, ts)
			}
			return
		}
		if found && !strings.EqualFold(key, "m") {
			t.Fatalf("read key %q", key)
		}
		for _, tg := range ts {
			if tg.Concurrency < 1 || tg.NumPrompts < 0 || tg.TTFTms < 0 || tg.TputUser < 0 || tg.Tput < 0 {
				t.Fatalf("accepted %+v", tg)
			}
			if (tg.Task == "text" || tg.Task == "vlm") && (tg.ISL < 1 || tg.OSL < 1) {
				t.Fatalf("accepted a text point without lengths %+v", tg)
			}
		}
	})
}
