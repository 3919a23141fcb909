package analytics

import (
	"runtime/metrics"
	"time"
)

// procState is the previous reading of cumulative process counters, so that each
// sample reports what happened since the one before.
type procState struct {
	cpuUserUs float64
	cpuSysUs  float64
	cpuOK     bool
	gcCycles  uint64
	gcCPUSec  float64
}

// runtimeSamples are the runtime/metrics the sampler reads.
var runtimeSamples = []string{
	"/sched/goroutines:goroutines",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes",
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
}

// observeProcess records process gauges into s (system_activity groups cpu, memory and
// runtime, as GET /api/v1/analytics/system-metrics reports them): CPU microseconds
// per second since the previous sample, resident and virtual memory, Go heap,
// goroutines and GC work. CPU and memory come from the operating system and are left
// out where it offers no reading.
func observeProcess(s systemSample, now time.Time, prev procState, prevAt time.Time) (procState, time.Time) {
	var cur procState
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		samples[i].Name = name
	}
	metrics.Read(samples)
	value := func(i int) float64 {
		switch v := samples[i].Value; v.Kind() {
		case metrics.KindUint64:
			return float64(v.Uint64())
		case metrics.KindFloat64:
			return v.Float64()
		}
		return 0
	}
	s.observe("runtime", "goroutines", value(0))
	s.observe("memory", "heap_bytes", value(1))
	s.observe("memory", "go_total_bytes", value(2))
	cur.gcCycles = uint64(value(3))
	cur.gcCPUSec = value(4)

	p, ok := readProc()
	if ok {
		s.observe("memory", "rss_bytes", p.rssBytes)
		s.observe("memory", "virtual_bytes", p.virtualBytes)
		cur.cpuUserUs, cur.cpuSysUs, cur.cpuOK = p.cpuUserUs, p.cpuSysUs, true
	}
	elapsed := now.Sub(prevAt).Seconds()
	if prevAt.IsZero() || elapsed <= 0 {
		return cur, now
	}
	if cur.cpuOK && prev.cpuOK {
		s.observe("cpu", "user_us", max(cur.cpuUserUs-prev.cpuUserUs, 0)/elapsed)
		s.observe("cpu", "system_us", max(cur.cpuSysUs-prev.cpuSysUs, 0)/elapsed)
	}
	if cur.gcCycles >= prev.gcCycles {
		s.observe("runtime", "gc_cycles", float64(cur.gcCycles-prev.gcCycles)/elapsed)
	}
	s.observe("runtime", "gc_cpu_us", max(cur.gcCPUSec-prev.gcCPUSec, 0)*1e6/elapsed)
	return cur, now
}

// procReading is one operating-system reading of the process.
type procReading struct {
	cpuUserUs    float64
	cpuSysUs     float64
	rssBytes     float64
	virtualBytes float64
}
