// Package grade checks measured benchmark points against the theoretical
// performance targets in tiers (functional, complete, target), the way
// tt-inference-server does: a latency passes when actual/threshold < 1+tol,
// a throughput when actual/threshold > 1-tol; a point is accepted when any
// one tier passes all its checks; otherwise the failures in the tiers the
// model's status enforces are blockers and the rest are waived. A missing
// target or measurement is NA, never a pass.
package grade

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/verdict"
)

// Point statuses.
const (
	// StatusPass: some tier passed all its checks.
	StatusPass = "pass"
	// StatusFail: an enforced tier failed.
	StatusFail = "fail"
	// StatusWaived: checks failed, but only in tiers the model's status does
	// not enforce.
	StatusWaived = "waived"
	// StatusNA: the point has no target (ungraded).
	StatusNA = "na"
	// StatusError: requests failed, so the point's measurement is
	// incomplete.
	StatusError = "error"
)

// Measured holds the graded measurements; NaN means not measured.
type Measured struct {
	TTFTms   float64 `json:"ttft_ms"`
	TputUser float64 `json:"tput_user"`
	Tput     float64 `json:"tput"`
	// TputUserSource says how TputUser was obtained ("1000/mean_tpot_ms").
	TputUserSource string `json:"tput_user_source,omitempty"`
}

// Missing is the value of a measurement that was not taken.
var Missing = math.NaN()

// Check is one metric's comparison in one tier.
type Check struct {
	// Metric is "ttft", "tput_user" or "tput".
	Metric string `json:"metric"`
	// Threshold is the tier's target (0 when not given).
	Threshold float64 `json:"threshold"`
	Measured  float64 `json:"measured"`
	// Ratio is Measured/Threshold (0 when NA).
	Ratio   float64         `json:"ratio"`
	Verdict verdict.Verdict `json:"verdict"`
}

// Tier is one tier's checks.
type Tier struct {
	Name     string  `json:"tier"`
	Factor   float64 `json:"factor"`
	Enforced bool    `json:"enforced"`
	Checks   []Check `json:"checks"`
	// Verdict is PASS when no check failed and at least one passed, FAIL
	// when any failed, NA when every check is NA.
	Verdict verdict.Verdict `json:"verdict"`
}

// Point is a graded benchmark point.
type Point struct {
	Tiers []Tier `json:"tiers,omitempty"`
	// TargetCheck is the verdict of the strictest tier.
	TargetCheck verdict.Verdict `json:"target_check"`
	Status      string          `json:"status"`
	// Blockers explain a fail or error; Waived lists failures in
	// non-enforced tiers.
	Blockers []string `json:"blockers,omitempty"`
	Waived   []string `json:"waived,omitempty"`
}

// TierFactor is one tier's fraction of the theoretical target.
type TierFactor struct {
	Name   string
	Factor float64
}

// Factors returns the spec's tier factors, loosest first (the catalog's
// defaults when the spec sets none).
func Factors(perfTargetsMap map[string]float64) []TierFactor {
	m := perfTargetsMap
	if len(m) == 0 {
		m = catalog.DefaultPerfTargetsMap()
	}
	var out []TierFactor
	for _, name := range catalog.TierNames() {
		if f, ok := m[name]; ok && f > 0 {
			out = append(out, TierFactor{Name: name, Factor: f})
		}
	}
	return out
}

// Input is everything needed to grade one point.
type Input struct {
	// Target is the theoretical target (nil: ungraded).
	Target  *catalog.PerfTarget
	Factors []TierFactor
	// Required are the tiers the model's status enforces
	// (catalog.RequiredTiers).
	Required []string
	Measured Measured
	// Completed and Failed are the point's request counts.
	Completed, Failed int
}

