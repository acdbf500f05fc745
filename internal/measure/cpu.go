package measure

import (
	"syscall"
	"time"
)

// CPUTime is this process's user+system CPU time (0 if unreadable): the
// runner's generator figures, and lane growth, which adds lanes for
// answers only while the process has CPU to spare.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
