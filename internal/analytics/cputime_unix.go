//go:build unix

package analytics

import (
	"syscall"
	"time"
)

// CPUTime returns the user and system CPU time this process has used (getrusage);
// ok is false when the operating system gave no reading.
func CPUTime() (user, system time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
