//go:build !linux

package cpu

import "time"

// processCPUTime is unavailable here; benchmarks report wall time only.
func processCPUTime() time.Duration { return 0 }
