package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
)

// runner holds what every phase of a run shares.
type runner struct {
	opts   Options
	db     *database   // nil with Options.URL
	broker *brokerProc // nil with Options.URL
	load   *httpLoad
	prof   *cpuProfiler // nil unless Options.CPUProfileDir is set
	rep    *Report
	// payload is the JSON payload of every message but the mixed cases' (which carry
	// their send time, see sendClock).
	payload string
	win     window
	clock   sendClock
	// suffix makes the run's queue names unique (bench-<case>-<suffix>); queues lists
	// the queues created through the broker, deleted at the end with Options.URL.
	suffix string
	queues []string
	// brokerCPU and brokerMsgs add up the broker's CPU time and the messages it moved
	// inside the measured windows; pushB100 and popB100 are those two cases'.
	brokerCPU         time.Duration
	brokerMsgs        int64
	pushB100, popB100 measurement
	// brokerLog is the end of queen's log once it stopped, for error reports.
	brokerLog string
	// cpuAtStart is the machine's CPU times when the measurements began (haveCPU
	// false where the machine has no /proc/stat).
	cpuAtStart cpuTimes
	haveCPU    bool
	// pg reads the CPU time of the PostgreSQL server when it runs on this machine
	// (hasPG); see proccpu.go.
	pg    postgresProcs
	hasPG bool
}

// Run measures the raw ceilings and then the broker, and returns the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	var r runner
	rep, err := r.run(ctx, opts)
	if err != nil && r.brokerLog != "" {
		err = fmt.Errorf("%w\nqueen's log (tail):\n%s", err, r.brokerLog)
	}
	return rep, err
}

func (r *runner) run(ctx context.Context, opts Options) (*Report, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	*r = runner{
		opts: opts, payload: makePayload(opts.PayloadBytes), win: window{warmup: opts.Warmup, duration: opts.Duration},
		clock: sendClock{base: time.Now()}, suffix: hex.EncodeToString(b[:]), rep: &Report{Profile: ProfileUnknown},
	}
	if opts.RowCost {
		return r.rowCost(ctx)
	}
	conns := max(opts.Producers+opts.Consumers, manyProducers, 10)
	if opts.remote() {
		load, err := newHTTPLoad(strings.TrimRight(opts.URL, "/"), opts.AuthToken)
		if err != nil {
			return nil, err
		}
		r.load = load
		defer r.load.close()
		if err := r.load.checkReachable(ctx); err != nil {
			return nil, err
		}
		defer r.deleteQueues(ctx)
	} else {
		cleanup, err := r.startLocal(ctx, conns)
		defer cleanup()
		if err != nil {
			return nil, err
		}
		if r.rep.Profile, err = r.db.profile(ctx); err != nil {
			return nil, err
		}
		if r.pg, r.hasPG = findPostgres(ctx, r.db); !r.hasPG {
			r.logf("note: PostgreSQL does not run on this machine: no PostgreSQL CPU per message")
		}
	}
	env, err := r.environment(ctx)
	if err != nil {
		return nil, err
	}
	r.rep.Env = env
	r.logf("profile: %s", r.rep.Profile)
	if r.cpuAtStart, r.haveCPU, err = readCPUTimes(); err != nil {
		return nil, err
	}

	// Each case measures its raw ceiling (the broker idle) and then the broker, back
	// to back, so that both see the same machine: on a shared machine the load of
	// other processes drifts over minutes, and a ratio of two numbers measured
	// minutes apart would measure that drift.
	sections := []func(context.Context) error{r.pushCases, r.popCases, r.mixedCases, r.latency, r.footprint, r.steal}
	if opts.Segments {
		sections = []func(context.Context) error{r.segmentCases, r.steal}
	}
	for _, section := range sections {
		if err := section(ctx); err != nil {
			return nil, err
		}
	}
	return r.rep, nil
}

