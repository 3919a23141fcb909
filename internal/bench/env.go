package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// environment describes the machine, the server and the run's parameters.
func (r *runner) environment(ctx context.Context) ([]string, error) {
	o := r.opts
	lines := []string{
		"profile: " + r.rep.Profile,
		fmt.Sprintf("machine: %s, %d CPUs, %s; %s/%s", cpuModel(), runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH),
	}
	if r.db != nil {
		pg, err := r.db.describe(ctx)
		if err != nil {
			return nil, err
		}
		lines = append(lines, "database: "+pg)
	} else {
		lines = append(lines, "broker: "+o.URL+" (started elsewhere; no database: no raw ceilings, "+
			"footprint n/a, profile unknown; machine above is the bench's)")
	}
	lines = append(lines, fmt.Sprintf("run: warmup %s, window %s, %d producers, %d consumers, payload ~%d B, paced at %.0f%%, quick=%v",
		o.Warmup, o.Duration, o.Producers, o.Consumers, o.PayloadBytes, o.PacedFraction*100, o.Quick))
	return lines, nil
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	data, _ := os.ReadFile("/proc/meminfo")
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return fmt.Sprintf("%.1f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return "unknown RAM"
}
