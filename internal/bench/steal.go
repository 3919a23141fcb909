package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes are the machine's CPU times since boot, in clock ticks, from the "cpu" line
// of /proc/stat: all of them (user, nice, system, idle, iowait, irq, softirq, steal)
// and steal, the time the hypervisor gave the virtual CPUs to someone else.
type cpuTimes struct{ total, steal uint64 }

// readCPUTimes reads /proc/stat; ok is false where there is none (not Linux).
func readCPUTimes() (t cpuTimes, ok bool, err error) {
	b, err := os.ReadFile("/proc/stat")
	if os.IsNotExist(err) {
		return cpuTimes{}, false, nil
	}
	if err != nil {
		return cpuTimes{}, false, err
	}
	t, err = parseCPUTimes(b)
	return t, err == nil, err
}

// parseCPUTimes reads the aggregate "cpu" line of a /proc/stat text. Guest time is
// already part of user time and is not added again.
func parseCPUTimes(stat []byte) (cpuTimes, error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 9 {
			return cpuTimes{}, fmt.Errorf("/proc/stat: cpu line has %d fields, want at least 9 (up to steal)", len(fields))
		}
		var t cpuTimes
		for i, f := range fields[1:9] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			t.total += v
			if i == 7 {
				t.steal = v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat: no cpu line")
}

// stealPercent is the share of the CPU time from a to b that was stolen, in percent.
func stealPercent(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.steal-a.steal) * 100 / float64(b.total-a.total)
}