// startLocal creates the scratch database and starts the broker on it; cleanup
// (always to be called, also after an error) stops and drops what was started.
func (r *runner) startLocal(ctx context.Context, conns int) (cleanup func(), err error) {
	var undo []func()
	cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	workDir, err := os.MkdirTemp("", "queen-bench-")
	if err != nil {
		return cleanup, err
	}
	undo = append(undo, func() { os.RemoveAll(workDir) })
	r.logf("creating a scratch database")
	if r.db, err = createDatabase(ctx, r.opts.DSN, max(r.opts.Producers, r.opts.Consumers, manyProducers, 10)+2); err != nil {
		return cleanup, err
	}
	undo = append(undo, func() {
		if err := r.db.drop(ctx); err != nil {
			r.logf("warning: %v", err)
		}
	})
	r.logf("starting %s on database %s", r.opts.Binary, r.db.name)
	if r.broker, err = startBroker(ctx, r.opts.Binary, r.opts.Environ, r.db, workDir, r.opts.CPUProfileDir != ""); err != nil {
		return cleanup, err
	}
	undo = append(undo, func() {
		r.broker.stop()
		r.brokerLog = r.broker.logTail()
	})
	if r.opts.CPUProfileDir != "" {
		if r.prof, err = newCPUProfiler(r.opts.CPUProfileDir, r.broker.pprofAddr, r.opts.Duration, r.logf); err != nil {
			return cleanup, err
		}
	}
	if r.load, err = newHTTPLoad(r.broker.url, r.opts.AuthToken); err != nil {
		return cleanup, err
	}
	undo = append(undo, r.load.close)
	return cleanup, nil
}

// queueName returns a queue of the run's own for a case, bench-<case>-<suffix>, and
// remembers it for deleteQueues.
func (r *runner) queueName(caseName string) string {
	q := "bench-" + caseName + "-" + r.suffix
	r.queues = append(r.queues, q)
	return q
}

// deleteQueues deletes, through the broker, the queues the run created (Options.URL:
// a database the run does not own). A broker without the route is a note.
func (r *runner) deleteQueues(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	for _, q := range r.queues {
		supported, err := r.load.deleteQueue(ctx, q)
		if err != nil {
			r.logf("warning: %v", err)
			continue
		}
		if !supported {
			r.logf("note: the broker does not delete queues (DELETE /api/v1/resources/queues/{name}: 404 or 405); "+
				"left behind: %s", strings.Join(r.queues, " "))
			return
		}
	}
	if len(r.queues) > 0 {
		r.logf("deleted the run's %d queues", len(r.queues))
	}
}

// reset empties the queue tables before a case (with a database of the run's own).
func (r *runner) reset(ctx context.Context) error {
	if r.db == nil {
		return nil
	}
	return r.db.reset(ctx)
}

// analyze refreshes the planner statistics after a fill (with a database of the run's own).
func (r *runner) analyze(ctx context.Context) error {
	if r.db == nil {
		return nil
	}
	return r.db.analyze(ctx)
}

// cpu reads the CPU time of the bench, of the broker when it is the run's child and of
// PostgreSQL when it runs on this machine.
func (r *runner) cpu() func() cpuSample {
	others := r.rawCPU()
	return func() cpuSample {
		s := others()
		if r.broker != nil {
			s.broker, s.hasBroker = r.broker.cpu()
		}
		return s
	}
}

// rawCPU reads the CPU time of the bench and of PostgreSQL (on this machine) for a raw
// ceiling: the broker is idle then.
func (r *runner) rawCPU() func() cpuSample {
	return func() cpuSample {
		s := cpuSample{bench: selfCPU()}
		if r.hasPG {
			s.postgres, s.hasPostgres = r.pg.read()
		}
		return s
	}
}

// withCPU adds to res, a throughput measured in m against the ceiling raw (a zero
// measurement for none), the CPU time each side spent per message in both.
func withCPU(res Result, m, raw measurement) Result {
	if res.CPU = m.cpu.perMessage(m.msgs); res.CPU != nil {
		res.Note += "; " + res.CPU.String()
	}
	if res.CeilingCPU = raw.cpu.perMessage(raw.msgs); res.CeilingCPU != nil {
		res.Note += "; ceiling " + res.CeilingCPU.String()
	}
	return res
}

