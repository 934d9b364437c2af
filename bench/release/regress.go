package release

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ttis-dev/ttis/bench/runs"
	"github.com/ttis-dev/ttis/units/catalog"
)

// comparableKeys are the conditions two runs must share for their numbers
// to be compared: a different runtime, time scale (sim), device, chips or
// model file measures something else. Versions may differ: finding what a
// new version changed is the point of the comparison. A run graded with
// the dev catalog has other targets and limits than a prod one.
var comparableKeys = []string{"runtime", "simulated", "time_scale", "device", "chips", "model_sha256", "threads", "catalog"}

// Baseline finds the run to compare the current one (id current, taken
// under cond) with: the newest complete run of unit and workflow started
// before it whose comparable conditions match. skipped says why newer
// candidates were passed over.
//
// Run folders the store reports as bad (a named pipe as run.json, a file
// over its bound) are passed over too, with the reason.
func Baseline(ctx context.Context, store *runs.Store, unit, workflow, current string, cond map[string]string) (prev runs.Manifest, skipped []string, ok bool) {
	all, errs := store.List(ctx, unit)
	for _, err := range errs {
		skipped = append(skipped, err.Error())
	}
	passed := current == ""
	for _, m := range all {
		if m.ID == current {
			passed = true
			continue
		}
		if !passed || m.Workflow != workflow || m.Status != runs.StatusComplete {
			continue
		}
		var diffs []string
		for _, k := range comparableKeys {
			a, b := m.Conditions[k], cond[k]
			if k == "catalog" {
				// Runs from before the condition was recorded graded
				// with prod.
				a, b = prodIfUnset(a), prodIfUnset(b)
			}
			if a != b {
				diffs = append(diffs, fmt.Sprintf("%s %s, now %s", k, orNone(a), orNone(b)))
			}
		}
		if len(diffs) > 0 {
			skipped = append(skipped, m.ID+": "+strings.Join(diffs, "; "))
			continue
		}
		return m, skipped, true
	}
	return runs.Manifest{}, skipped, false
}

func orNone(s string) string {
	if s == "" {
		return "unrecorded"
	}
	return s
}

// Thresholds decide when a change is a regression.
type Thresholds struct {
	// LatencyPct flags TTFT or TPOT higher by more than this percentage.
	LatencyPct float64 `json:"latency_pct"`
	// LatencyFloorMs ignores latency changes smaller than this many
	// milliseconds, which are timer and scheduling noise.
	LatencyFloorMs float64 `json:"latency_floor_ms"`
	// ThroughputPct flags output throughput or tput/user lower by more
	// than this percentage.
	ThroughputPct float64 `json:"throughput_pct"`
	// EvalStderrs flags an eval score lower by more than this many
	// standard errors (the larger of the two runs').
	EvalStderrs float64 `json:"eval_stderrs"`
}

// DefaultThresholds are 10 % for latency (changes under 1 ms ignored) and
// throughput, one standard error for eval scores.
func DefaultThresholds() Thresholds {
	return Thresholds{LatencyPct: 10, LatencyFloorMs: 1, ThroughputPct: 10, EvalStderrs: 1}
}

// Regression is one metric worse than in the earlier run.
type Regression struct {
	// Kind is "benchmarks" or "evals"; Key the point (isl-…_osl-…_c-…) or
	// the task.
	Kind     string  `json:"kind"`
	Key      string  `json:"key"`
	Metric   string  `json:"metric"`
	Previous float64 `json:"previous"`
	Current  float64 `json:"current"`
	// ChangePct is (current − previous) / previous × 100.
	ChangePct float64 `json:"change_pct"`
	// Allowed explains the threshold that was crossed.
	Allowed string `json:"allowed"`
}

// Regressions is the comparison with an earlier run.
type Regressions struct {
	// Against is the earlier run's id: the newest complete run of the same
	// unit and workflow taken under the same conditions. Skipped lists the
	// newer runs that were not comparable, and why.
	Against    string       `json:"against"`
	Skipped    []string     `json:"skipped,omitempty"`
	Thresholds Thresholds   `json:"thresholds"`
	Compared   int          `json:"compared"`
	Items      []Regression `json:"items"`
}

