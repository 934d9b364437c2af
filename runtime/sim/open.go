package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ttis-dev/ttis/runtime"
	"github.com/ttis-dev/ttis/units"
	"github.com/ttis-dev/ttis/units/catalog"
)

// Open builds the sim engine for a loaded unit: timing from the catalog's
// targets for (model, device), limits from the unit (which units.Load has
// filled from the catalog), time_scale and seed from its [sim] section.
func Open(_ context.Context, u *units.Unit) (runtime.Engine, error) {
	spec, err := catalog.LookupIn(u.Catalog, u.Model, u.Device)
	if err != nil {
		return nil, fmt.Errorf("sim runtime for unit %s: %w", u.Name, err)
	}
	if spec.IsMedia() {
		return nil, fmt.Errorf("sim runtime for unit %s: %s is a %s model; it is served by the media engine (OpenMedia), not the text engine", u.Name, spec.ModelName, spec.ModelType)
	}
	timing, err := TimingFromTargets(spec.Targets)
	if err != nil {
		return nil, fmt.Errorf("sim runtime for unit %s (%s on %s): %w", u.Name, spec.ModelName, spec.Device, err)
	}
	scale := 1.0
	if u.Sim.TimeScale != nil {
		scale = *u.Sim.TimeScale
	}
	maxCtx, maxConc := u.Limits.MaxContext, u.Limits.MaxConcurrency
	if maxCtx == 0 {
		maxCtx = spec.MaxContext
	}
	if maxConc == 0 {
		maxConc = max(spec.MaxConcurrency, 1)
	}
	e, err := New(Config{Model: u.Model, MaxContext: maxCtx, MaxConcurrency: maxConc, Timing: timing,
		TimeScale: scale, Seed: u.Sim.Seed, Version: "simulating " + spec.ModelName + " on " + spec.Device})
	if err != nil {
		return nil, fmt.Errorf("sim runtime for unit %s: %w", u.Name, err)
	}
	return e, nil
}

// TimingFromTargets derives the simulated speed from a catalog entry's
// targets: TTFT (and its ISL) from the lowest-concurrency target that gives
// ttft_ms, the decode step from the lowest-concurrency target that gives
// tput_user (step = 1000/tput_user ms).
func TimingFromTargets(ts []catalog.PerfTarget) (Timing, error) {
	var t Timing
	bestTTFT, bestTput := math.MaxInt, math.MaxInt
	for _, p := range ts {
		if p.TTFTms > 0 && p.ISL > 0 && p.Concurrency < bestTTFT {
			bestTTFT = p.Concurrency
			t.TTFT = time.Duration(p.TTFTms * float64(time.Millisecond))
			t.TargetISL = p.ISL
		}
		if p.TputUser > 0 && p.Concurrency < bestTput {
			bestTput = p.Concurrency
			t.Step = time.Duration(1000 / p.TputUser * float64(time.Millisecond))
		}
	}
	if t.TTFT == 0 || t.Step == 0 {
		return Timing{}, fmt.Errorf("the catalog has no performance target with ttft_ms and tput_user to simulate")
	}
	return t, nil
}
