package analytics

import (
	"bytes"
	"os"
	"strconv"
)

// readProc reads CPU times ([CPUTime]) and resident and virtual memory
// (/proc/self/statm) of this process.
func readProc() (procReading, bool) {
	user, system, ok := CPUTime()
	if !ok {
		return procReading{}, false
	}
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return procReading{}, false
	}
	fields := bytes.Fields(data)
	if len(fields) < 2 {
		return procReading{}, false
	}
	size, err1 := strconv.ParseUint(string(fields[0]), 10, 64)
	resident, err2 := strconv.ParseUint(string(fields[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return procReading{}, false
	}
	page := float64(os.Getpagesize())
	return procReading{
		cpuUserUs:    float64(user.Microseconds()),
		cpuSysUs:     float64(system.Microseconds()),
		rssBytes:     float64(resident) * page,
		virtualBytes: float64(size) * page,
	}, true
}
