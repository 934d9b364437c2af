package catalog

// Model statuses, from least to most proven.
const (
	StatusExperimental = "EXPERIMENTAL"
	StatusFunctional   = "FUNCTIONAL"
	StatusComplete     = "COMPLETE"
	StatusTopPerf      = "TOP_PERF"
)

// Performance tiers, from loosest to strictest.
const (
	TierFunctional = "functional"
	TierComplete   = "complete"
	TierTarget     = "target"
)

// TierNames lists the tiers from loosest to strictest.
func TierNames() []string { return []string{TierFunctional, TierComplete, TierTarget} }

// RequiredTiers returns the tiers a spec of this status must pass:
// EXPERIMENTAL none, FUNCTIONAL functional, COMPLETE functional and complete,
// TOP_PERF all three. An unknown status requires none.
func RequiredTiers(status string) []string {
	switch status {
	case StatusFunctional:
		return []string{TierFunctional}
	case StatusComplete:
		return []string{TierFunctional, TierComplete}
	case StatusTopPerf:
		return []string{TierFunctional, TierComplete, TierTarget}
	default:
		return nil
	}
}

// StatusName is the status in words alone, for reports read where emoji
// render as empty boxes.
func StatusName(status string) string {
	switch status {
	case StatusExperimental:
		return "Experimental"
	case StatusFunctional:
		return "Functional"
	case StatusComplete:
		return "Complete"
	case StatusTopPerf:
		return "Top Performance"
	}
	return status
}

// StatusDisplay is the status as the upstream reports show it.
func StatusDisplay(status string) string {
	switch status {
	case StatusExperimental:
		return "🛠️ Experimental"
	case StatusFunctional:
		return "🟡 Functional"
	case StatusComplete:
		return "🟢 Complete"
	case StatusTopPerf:
		return "🚀 Top Performance"
	default:
		return status
	}
}

// TierTargets are a spec's targets scaled for one tier.
type TierTargets struct {
	// Tier is functional, complete or target.
	Tier string `json:"tier"`
	// Factor is the fraction of the theoretical target this tier needs.
	Factor float64 `json:"factor"`
	// Targets are the scaled targets: TTFTms/Factor (a latency ceiling),
	// TputUser×Factor and Tput×Factor (throughput floors). Zero stays zero
	// (not given).
	Targets []PerfTarget `json:"targets"`
}

// Tiers derives the functional, complete and target tiers of spec from its
// theoretical targets and its perf_targets_map (default functional 0.10,
// complete 0.50, target 1.0). The result is ordered loosest first and is
// empty when the spec has no targets.
func Tiers(spec *Spec) []TierTargets {
	if len(spec.Targets) == 0 {
		return nil
	}
	factors := spec.PerfTargetsMap
	if len(factors) == 0 {
		factors = DefaultPerfTargetsMap()
	}
	var out []TierTargets
	for _, name := range TierNames() {
		f, ok := factors[name]
		if !ok || f <= 0 {
			continue
		}
		tt := TierTargets{Tier: name, Factor: f}
		for _, t := range spec.Targets {
			t.TTFTms /= f
			t.TTFTStreamingMs /= f
			t.E2ELms /= f
			t.EndToEndLatencyMs /= f
			t.TputUser *= f
			t.Tput *= f
			t.RTR *= f
			t.TputPrefill *= f
			t.InferenceStepsPerSecond *= f
			tt.Targets = append(tt.Targets, t)
		}
		out = append(out, tt)
	}
	return out
}