// brokerWindow is the window of a broker case: with -cpuprofile, it records a CPU
// profile of the broker during its measured part.
func (r *runner) brokerWindow(ctx context.Context, name string) window {
	win := r.win
	win.atStart = r.prof.hook(ctx, name)
	return win
}

func (r *runner) account(name string, m measurement) {
	r.brokerCPU += m.cpu.broker
	r.brokerMsgs += m.msgs
	r.logResult(m)
	if r.prof != nil && m.inWarmup {
		r.logf("warning: no CPU profile of %s: its work ran out during the warm-up", name)
	}
}

func (r *runner) add(res ...Result) { r.rep.Results = append(r.rep.Results, res...) }

// vs is the end of a note naming the ceiling, "" when the run has none (Options.URL).
func (r *runner) vs(ceiling string) string {
	if r.db == nil {
		return ""
	}
	return ", vs " + ceiling
}

func (r *runner) logResult(m measurement) {
	r.logf("  %.0f msg/s (%d in %.2fs, %d empty)", m.rate(), m.msgs, m.elapsed.Seconds(), m.empty)
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Log, "bench: "+format+"\n", args...)
}

// latency measures the long-poll wake-up: a parked pop answered by a push.
func (r *runner) latency(ctx context.Context) error {
	if err := r.reset(ctx); err != nil {
		return err
	}
	gap := 20 * time.Millisecond
	if r.opts.Quick {
		gap = 5 * time.Millisecond
	}
	r.logf("long-poll wake-up latency: %d samples", r.opts.LatencySamples)
	lat, err := r.load.longPollLatency(ctx, r.queueName("longpoll"), r.opts.LatencySamples, gap, r.payload)
	if err != nil {
		return fmt.Errorf("long-poll latency: %w", err)
	}
	note := fmt.Sprintf("push sent -> parked pop answered, %d samples", len(lat))
	r.add(plain("longpoll_wake_p50_ms", ms(percentile(lat, 0.50)), "ms", note),
		plain("longpoll_wake_p99_ms", ms(percentile(lat, 0.99)), "ms", note))
	return nil
}

// footprint reports the broker's peak RSS and CPU per message (none with Options.URL).
func (r *runner) footprint(context.Context) error {
	if r.broker == nil {
		return nil
	}
	rss, err := r.broker.peakRSS()
	if err != nil {
		return err
	}
	r.add(plain("rss_peak_mb", float64(rss)/(1<<20), "MB", "VmHWM of the queen process over the whole run"))
	perM := func(m measurement) float64 {
		if m.msgs == 0 {
			return 0
		}
		return m.cpu.broker.Seconds() / float64(m.msgs) * 1e6
	}
	if r.brokerMsgs > 0 {
		r.add(plain("cpu_s_per_mmsg", r.brokerCPU.Seconds()/float64(r.brokerMsgs)*1e6, "s",
			"broker CPU (user+sys) per million messages, all measured windows"))
	}
	r.add(plain("cpu_s_per_mmsg_push_b100", perM(r.pushB100), "s", "broker CPU per million messages pushed at batch 100"),
		plain("cpu_s_per_mmsg_popack_b100", perM(r.popB100), "s", "broker CPU per million messages popped and acked at batch 100"))
	return nil
}

// steal reports the share of this machine's CPU time that its hypervisor took
// during the measurements (none where the machine has no /proc/stat): on a shared
// host it is what makes two runs of one build differ.
func (r *runner) steal(context.Context) error {
	if !r.haveCPU {
		return nil
	}
	now, _, err := readCPUTimes()
	if err != nil {
		return err
	}
	r.add(plain("host_steal_pct", stealPercent(r.cpuAtStart, now), "%",
		"CPU time of this machine taken by its hypervisor during the measurements (/proc/stat steal)"))
	return nil
}

// makePayload returns a JSON object of about n bytes.
func makePayload(n int) string {
	const head = `{"kind":"bench","seq":12345,"body":""}`
	return `{"kind":"bench","seq":12345,"body":"` + strings.Repeat("x", max(n-len(head), 0)) + `"}`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// since renders the time since t for progress lines.
func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }
