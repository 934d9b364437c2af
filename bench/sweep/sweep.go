// Package sweep plans the benchmark points for a (model, device) from the
// catalog, following tt-inference-server's build_benchmark_config: the
// reference target points first, then ISL/OSL pairs that fit the context,
// each at concurrency 1 and at the largest concurrency the token budget
// allows, with a prompt count that shrinks as sequences grow.
//
// What each run size (units/limit) plans: smoke only the device's
// reference target points (or one tiny ISL 16 / OSL 4 point when there are
// none), like upstream's smoke-test mode; ci-commit the target points plus
// the short pairs (ISL and OSL at most 1024), minutes, fit for every
// commit; ci-nightly, ci-long and full the target points plus the whole
// sweep, as upstream's CI mode does.
package sweep

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ttis-dev/ttis/units/catalog"
	"github.com/ttis-dev/ttis/units/limit"
)

// Pair is an input/output sequence length pair.
type Pair struct{ ISL, OSL int }

// Pairs are the sweep's ISL/OSL pairs, shortest first.
var Pairs = []Pair{
	{128, 128}, {128, 1024}, {1024, 128}, {2048, 128}, {4096, 128}, {8192, 128},
	{8192, 1024}, {10000, 1024}, {16384, 128}, {32768, 128}, {65536, 128}, {131072, 128},
}

// superClusterPairs are added on remote super-cluster endpoints.
var superClusterPairs = []Pair{{128, 255872}, {196608, 128}, {255872, 128}}

// Point is one planned benchmark run.
type Point struct {
	ISL, OSL    int
	Concurrency int
	NumPrompts  int
	// Target is the theoretical target of this (ISL, OSL, concurrency) from
	// the reference, if any.
	Target *catalog.PerfTarget `json:"target,omitempty"`
	// Source is "target" for a reference point, "sweep" otherwise,
	// "smoke" for the fallback smoke point.
	Source string
}

// Key identifies a point for de-duplication.
func (p Point) Key() [4]int { return [4]int{p.ISL, p.OSL, p.Concurrency, p.NumPrompts} }

// Limits are the capacity figures the plan needs.
type Limits struct {
	MaxConcurrency    int
	MaxContext        int
	MaxTokensAllUsers int
	// SuperCluster adds the very long pairs and its prompt-count rule.
	SuperCluster bool
}

// LimitsOf reads the capacity figures of a catalog spec.
func LimitsOf(s *catalog.Spec) Limits {
	l := Limits{MaxConcurrency: s.MaxConcurrency, MaxContext: s.MaxContext, MaxTokensAllUsers: s.MaxTokensAllUsers}
	if l.MaxTokensAllUsers <= 0 {
		l.MaxTokensAllUsers = l.MaxContext
	}
	l.SuperCluster = strings.EqualFold(s.Device, "super_cluster") || strings.EqualFold(s.Device, "super-cluster")
	return l
}

// NumPrompts is the prompt-count rule: 1×c when osl > 1024 or isl > 16384,
// 2×c when isl > 4096, 4×c when 128 < osl ≤ 1024 or 128 < isl ≤ 4096, and
// 8×c otherwise (osl ≤ 128 and isl ≤ 128). A super cluster runs
// 2×max_concurrency for c > 1.
func NumPrompts(isl, osl, c int, l Limits) int {
	if l.SuperCluster && c > 1 {
		return 2 * l.MaxConcurrency
	}
	switch {
	case osl > 1024 || isl > 16384:
		return c
	case isl > 4096:
		return 2 * c
	case (osl > 128 && osl <= 1024) || (isl > 128 && isl <= 4096):
		return 4 * c
	default:
		return 8 * c
	}
}

// MaxConcurrencyFor is C = min(max_tokens_all_users / (isl+osl),
// max_concurrency), at least 1; a request longer than the context gives 1.
func MaxConcurrencyFor(isl, osl int, l Limits) int {
	if isl+osl > l.MaxContext || l.MaxConcurrency < 1 {
		return 1
	}
	return max(min(l.MaxTokensAllUsers/(isl+osl), l.MaxConcurrency), 1)
}

// Options shape a plan.
type Options struct {
	// Limit is the run size (default full).
	Limit limit.Mode
	// TargetsOnly skips the sweep and keeps the reference points (upstream's
	// ONLY_BENCHMARK_TARGETS).
	TargetsOnly bool
	// MinNumPrompts floors every point's prompt count (0: no floor).
	MinNumPrompts int
}