// Grade grades one point.
func Grade(in Input) Point {
	var p Point
	if in.Failed > 0 || in.Completed == 0 {
		p.Status = StatusError
		p.Blockers = append(p.Blockers, fmt.Sprintf("%d of %d requests failed", in.Failed, in.Failed+in.Completed))
	}
	if in.Target == nil || len(in.Factors) == 0 {
		p.TargetCheck = verdict.NA
		if p.Status == "" {
			p.Status = StatusNA
		}
		return p
	}
	tol := in.Target.Tolerance
	anyTierPass := false
	for _, f := range in.Factors {
		t := Tier{Name: f.Name, Factor: f.Factor, Enforced: slices.Contains(in.Required, f.Name)}
		t.Checks = []Check{
			lowerIsBetter("ttft", scaleDown(in.Target.TTFTms, f.Factor), in.Measured.TTFTms, tol),
			higherIsBetter("tput_user", in.Target.TputUser*f.Factor, in.Measured.TputUser, tol),
			higherIsBetter("tput", in.Target.Tput*f.Factor, in.Measured.Tput, tol),
		}
		t.Verdict = tierVerdict(t.Checks)
		if t.Verdict == verdict.Pass {
			anyTierPass = true
		}
		p.Tiers = append(p.Tiers, t)
	}
	p.TargetCheck = p.Tiers[len(p.Tiers)-1].Verdict
	if p.Status == StatusError {
		return p
	}
	if anyTierPass {
		p.Status = StatusPass
		return p
	}
	allNA := true
	for _, t := range p.Tiers {
		for _, c := range t.Checks {
			if c.Verdict != verdict.Fail {
				if c.Verdict == verdict.Pass {
					allNA = false
				}
				continue
			}
			allNA = false
			msg := fmt.Sprintf("%s %s: measured %.2f vs threshold %.2f (ratio %.3f)", t.Name, c.Metric, c.Measured, c.Threshold, c.Ratio)
			if t.Enforced {
				p.Blockers = append(p.Blockers, msg)
			} else {
				p.Waived = append(p.Waived, msg)
			}
		}
	}
	switch {
	case allNA:
		p.Status = StatusNA
	case len(p.Blockers) > 0:
		p.Status = StatusFail
	default:
		p.Status = StatusWaived
	}
	return p
}

func scaleDown(v, f float64) float64 {
	if v == 0 {
		return 0
	}
	return v / f
}

func missing(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func lowerIsBetter(metric string, threshold, measured, tol float64) Check {
	c := Check{Metric: metric, Threshold: threshold, Measured: measured, Verdict: verdict.NA}
	if threshold <= 0 || missing(measured) {
		if missing(measured) {
			c.Measured = 0
		}
		return c
	}
	c.Ratio = measured / threshold
	c.Verdict = verdict.Fail
	if c.Ratio < 1+tol {
		c.Verdict = verdict.Pass
	}
	return c
}

func higherIsBetter(metric string, threshold, measured, tol float64) Check {
	c := Check{Metric: metric, Threshold: threshold, Measured: measured, Verdict: verdict.NA}
	if threshold <= 0 || missing(measured) {
		if missing(measured) {
			c.Measured = 0
		}
		return c
	}
	c.Ratio = measured / threshold
	c.Verdict = verdict.Fail
	if c.Ratio > 1-tol {
		c.Verdict = verdict.Pass
	}
	return c
}

func tierVerdict(checks []Check) verdict.Verdict {
	v := verdict.NA
	for _, c := range checks {
		switch c.Verdict {
		case verdict.Fail:
			return verdict.Fail
		case verdict.Pass:
			v = verdict.Pass
		}
	}
	return v
}

// Words is the point's grade in words, naming the tier that decided it, so
// that a report row has one verdict and no two cells disagree. notRun is
// set for a point that could not run at all.
func (p *Point) Words(notRun bool) string {
	switch p.Status {
	case StatusError:
		if notRun {
			return "NOT MEASURED"
		}
		if len(p.Blockers) > 0 {
			return "INCOMPLETE: " + p.Blockers[0]
		}
		return "INCOMPLETE: requests failed"
	case StatusNA:
		return "NA: no target"
	case StatusPass:
		best := ""
		for _, t := range p.Tiers {
			if t.Verdict == verdict.Pass {
				best = t.Name
			}
		}
		return "PASS: " + best + " tier met"
	case StatusFail:
		var enforced []string
		for _, t := range p.Tiers {
			if t.Enforced && t.Verdict == verdict.Fail {
				enforced = append(enforced, t.Name)
			}
		}
		return "FAIL: enforced " + strings.Join(enforced, ", ") + " tier missed"
	case StatusWaived:
		return "waived: only unenforced tiers missed"
	}
	return p.Status
}
