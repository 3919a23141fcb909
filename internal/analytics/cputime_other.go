//go:build !unix

package analytics

import "time"

// CPUTime is not measured on this platform: ok is always false.
func CPUTime() (user, system time.Duration, ok bool) { return 0, 0, false }
