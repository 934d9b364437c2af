package grade

import (
	"math"
	"testing"

	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

func TestGrade(t *testing.T) {
	target := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 20, Tput: 20}
	noTput := &catalog.PerfTarget{ISL: 128, OSL: 128, Concurrency: 1, TTFTms: 50, TputUser: 20}
	f := Factors(nil)
	all := catalog.RequiredTiers(catalog.StatusTopPerf)
	complete := catalog.RequiredTiers(catalog.StatusComplete)
	tests := []struct {
		name        string
		in          Input
		status      string
		targetCheck verdict.Verdict
		tiers       []verdict.Verdict // functional, complete, target
		blockers    int
		waived      int
	}{
		{"meets target", Input{Target: target, Factors: f, Required: all, Measured: Measured{TTFTms: 40, TputUser: 25, Tput: 25}, Completed: 8},
			StatusPass, verdict.Pass, []verdict.Verdict{verdict.Pass, verdict.Pass, verdict.Pass}, 0, 0},
		{"complete tier only", Input{Target: target, Factors: f, Required: all, Measured: Measured{TTFTms: 80, TputUser: 15, Tput: 15}, Completed: 8},
			StatusPass, verdict.Fail, []verdict.Verdict{verdict.Pass, verdict.Pass, verdict.Fail}, 0, 0},
		{"equal to threshold fails (tolerance 0)", Input{Target: target, Factors: f, Required: all, Measured: Measured{TTFTms: 500, TputUser: 2, Tput: 2}, Completed: 8},
			StatusFail, verdict.Fail, []verdict.Verdict{verdict.Fail, verdict.Fail, verdict.Fail}, 9, 0},
		{"enforced failures block, others waived", Input{Target: target, Factors: f, Required: complete, Measured: Measured{TTFTms: 600, TputUser: 1, Tput: 30}, Completed: 8},
			StatusFail, verdict.Fail, []verdict.Verdict{verdict.Fail, verdict.Fail, verdict.Fail}, 4, 2},
		{"experimental: all waived", Input{Target: target, Factors: f, Required: nil, Measured: Measured{TTFTms: 600, TputUser: 1, Tput: 1}, Completed: 8},
			StatusWaived, verdict.Fail, []verdict.Verdict{verdict.Fail, verdict.Fail, verdict.Fail}, 0, 9},
		{"missing target and measurement are NA", Input{Target: noTput, Factors: f, Required: all, Measured: Measured{TTFTms: 40, TputUser: Missing, Tput: 99}, Completed: 8},
			StatusPass, verdict.Pass, []verdict.Verdict{verdict.Pass, verdict.Pass, verdict.Pass}, 0, 0},
		{"nothing measurable", Input{Target: noTput, Factors: f, Required: all, Measured: Measured{TTFTms: Missing, TputUser: Missing, Tput: Missing}, Completed: 8},
			StatusNA, verdict.NA, []verdict.Verdict{verdict.NA, verdict.NA, verdict.NA}, 0, 0},
		{"no target", Input{Factors: f, Required: all, Measured: Measured{TTFTms: 1}, Completed: 8},
			StatusNA, verdict.NA, nil, 0, 0},
		{"failed requests", Input{Target: target, Factors: f, Required: all, Measured: Measured{TTFTms: 40, TputUser: 25, Tput: 25}, Completed: 6, Failed: 2},
			StatusError, verdict.Pass, []verdict.Verdict{verdict.Pass, verdict.Pass, verdict.Pass}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Grade(tc.in)
			if p.Status != tc.status || p.TargetCheck != tc.targetCheck || len(p.Blockers) != tc.blockers || len(p.Waived) != tc.waived {
				t.Errorf("got status %s target %s blockers %q waived %q", p.Status, p.TargetCheck, p.Blockers, p.Waived)
			}
			if len(p.Tiers) != len(tc.tiers) {
				t.Fatalf("tiers %+v", p.Tiers)
			}
			for i, v := range tc.tiers {
				if p.Tiers[i].Verdict != v {
					t.Errorf("tier %s verdict %s, want %s", p.Tiers[i].Name, p.Tiers[i].Verdict, v)
				}
			}
		})
	}
}

