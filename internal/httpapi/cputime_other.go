//go:build !unix

package httpapi

import "time"

// cpuTime is not measured on this platform.
func cpuTime() (user, system time.Duration) { return 0, 0 }
