package cpu

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPUTime is the CPU time the whole test process has used: on a
// shared machine, tokens per CPU-second compare two builds more steadily
// than tokens per wall-clock second.
func processCPUTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