// Plan builds the points: the text reference targets (with the prompt
// count the reference gives, as run.py runs them; a concurrency capped at
// the spec's maximum recomputes it by the rule), then the sweep without the
// shapes the targets already cover, each carrying the target of its (ISL,
// OSL, concurrency) when the reference has one.
func Plan(l Limits, targets []catalog.PerfTarget, o Options) ([]Point, error) {
	if o.Limit == "" {
		o.Limit = limit.DefaultPlan
	}
	if _, err := limit.Parse(string(o.Limit)); err != nil {
		return nil, err
	}
	if l.MaxContext < 1 {
		return nil, fmt.Errorf("sweep: max context %d must be positive", l.MaxContext)
	}
	var pts []Point
	seen := map[[4]int]bool{}
	add := func(p Point) {
		if o.MinNumPrompts > 0 {
			p.NumPrompts = max(p.NumPrompts, o.MinNumPrompts)
		}
		if seen[p.Key()] {
			return
		}
		seen[p.Key()] = true
		if p.Target == nil {
			p.Target = FindTarget(targets, p.ISL, p.OSL, p.Concurrency)
		}
		pts = append(pts, p)
	}
	// A sweep shape the reference already measures is not run twice,
	// whatever its prompt count (seed 003's benchmark_config skips sweep
	// pairs found among the reference's (isl, osl, concurrency)).
	shapes := map[[3]int]bool{}
	for i := range targets {
		t := targets[i]
		if !isTextTarget(t) || t.ISL+t.OSL > l.MaxContext {
			continue
		}
		c := max(t.Concurrency, 1)
		n := t.NumPrompts
		if l.MaxConcurrency > 0 && c > l.MaxConcurrency {
			c = l.MaxConcurrency
			n = 0 // capped: the count follows the concurrency run
		}
		if n < 1 {
			n = NumPrompts(t.ISL, t.OSL, c, l)
		}
		tc := t
		shapes[[3]int{t.ISL, t.OSL, c}] = true
		add(Point{ISL: t.ISL, OSL: t.OSL, Concurrency: c, NumPrompts: n, Target: &tc, Source: "target"})
	}
	if o.Limit == limit.Smoke {
		if len(pts) == 0 {
			add(Point{ISL: 16, OSL: 4, Concurrency: 1, NumPrompts: 8, Source: "smoke"})
		}
		return pts, nil
	}
	if o.TargetsOnly {
		if len(pts) == 0 {
			return nil, fmt.Errorf("sweep: targets-only mode, but there are no text targets for this model and device")
		}
		return pts, nil
	}
	pairs := Pairs
	if l.SuperCluster {
		pairs = append(append([]Pair{}, Pairs...), superClusterPairs...)
	}
	for _, pr := range pairs {
		if pr.ISL+pr.OSL > l.MaxContext {
			continue
		}
		if o.Limit == limit.CICommit && (pr.ISL > 1024 || pr.OSL > 1024) {
			continue
		}
		for _, c := range concurrencies(pr, l) {
			if shapes[[3]int{pr.ISL, pr.OSL, c}] {
				continue
			}
			add(Point{ISL: pr.ISL, OSL: pr.OSL, Concurrency: c, NumPrompts: NumPrompts(pr.ISL, pr.OSL, c, l), Source: "sweep"})
		}
	}
	return pts, nil
}

// concurrencies is [1, C], with C only when above 1.
func concurrencies(pr Pair, l Limits) []int {
	c := MaxConcurrencyFor(pr.ISL, pr.OSL, l)
	if c > 1 {
		return []int{1, c}
	}
	return []int{1}
}

func isTextTarget(t catalog.PerfTarget) bool {
	return (t.Task == "" || t.Task == "text" || t.Task == "vlm") && t.Image == "" && t.ISL > 0 && t.OSL > 0
}

// FindTarget returns the text target of (isl, osl, c), nil when there is none.
func FindTarget(targets []catalog.PerfTarget, isl, osl, c int) *catalog.PerfTarget {
	for i := range targets {
		t := targets[i]
		if isTextTarget(t) && t.ISL == isl && t.OSL == osl && max(t.Concurrency, 1) == c {
			return &t
		}
	}
	return nil
}

// WriteTable prints the planned points as an aligned table.
func WriteTable(w io.Writer, pts []Point) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tISL\tOSL\tCONCURRENCY\tPROMPTS\tSOURCE\tTARGET (TTFT ms / TPUT USER / TPUT)")
	for i, p := range pts {
		tgt := "-"
		if p.Target != nil {
			tgt = fmt.Sprintf("%s / %s / %s", num(p.Target.TTFTms), num(p.Target.TputUser), num(p.Target.Tput))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t%s\n", i+1, p.ISL, p.OSL, p.Concurrency, p.NumPrompts, p.Source, tgt)
	}
	return tw.Flush()
}

func num(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%g", v)
}