// Compare flags the metrics of cur that are worse than in prev: per
// benchmark point (same ISL, OSL and concurrency) mean TTFT and TPOT up by
// more than LatencyPct, output throughput and tput/user down by more than
// ThroughputPct; per eval task a score down by more than EvalStderrs
// standard errors (any drop when neither run has a standard error).
// Points or tasks missing from either run are not compared.
func Compare(prevID string, prev, cur *Report, th Thresholds) *Regressions {
	out := &Regressions{Against: prevID, Thresholds: th, Items: []Regression{}}
	if prev.Benchmarks != nil && cur.Benchmarks != nil {
		old := map[string]*BenchRow{}
		for i := range prev.Benchmarks.Rows {
			old[prev.Benchmarks.Rows[i].Key()] = &prev.Benchmarks.Rows[i]
		}
		for i := range cur.Benchmarks.Rows {
			c := &cur.Benchmarks.Rows[i]
			p, ok := old[c.Key()]
			if !ok {
				continue
			}
			for _, m := range []struct {
				name     string
				p, c     *float64
				higherOK bool
			}{
				{"mean_ttft_ms", p.TTFTms, c.TTFTms, false},
				{"mean_tpot_ms", p.TPOTms, c.TPOTms, false},
				{"tps_output_throughput", p.TputOutput, c.TputOutput, true},
				{"tput_user", p.TputUser, c.TputUser, true},
			} {
				if m.p == nil || m.c == nil || *m.p <= 0 {
					continue
				}
				out.Compared++
				change := 100 * (*m.c - *m.p) / *m.p
				r := Regression{Kind: WorkflowBenchmarks, Key: c.Key(), Metric: m.name, Previous: *m.p, Current: *m.c, ChangePct: change}
				switch {
				case !m.higherOK && change > th.LatencyPct && *m.c-*m.p >= th.LatencyFloorMs:
					r.Allowed = fmt.Sprintf("+%g%%", th.LatencyPct)
				case m.name == "tput_user" && p.TPOTms != nil && c.TPOTms != nil && *c.TPOTms-*p.TPOTms < th.LatencyFloorMs:
					// tput/user is 1000/TPOT: sub-floor TPOT jitter is
					// not a regression either.
					continue
				case m.higherOK && change < -th.ThroughputPct:
					r.Allowed = fmt.Sprintf("-%g%%", th.ThroughputPct)
				default:
					continue
				}
				out.Items = append(out.Items, r)
			}
		}
	}
	if prev.Evals != nil && cur.Evals != nil {
		old := map[string]*EvalRow{}
		for i := range prev.Evals.Rows {
			old[prev.Evals.Rows[i].Task] = &prev.Evals.Rows[i]
		}
		for i := range cur.Evals.Rows {
			c := &cur.Evals.Rows[i]
			p, ok := old[c.Task]
			if !ok || p.Score == nil || c.Score == nil {
				continue
			}
			out.Compared++
			se := 0.0
			for _, s := range []*float64{p.ScoreStderr, c.ScoreStderr} {
				if s != nil && !math.IsNaN(*s) {
					se = max(se, *s)
				}
			}
			drop := *p.Score - *c.Score
			if drop <= th.EvalStderrs*se || drop <= 0 {
				continue
			}
			change := 0.0
			if *p.Score != 0 {
				change = -100 * drop / *p.Score
			}
			out.Items = append(out.Items, Regression{Kind: WorkflowEvals, Key: c.Task, Metric: "score", Previous: *p.Score, Current: *c.Score,
				ChangePct: change, Allowed: fmt.Sprintf("-%g stderr (%.2f)", th.EvalStderrs, th.EvalStderrs*se)})
		}
	}
	return out
}

func prodIfUnset(mode string) string {
	if mode == "" {
		return catalog.ModeProd
	}
	return mode
}
