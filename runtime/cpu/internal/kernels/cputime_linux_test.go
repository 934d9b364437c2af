package kernels

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUTime is the CPU time the calling OS thread has used. On a shared
// machine it measures a kernel's speed without the time the thread spent
// descheduled (the caller locks itself to its thread).
func threadCPUTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
