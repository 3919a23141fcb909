package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/progress"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Job is one periodic, cluster-wide job. RunOnce does one bounded pass; the
// [Runner] adds the schedule, the advisory lock, the timeout, metrics and logs.
type Job interface {
	Name() string
	Interval() time.Duration
	RunOnce(ctx context.Context) (Result, error)
	// UpstreamLock reports whether a cycle must also exclude upstream Queen's
	// retention/eviction cycle (its advisory lock 737001), for jobs that delete what
	// upstream's cycle deletes.
	UpstreamLock() bool
}

// Result is what one RunOnce did.
type Result struct {
	// Rows is the number of rows deleted or updated.
	Rows int64
	// Batches is the number of statements run.
	Batches int
	// Truncated means the pass stopped at its batch cap with work left (the next
	// cycle continues).
	Truncated bool
}

// Outcome of one cycle on this replica.
type Outcome string

// Outcomes, also the result label of queen_maintenance_runs_total.
const (
	OutcomeSuccess Outcome = "success"
	OutcomeError   Outcome = "error"
	// OutcomeLocked: another replica holds the job's lock (it is running it).
	OutcomeLocked Outcome = "skipped_locked"
	// OutcomeNotDue: another replica already ran this cycle.
	OutcomeNotDue Outcome = "skipped_not_due"
)

// Options configures a [Runner].
type Options struct {
	// Instance names this replica in queen.maintenance_jobs.
	Instance string
	// Jitter spreads each wait by ±Jitter of the interval (default 0.1; negative: none).
	Jitter float64
	// MaxConcurrent bounds the jobs running at once on this replica (default 2):
	// each holds two pool connections while it runs.
	MaxConcurrent int
	// FirstRun delays the first cycle of every job by this fraction of its interval
	// (default 0.5; jittered), so a restart does not run everything at once.
	FirstRun float64
	// Logger receives one line per run (Info when it did work); nil discards.
	Logger *slog.Logger
}

// lockedRetry is how soon a replica that found a job locked looks again: the holder
// may have been running the previous cycle.
const lockedRetry = 5 * time.Second

// Runner runs every job on its own schedule, one cycle at a time per job, gated
// cluster-wide: a cycle runs on the replica that takes the job's
// pg_try_advisory_xact_lock and finds it due in queen.maintenance_jobs; the others
// skip it.
type Runner struct {
	store   *store.Store
	jobs    []Job
	opts    Options
	logger  *slog.Logger
	metrics *metrics
	sem     chan struct{}
	states  *jobStates
	cycles  progress.Signal
}

// New returns a runner of jobs and registers its metric families on reg.
func New(st *store.Store, jobs []Job, reg prometheus.Registerer, opts Options) (*Runner, error) {
	if opts.Jitter == 0 {
		opts.Jitter = 0.1
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	if opts.FirstRun <= 0 {
		opts.FirstRun = 0.5
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.Interval() <= 0 || j.Name() == "" {
			panic("maintenance: job without a name or a positive interval") // programmer error
		}
	}
	return &Runner{store: st, jobs: jobs, opts: opts, logger: opts.Logger, metrics: m,
		sem: make(chan struct{}, opts.MaxConcurrent), states: newJobStates(jobs)}, nil
}

// Jobs returns the runner's jobs.
func (r *Runner) Jobs() []Job { return r.jobs }

// Cycles counts the cycles this runner has completed, of every job and with every
// outcome (a skip too), each advanced once its [Runner.RunCycle] has recorded it in
// [Runner.JobStates] and the metrics: a test waits on it for "the job ran" and then
// reads what the cycle did, instead of polling for it. Only the runner advances it.
func (r *Runner) Cycles() *progress.Signal { return &r.cycles }

// Run runs every job's loop until ctx is done and waits for them.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, j := range r.jobs {
		wg.Go(func() { r.loop(ctx, j) })
	}
	wg.Wait()
}

func (r *Runner) loop(ctx context.Context, j Job) {
	wait := r.jittered(time.Duration(float64(j.Interval()) * r.opts.FirstRun))
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		out, _, _ := r.RunCycle(ctx, j)
		<-r.sem
		wait = r.jittered(j.Interval())
		if out == OutcomeLocked {
			wait = r.jittered(min(j.Interval(), lockedRetry))
		}
	}
}

func (r *Runner) jittered(d time.Duration) time.Duration {
	if r.opts.Jitter <= 0 {
		return d
	}
	f := 1 + r.opts.Jitter*(2*rand.Float64()-1)
	return time.Duration(float64(d) * f)
}

// Timeout bounds one RunOnce of a job: its interval, clamped to [10 s, 5 min].
func Timeout(j Job) time.Duration {
	return min(max(j.Interval(), 10*time.Second), 5*time.Minute)
}

// RunCycle runs one cycle of j if this replica wins it: it claims the cycle (lock
// and due check), runs RunOnce under [Timeout], records the run and releases the
// lock. Skips are outcomes, not errors; the error is RunOnce's, or the claim's when
// the database is unreachable. Every return advances [Runner.Cycles].
func (r *Runner) RunCycle(ctx context.Context, j Job) (Outcome, Result, error) {
	defer r.cycles.Advance()
	name := j.Name()
	claim := store.JobClaim{Name: name, Interval: j.Interval(), Hold: Timeout(j), Instance: r.opts.Instance,
		UpstreamLock: j.UpstreamLock()}
	lease, err := r.store.JobClaimCycle(ctx, claim)
	switch {
	case errors.Is(err, store.ErrJobLocked):
		r.metrics.runs.WithLabelValues(name, string(OutcomeLocked)).Inc()
		r.states.record(name, OutcomeLocked, false, time.Time{}, nil)
		return OutcomeLocked, Result{}, nil
	case errors.Is(err, store.ErrJobNotDue):
		r.metrics.runs.WithLabelValues(name, string(OutcomeNotDue)).Inc()
		r.states.record(name, OutcomeNotDue, false, time.Time{}, nil)
		return OutcomeNotDue, Result{}, nil
	case err != nil:
		if ctx.Err() == nil {
			r.metrics.runs.WithLabelValues(name, string(OutcomeError)).Inc()
			r.states.record(name, OutcomeError, false, time.Time{}, err)
			level := slog.LevelWarn
			if errors.Is(err, queue.ErrUnavailable) {
				level = slog.LevelDebug // an outage: the broker reports it already
			}
			r.logger.Log(ctx, level, "maintenance job not started", "job", name, "err", err)
		}
		return OutcomeError, Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, Timeout(j))
	start := time.Now()
	res, runErr := j.RunOnce(runCtx)
	took := time.Since(start)
	cancel()
	finishCtx, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	if err := lease.Finish(finishCtx, res.Rows, took, runErr); err != nil && runErr == nil {
		runErr = err
	}
	cancelFinish()

	out := OutcomeSuccess
	if runErr != nil {
		out = OutcomeError
	}
	r.metrics.observe(name, out, res, took)
	r.states.record(name, out, true, start, runErr)
	attrs := []any{"job", name, "rows", res.Rows, "batches", res.Batches, "duration", took.Round(time.Millisecond).String()}
	switch {
	case runErr != nil:
		r.logger.Warn("maintenance job failed", append(attrs, "err", runErr)...)
	case res.Rows > 0:
		r.logger.Info("maintenance job ran", append(attrs, "truncated", res.Truncated)...)
	default:
		r.logger.Debug("maintenance job ran", attrs...)
	}
	return out, res, runErr
}
