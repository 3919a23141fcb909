package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Options configures a run. DSN and Binary are required.
type Options struct {
	// DSN reaches a database on the cluster to benchmark; the run creates and drops
	// its own scratch database there (the role needs CREATEDB).
	DSN string
	// Binary is the queen daemon to run as a child process (bin/queen).
	Binary string
	// Environ is passed to the broker, minus the PG_*, HOST, PORT, LOG_LEVEL and
	// FILE_BUFFER_DIR variables that the run sets itself.
	Environ []string
	// Quick shrinks every window and data set to a smoke test of a few seconds: the
	// numbers mean nothing, the code paths all run.
	Quick bool
	// Warmup and Duration bound each throughput window (defaults 1 s and 5 s).
	Warmup, Duration time.Duration
	// Producers and Consumers are the concurrent HTTP clients (and raw connections)
	// of the push and pop+ack cases (defaults 4 and 4).
	Producers, Consumers int
	// PayloadBytes is the approximate size of each message's JSON payload (default 100).
	PayloadBytes int
	// LatencySamples is the number of long-poll wake-ups measured (default 200).
	LatencySamples int
	// Only, when not empty, limits the throughput cases to these names (e.g.
	// push_b100, popack_b100_p1), for profiling one case; latency and footprint
	// always run.
	Only []string
	// CPUProfileDir, when set, makes the broker serve its profiling endpoints
	// (QUEEN_PPROF_ADDR on a free loopback port) and records a CPU profile of it
	// during each measured broker window (not the warm-up, not the raw ceilings) into
	// CPUProfileDir/<case>.pprof. A profile that cannot be fetched is a warning.
	CPUProfileDir string
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

func (o *Options) wants(name string) bool {
	return len(o.Only) == 0 || slices.Contains(o.Only, name)
}

func (o *Options) defaults() {
	if o.Quick {
		o.Warmup = cmp.Or(o.Warmup, 100*time.Millisecond)
		o.Duration = cmp.Or(o.Duration, 300*time.Millisecond)
		o.LatencySamples = cmp.Or(o.LatencySamples, 5)
	}
	o.Warmup = cmp.Or(o.Warmup, time.Second)
	o.Duration = cmp.Or(o.Duration, 5*time.Second)
	o.Producers = cmp.Or(o.Producers, 4)
	o.Consumers = cmp.Or(o.Consumers, 4)
	o.PayloadBytes = cmp.Or(o.PayloadBytes, 100)
	o.LatencySamples = cmp.Or(o.LatencySamples, 200)
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// popCase is one pop+ack (or fan-out) configuration, run once raw and once through
// the broker.
type popCase struct {
	name       string
	batch      int
	partitions int
	consumers  int
	groups     []string // nil: queue mode
	messages   int      // pre-filled messages (each read once per group)
}

func (c popCase) deliveries() int64 { return int64(c.messages) * int64(max(len(c.groups), 1)) }

func (c popCase) note(kind string) string {
	mode := "queue mode"
	if c.groups != nil {
		mode = fmt.Sprintf("%d groups", len(c.groups))
	}
	return fmt.Sprintf("%s, %d partitions, %d consumers, %s, vs raw claim cycle", kind, c.partitions, c.consumers, mode)
}

// runner holds what every phase of a run shares.
type runner struct {
	opts    Options
	db      *database
	broker  *brokerProc
	load    *httpLoad
	prof    *cpuProfiler // nil unless Options.CPUProfileDir is set
	payload string
	win     window
	// brokerCPU and brokerMsgs add up the broker's CPU time and the messages it moved
	// inside the measured windows.
	brokerCPU  time.Duration
	brokerMsgs int64
	// brokerLog is the end of queen's log once it stopped, for error reports.
	brokerLog string
}

var pushBatches = []int{1, 10, 100, 1000}

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
	if opts.DSN == "" || opts.Binary == "" {
		return nil, errors.New("bench: DSN and Binary are required")
	}
	workDir, err := os.MkdirTemp("", "queen-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(workDir)

	*r = runner{opts: opts, payload: makePayload(opts.PayloadBytes), win: window{warmup: opts.Warmup, duration: opts.Duration}}
	r.logf("creating a scratch database")
	if r.db, err = createDatabase(ctx, opts.DSN, max(opts.Producers, opts.Consumers, 10)+2); err != nil {
		return nil, err
	}
	defer func() {
		if err := r.db.drop(ctx); err != nil {
			r.logf("warning: %v", err)
		}
	}()
	r.logf("starting %s on database %s", opts.Binary, r.db.name)
	if r.broker, err = startBroker(ctx, opts.Binary, opts.Environ, r.db, workDir, opts.CPUProfileDir != ""); err != nil {
		return nil, err
	}
	defer func() {
		r.broker.stop()
		r.brokerLog = r.broker.logTail()
	}()
	if opts.CPUProfileDir != "" {
		if r.prof, err = newCPUProfiler(opts.CPUProfileDir, r.broker.pprofAddr, opts.Duration, r.logf); err != nil {
			return nil, err
		}
	}
	r.load = newHTTPLoad(r.broker.url, max(opts.Producers, opts.Consumers, 10))
	defer r.load.close()

	rep := &Report{}
	if rep.Env, err = r.environment(ctx); err != nil {
		return nil, err
	}
	var cases []popCase
	for _, c := range r.popCases() {
		if opts.wants(c.name) {
			cases = append(cases, c)
		}
	}

	// Each case measures its raw ceiling (the broker idle) and then the broker, back
	// to back, so that both see the same machine: on a shared machine the load of
	// other processes drifts over minutes, and a ratio of two numbers measured
	// minutes apart would measure that drift.
	var pushB100, popB100 measurement
	for _, b := range pushBatches {
		name := fmt.Sprintf("push_b%d", b)
		withOne := b == 100 && opts.wants("push_b100_p1")
		if !opts.wants(name) && !withOne {
			continue
		}
		raw, err := r.rawInsert(ctx, b, opts.Producers)
		if err != nil {
			return nil, fmt.Errorf("raw insert b%d: %w", b, err)
		}
		if opts.wants(name) {
			m, err := r.brokerPush(ctx, b, opts.Producers, false)
			if err != nil {
				return nil, fmt.Errorf("push b%d: %w", b, err)
			}
			if b == 100 {
				pushB100 = m
			}
			rep.Results = append(rep.Results, throughput(name, m.rate(), raw.rate(),
				fmt.Sprintf("%d producers, 1 partition each, vs raw multi-row insert", opts.Producers)))
		}
		if withOne {
			m, err := r.brokerPush(ctx, 100, opts.Producers, true)
			if err != nil {
				return nil, fmt.Errorf("push b100 one partition: %w", err)
			}
			rep.Results = append(rep.Results, throughput("push_b100_p1", m.rate(), raw.rate(),
				fmt.Sprintf("%d producers into ONE partition (ordering lock), vs raw insert", opts.Producers)))
		}
	}
	for _, c := range cases {
		raw, err := r.rawClaim(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("raw claim %s: %w", c.name, err)
		}
		m, err := r.brokerPopAck(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		if c.name == "popack_b100" {
			popB100 = m
		}
		kind := "pop+ack"
		if c.groups != nil {
			kind = "deliveries/s, pop+ack"
		}
		rep.Results = append(rep.Results, throughput(c.name, m.rate(), raw.rate(), c.note(kind)))
	}

	// 3. Long-poll wake-up latency.
	if err := r.db.reset(ctx); err != nil {
		return nil, err
	}
	gap := 20 * time.Millisecond
	if opts.Quick {
		gap = 5 * time.Millisecond
	}
	r.logf("long-poll wake-up latency: %d samples", opts.LatencySamples)
	lat, err := r.load.longPollLatency(ctx, "bench-latency", opts.LatencySamples, gap, r.payload)
	if err != nil {
		return nil, fmt.Errorf("long-poll latency: %w", err)
	}
	note := fmt.Sprintf("push sent -> parked pop answered, %d samples", len(lat))
	rep.Results = append(rep.Results,
		plain("longpoll_wake_p50_ms", ms(percentile(lat, 0.50)), "ms", note),
		plain("longpoll_wake_p99_ms", ms(percentile(lat, 0.99)), "ms", note))

	// 4. Footprint.
	rss, err := r.broker.peakRSS()
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, plain("rss_peak_mb", float64(rss)/(1<<20), "MB", "VmHWM of the queen process over the whole run"))
	perM := func(m measurement) float64 {
		if m.msgs == 0 {
			return 0
		}
		return m.cpu.Seconds() / float64(m.msgs) * 1e6
	}
	if r.brokerMsgs > 0 {
		rep.Results = append(rep.Results, plain("cpu_s_per_mmsg", r.brokerCPU.Seconds()/float64(r.brokerMsgs)*1e6, "s",
			"broker CPU (user+sys) per million messages, all measured windows"))
	}
	rep.Results = append(rep.Results,
		plain("cpu_s_per_mmsg_push_b100", perM(pushB100), "s", "broker CPU per million messages pushed at batch 100"),
		plain("cpu_s_per_mmsg_popack_b100", perM(popB100), "s", "broker CPU per million messages popped and acked at batch 100"))
	return rep, nil
}

// popCases lists the pop+ack and fan-out configurations with their data sizes.
func (r *runner) popCases() []popCase {
	c := r.opts.Consumers
	groups := make([]string, 10)
	for i := range groups {
		groups[i] = "cg" + strconv.Itoa(i)
	}
	cases := []popCase{
		{name: "popack_b1", batch: 1, partitions: 100, consumers: c, messages: 20_000},
		{name: "popack_b10", batch: 10, partitions: 100, consumers: c, messages: 60_000},
		{name: "popack_b100", batch: 100, partitions: 100, consumers: c, messages: 200_000},
		{name: "popack_b100_p1", batch: 100, partitions: 1, consumers: 1, messages: 60_000},
		{name: "popack_b100_p10000", batch: 100, partitions: 10_000, consumers: c, messages: 100_000},
		{name: "fanout_cg10", batch: 100, partitions: 10, consumers: len(groups), groups: groups, messages: 20_000},
	}
	if r.opts.Quick {
		for i := range cases {
			cases[i].messages = max(cases[i].messages/50, cases[i].partitions/10)
			cases[i].partitions = min(cases[i].partitions, 1000)
		}
	}
	return cases
}

func (r *runner) rawInsert(ctx context.Context, batch, producers int) (measurement, error) {
	if err := r.db.reset(ctx); err != nil {
		return measurement{}, err
	}
	pids, err := r.db.rawQueue(ctx, "bench-raw", producers)
	if err != nil {
		return measurement{}, err
	}
	ids := queue.NewIDGenerator()
	ins := make([]*rawInserter, producers)
	for w := range ins {
		ins[w] = newRawInserter(ids, r.payload, batch)
	}
	r.logf("raw insert ceiling: batch %d, %d connections", batch, producers)
	m, err := r.win.run(ctx, producers, 0, nil, func(ctx context.Context, w int) (int, error) {
		return batch, ins[w].insert(ctx, r.db, func(int) string { return pids[w] })
	})
	r.logResult(m)
	return m, err
}

func (r *runner) rawClaim(ctx context.Context, c popCase) (measurement, error) {
	if err := r.db.reset(ctx); err != nil {
		return measurement{}, err
	}
	pids, err := r.db.rawQueue(ctx, "bench-raw", c.partitions)
	if err != nil {
		return measurement{}, err
	}
	groups := c.groups
	if groups == nil {
		groups = []string{queue.QueueModeGroup}
	}
	r.logf("raw claim ceiling %s: filling %d messages", c.name, c.messages)
	if err := r.db.rawFill(ctx, "bench-raw", pids, c.messages, r.payload, groups); err != nil {
		return measurement{}, err
	}
	r.logf("raw claim ceiling %s: batch %d, %d partitions, %d connections", c.name, c.batch, c.partitions, c.consumers)
	m, err := r.win.run(ctx, c.consumers, c.deliveries(), nil, r.db.rawClaimOp("bench-raw", groups, c.batch))
	r.logResult(m)
	return m, err
}

func (r *runner) brokerPush(ctx context.Context, batch, producers int, onePartition bool) (measurement, error) {
	if err := r.db.reset(ctx); err != nil {
		return measurement{}, err
	}
	bodies := make([][]byte, producers)
	for w := range bodies {
		part := "p" + strconv.Itoa(w)
		if onePartition {
			part = "p0"
		}
		bodies[w] = pushBody("bench", batch, func(int) string { return part }, r.payload)
	}
	name := "push_b" + strconv.Itoa(batch)
	if onePartition {
		name += "_p1"
	}
	r.logf("broker push: batch %d, %d producers, one partition: %v", batch, producers, onePartition)
	m, err := r.brokerWindow(ctx, name).run(ctx, producers, 0, r.broker.cpu, r.load.pushOp(bodies, batch))
	r.account(name, m)
	return m, err
}

func (r *runner) brokerPopAck(ctx context.Context, c popCase) (measurement, error) {
	if err := r.db.reset(ctx); err != nil {
		return measurement{}, err
	}
	r.logf("broker %s: filling %d messages through push", c.name, c.messages)
	// Fill requests span many partitions, each taking its ordering lock: concurrent
	// fillers would only queue on those locks (and, over 10 000 partitions, on a busy
	// machine, run into DB_LOCK_TIMEOUT). One producer fills without contention.
	if err := r.load.fill(ctx, "bench", c.partitions, c.messages, 1, r.payload); err != nil {
		return measurement{}, err
	}
	if err := r.db.analyze(ctx); err != nil {
		return measurement{}, err
	}
	r.logf("broker %s: batch %d, %d partitions, %d consumers", c.name, c.batch, c.partitions, c.consumers)
	m, err := r.brokerWindow(ctx, c.name).run(ctx, c.consumers, c.deliveries(), r.broker.cpu,
		r.load.popAckOp("bench", c.groups, c.batch, c.consumers))
	r.account(c.name, m)
	return m, err
}

// brokerWindow is the window of a broker case: with -cpuprofile, it records a CPU
// profile of the broker during its measured part.
func (r *runner) brokerWindow(ctx context.Context, name string) window {
	win := r.win
	win.atStart = r.prof.hook(ctx, name)
	return win
}

func (r *runner) account(name string, m measurement) {
	r.brokerCPU += m.cpu
	r.brokerMsgs += m.msgs
	r.logResult(m)
	if r.prof != nil && m.inWarmup {
		r.logf("warning: no CPU profile of %s: its work ran out during the warm-up", name)
	}
}

func (r *runner) logResult(m measurement) {
	r.logf("  %.0f msg/s (%d in %.2fs, %d empty)", m.rate(), m.msgs, m.elapsed.Seconds(), m.empty)
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Log, "bench: "+format+"\n", args...)
}

// environment describes the machine, PostgreSQL and the run's parameters.
func (r *runner) environment(ctx context.Context) ([]string, error) {
	pg, err := r.db.describe(ctx)
	if err != nil {
		return nil, err
	}
	o := r.opts
	return []string{
		fmt.Sprintf("machine: %s, %d CPUs, %s; %s/%s", cpuModel(), runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH),
		"database: " + pg,
		fmt.Sprintf("run: warmup %s, window %s, %d producers, %d consumers, payload ~%d B, quick=%v",
			o.Warmup, o.Duration, o.Producers, o.Consumers, o.PayloadBytes, o.Quick),
	}, nil
}

// makePayload returns a JSON object of about n bytes.
func makePayload(n int) string {
	const head = `{"kind":"bench","seq":12345,"body":""}`
	return `{"kind":"bench","seq":12345,"body":"` + strings.Repeat("x", max(n-len(head), 0)) + `"}`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