func TestGradeThresholdsAndRatios(t *testing.T) {
	target := &catalog.PerfTarget{TTFTms: 50, TputUser: 20, Tput: 40}
	p := Grade(Input{Target: target, Factors: Factors(nil), Measured: Measured{TTFTms: 100, TputUser: 10, Tput: 10}, Completed: 1})
	fn := p.Tiers[0] // functional: ttft <= 500, tput_user >= 2, tput >= 4
	if fn.Name != catalog.TierFunctional || fn.Checks[0].Threshold != 500 || math.Abs(fn.Checks[1].Threshold-2) > 1e-9 || math.Abs(fn.Checks[2].Threshold-4) > 1e-9 {
		t.Errorf("functional thresholds %+v", fn.Checks)
	}
	if math.Abs(fn.Checks[0].Ratio-0.2) > 1e-9 || math.Abs(fn.Checks[1].Ratio-5) > 1e-9 {
		t.Errorf("functional ratios %+v", fn.Checks)
	}
	custom := Factors(map[string]float64{"functional": 0.2, "target": 1})
	if len(custom) != 2 || custom[0].Factor != 0.2 || custom[1].Name != "target" {
		t.Errorf("custom factors %+v", custom)
	}
}

// TestEverySpecGradedOnItsOwnDevicesTargets grades, for every catalog spec
// with text targets, a point measured just inside the target tier of each
// target and one measured 20 % slower: the thresholds are the ones of the
// table catalog.Spec.TargetsDevice names (the spec's own device wherever
// the reference has a table for it), so the Galaxy Llama-3.3-70B's 2048/128
// point is held to the galaxy's 800 ms, not to anything of the t3k's.
func TestEverySpecGradedOnItsOwnDevicesTargets(t *testing.T) {
	graded := 0
	for _, s := range catalog.Specs() {
		if s.TargetsDevice == "" {
			continue
		}
		if s.TargetsDevice != s.Device && s.TargetsDevice != s.SubDevice {
			t.Errorf("%s %s graded on %s", s.ModelName, s.Device, s.TargetsDevice)
		}
		f := Factors(s.PerfTargetsMap)
		for i := range s.Targets {
			tg := &s.Targets[i]
			if tg.TTFTms <= 0 || (tg.Task != "text" && tg.Task != "vlm") {
				continue
			}
			good := Measured{TTFTms: tg.TTFTms * 0.99, TputUser: tg.TputUser * 1.01, Tput: tg.Tput * 1.01}
			p := Grade(Input{Target: tg, Factors: f, Required: catalog.RequiredTiers(s.Status), Measured: good, Completed: 8})
			if p.TargetCheck != verdict.Pass {
				t.Errorf("%s %s %d/%d: on target, graded %s", s.ModelName, s.Device, tg.ISL, tg.OSL, p.TargetCheck)
			}
			slow := good
			slow.TTFTms = tg.TTFTms * 1.2
			p = Grade(Input{Target: tg, Factors: f, Required: catalog.RequiredTiers(s.Status), Measured: slow, Completed: 8})
			if p.TargetCheck != verdict.Fail || p.Tiers[len(p.Tiers)-1].Checks[0].Threshold != tg.TTFTms {
				t.Errorf("%s %s %d/%d: 20%% slow, target tier %s with threshold %v, want FAIL at %v", s.ModelName, s.Device, tg.ISL, tg.OSL,
					p.TargetCheck, p.Tiers[len(p.Tiers)-1].Checks[0].Threshold, tg.TTFTms)
			}
			graded++
		}
	}
	if graded < 100 {
		t.Errorf("graded %d targets", graded)
	}
	s, err := catalog.Lookup("Llama-3.3-70B-Instruct", "galaxy")
	if err != nil {
		t.Fatal(err)
	}
	var tg *catalog.PerfTarget
	for i := range s.Targets {
		if s.Targets[i].ISL == 2048 && s.Targets[i].OSL == 128 {
			tg = &s.Targets[i]
		}
	}
	if tg == nil {
		t.Fatalf("galaxy Llama-3.3-70B has no 2048/128 target: %+v", s.Targets)
	}
	p := Grade(Input{Target: tg, Factors: Factors(s.PerfTargetsMap), Required: catalog.RequiredTiers(s.Status),
		Measured: Measured{TTFTms: 700, TputUser: 85, Tput: Missing}, Completed: 8})
	if p.TargetCheck != verdict.Pass || p.Status != StatusPass {
		t.Errorf("galaxy 2048/128 at 700 ms and 85 tok/s/user: %s (%s)", p.TargetCheck, p.Status)
	}
}
