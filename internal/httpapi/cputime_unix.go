//go:build unix

package httpapi

import (
	"syscall"
	"time"
)

// cpuTime returns the user and system CPU time of the process (getrusage).
func cpuTime() (user, system time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
