package host

import (
	"context"

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
		HFToken:      u.Vllm.HFTokenFile != "",
	}
}

// Enforced reports whether a failed check blocks u's start ([vllm]
// host_checks, "enforce" by default).
func Enforced(u *units.Unit) bool { return u.Vllm.HostChecks != units.HostChecksWarn }

// DetectDevice names the catalog device of this host's boards from tt-smi's
// snapshot (what device = "auto" resolves to), as run.py's
// infer_default_device does (workflows/device_utils.py lines 174-221).
func DetectDevice(ctx context.Context, env Env) (string, error) {
	env = env.withDefaults()
	snap, err := env.snapshot(ctx)
	if err != nil {
		return "", err
	}
	d, err := snap.DetectDevice()
	if err != nil {
		return "", err
	}
	return d.Name, nil
}
