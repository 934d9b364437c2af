package host

import (
	"github.com/ttis-dev/ttis/units"
)

// NeedOf is what unit u asks of the host: its catalog entry's minimums and
// pins, its chips, where its weights and cache go, and docker when it runs
// a container.
func NeedOf(u *units.Unit) Need {
	return Need{
		Spec:         u.Spec,
		Chips:        u.Chips,
		WeightsCache: u.Vllm.CacheDir,
		WeightsDir:   u.Vllm.WeightsDir,
		Docker:       u.Runtime == units.RuntimeVllm && len(u.Vllm.Command) == 0,
		ResetDevice:  u.Restart.ResetDevice,
	}
}

// Enforced reports whether a failed check blocks u's start ([vllm]
// host_checks, "enforce" by default).
func Enforced(u *units.Unit) bool { return u.Vllm.HostChecks != units.HostChecksWarn }
