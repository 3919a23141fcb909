package broker

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Recorder bounds and timing.
const (
	// activitySampleInterval is the gauge sampling period (parked long-polls, pool,
	// scheduler delay, process stats); parked averages assume it divides a minute.
	activitySampleInterval = time.Second
	samplesPerMinute       = int64(time.Minute / activitySampleInterval)
	// maxPendingMinutes bounds the closed minutes kept while the database refuses
	// flushes; older ones are dropped (and counted).
	maxPendingMinutes = 15
	// maxLifetimeQueues bounds the per-queue lifetime totals; activity of further
	// queues still counts in the process totals.
	maxLifetimeQueues = 10000
	// activityFlushTimeout bounds one flush; activityRetryInterval spaces retries
	// after a failed one.
	activityFlushTimeout  = 10 * time.Second
	activityRetryInterval = 10 * time.Second
	// finalFlushTimeout bounds the flush on shutdown, which delays the exit.
	finalFlushTimeout = 3 * time.Second
)

// activity is the in-process recorder behind the analytics tables.
// The request paths add to per-minute buckets under one mutex and never run SQL; the
// flush loop started by Run writes each closed minute to queue_activity,
// worker_activity, queue_parked_activity and system_activity, adding to whatever other
// processes wrote for the same minute.
type activity struct {
	hostname string
	workerID string
	pid      int
	started  time.Time

	// sampleMu serialises gauge sampling (the loop and FlushActivity) and guards the
	// previous CPU reading. Lock order: sampleMu, then mu (or waiters.mu); never the
	// reverse.
	sampleMu sync.Mutex
	prevProc procState
	prevAt   time.Time

	mu      sync.Mutex
	minutes map[time.Time]*activityMinute
	total   queue.ActivityCounts
	queues  map[string]*queue.ActivityCounts
	// rateMinute is the minute rateCur counts; rateLast is the previous minute.
	rateMinute time.Time
	rateCur    queue.ActivityCounts
	rateLast   queue.ActivityCounts
	lastFlush  time.Time
	dropped    int64
}

// activityMinute is one minute of one process. Counters and gauge sums are reset when
// flushed (the tables add them up); system holds the whole minute's process samples,
// because system_activity rows are replaced, not added to.
type activityMinute struct {
	queues map[string]*queueMinute
	worker queue.ActivityCounts
	gauges queue.WorkerGauges

	system        queue.SystemSample
	systemSamples int64
}

type queueMinute struct {
	counts    queue.ActivityCounts
	parkedSum int64
	parkedMax int64
}

func newActivity(hostname, workerID string, pid int, now time.Time) *activity {
	return &activity{
		hostname: hostname, workerID: workerID, pid: pid, started: now,
		minutes: make(map[time.Time]*activityMinute),
		queues:  make(map[string]*queue.ActivityCounts),
	}
}

// minute returns the bucket of t, creating it. Callers hold a.mu. Creating one drops
// the oldest beyond maxPendingMinutes, so memory stays bounded even when nothing
// flushes (Run not running, database refusing).
func (a *activity) minute(t time.Time) *activityMinute {
	key := t.UTC().Truncate(time.Minute)
	m := a.minutes[key]
	if m == nil {
		m = &activityMinute{queues: make(map[string]*queueMinute), system: make(queue.SystemSample)}
		a.minutes[key] = m
		a.dropOldest()
	}
	a.rollRates(key)
	return m
}

// dropOldest drops the oldest minutes beyond maxPendingMinutes+1 (the closed ones
// kept for a retry, plus the current one) and counts them. Callers hold a.mu.
func (a *activity) dropOldest() int {
	if len(a.minutes) <= maxPendingMinutes+1 {
		return 0
	}
	keys := slices.SortedFunc(maps.Keys(a.minutes), time.Time.Compare)
	n := len(keys) - (maxPendingMinutes + 1)
	for _, k := range keys[:n] {
		delete(a.minutes, k)
	}
	a.dropped += int64(n)
	return n
}

// rollRates moves the rate window to minute m. Callers hold a.mu.
func (a *activity) rollRates(m time.Time) {
	if !m.After(a.rateMinute) {
		return
	}
	if m.Equal(a.rateMinute.Add(time.Minute)) {
		a.rateLast = a.rateCur
	} else {
		a.rateLast = queue.ActivityCounts{}
	}
	a.rateCur = queue.ActivityCounts{}
	a.rateMinute = m
}

func (m *activityMinute) queueOf(name string) *queueMinute {
	q := m.queues[name]
	if q == nil {
		q = &queueMinute{}
		m.queues[name] = q
	}
	return q
}

// add records worker-level counts w and per-queue counts byQueue at now.
func (a *activity) add(now time.Time, w queue.ActivityCounts, byQueue map[string]queue.ActivityCounts) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.minute(now)
	m.worker.Add(w)
	a.total.Add(w)
	a.rateCur.Add(w)
	for name, c := range byQueue {
		if name == "" {
			continue
		}
		m.queueOf(name).counts.Add(c)
		lt := a.queues[name]
		if lt == nil {
			if len(a.queues) >= maxLifetimeQueues {
				continue
			}
			lt = &queue.ActivityCounts{}
			a.queues[name] = lt
		}
		lt.Add(c)
	}
}

// recordPush counts one /push request and the items it stored as new messages.
func (a *activity) recordPush(now time.Time, results []queue.PushResult) {
	w := queue.ActivityCounts{PushRequests: 1}
	byQueue := make(map[string]queue.ActivityCounts, 1)
	for _, r := range results {
		c := byQueue[r.Queue]
		c.PushRequests = 1
		if r.Status == queue.StatusQueued {
			c.PushMessages++
			w.PushMessages++
		}
		byQueue[r.Queue] = c
	}
	a.add(now, w, byQueue)
}

// recordPop counts one pop request and what it delivered: the lag of each message
// is now minus its createdAt. A failure other than the client leaving is a database
// error.
func (a *activity) recordPop(now time.Time, req queue.PopRequest, res queue.PopResult, err error) {
	c := queue.ActivityCounts{PopRequests: 1}
	if len(res.Messages) == 0 {
		c.PopEmpty = 1
	}
	for _, msg := range res.Messages {
		lag := max(now.Sub(msg.CreatedAt).Milliseconds(), 0)
		c.PopMessages++
		c.LagCount++
		c.LagSumMs += lag
		c.LagMaxMs = max(c.LagMaxMs, lag)
	}
	if req.AutoAck {
		c.AutoAcked = c.PopMessages
	}
	w := c
	if isDBError(err) {
		w.DBErrors = 1
	}
	name := res.Queue
	if name == "" {
		name = req.Queue
	}
	a.add(now, w, map[string]queue.ActivityCounts{name: c})
}

// recordAck counts one ack request: acks[i] was answered results[i]. Items that
// completed their message are successes; all others (negative acks, refused items)
// are failures.
func (a *activity) recordAck(now time.Time, acks []queue.Ack, results []queue.AckResult) {
	w := queue.ActivityCounts{AckRequests: 1}
	byQueue := make(map[string]queue.ActivityCounts, 1)
	for i, r := range results {
		status := ""
		if i < len(acks) {
			status = acks[i].Status
		}
		c := ackCounts(status, r.Success, r.DLQ)
		w.Add(c)
		q := byQueue[r.QueueName]
		q.Add(c)
		q.AckRequests = 1
		byQueue[r.QueueName] = q
	}
	a.add(now, w, byQueue)
}

func ackCounts(status string, success, dlq bool) queue.ActivityCounts {
	c := queue.ActivityCounts{AckMessages: 1}
	switch strings.ToLower(status) {
	case "", queue.AckCompleted, queue.AckSuccess:
		if success {
			c.AckSuccess = 1
			break
		}
		c.AckFailed = 1
	default:
		c.AckFailed = 1
	}
	if dlq {
		c.DLQ = 1
	}
	return c
}

// recordTransaction counts one /transaction request; when it committed, its pushed
// messages and acks count too (without counting as push or ack requests).
func (a *activity) recordTransaction(now time.Time, ops []queue.TxOp, res queue.TxResult, err error) {
	w := queue.ActivityCounts{Transactions: 1}
	if isDBError(err) {
		w.DBErrors = 1
	}
	byQueue := make(map[string]queue.ActivityCounts, 1)
	for _, op := range ops {
		for _, it := range op.Push {
			c := byQueue[it.Queue]
			c.Transactions = 1
			byQueue[it.Queue] = c
		}
	}
	if err == nil && res.Success {
		ackOps := make([]queue.Ack, 0, len(ops))
		for _, op := range ops {
			if op.Type == "ack" {
				ackOps = append(ackOps, op.Ack)
			}
		}
		k := 0
		for _, r := range res.Results {
			switch r.Type {
			case "push":
				w.PushMessages++
				c := byQueue[r.QueueName]
				c.PushMessages++
				byQueue[r.QueueName] = c
			case "ack":
				status := ""
				if k < len(ackOps) {
					status = ackOps[k].Status
				}
				k++
				w.Add(ackCounts(status, r.Success, r.DLQ))
			}
		}
	}
	a.add(now, w, byQueue)
}

// recordDBError counts a request that failed in the database.
func (a *activity) recordDBError(now time.Time, err error) {
	if isDBError(err) {
		a.add(now, queue.ActivityCounts{DBErrors: 1}, nil)
	}
}

// isDBError reports whether err is a failure of the database rather than of the
// request (invalid input, client gone).
func isDBError(err error) bool {
	var ve *queue.ValidationError
	switch {
	case err == nil, errors.As(err, &ve), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, queue.ErrNotFound),
		errors.Is(err, queue.ErrConflict), errors.Is(err, queue.ErrNotSupported):
		return false
	}
	// An UnavailableError is a refusal by this broker (push maintenance), not a
	// database failure.
	var ue *queue.UnavailableError
	return !errors.As(err, &ue)
}

// gaugeSample is one 1 Hz reading of the process gauges.
type gaugeSample struct {
	at        time.Time
	lagMs     float64
	parked    map[string]int
	parkedAll int
	freeSlots int64
	poolSize  int64
	system    queue.SystemSample
}

// observe adds one gauge sample to the current minute.
func (a *activity) observe(s gaugeSample) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.minute(s.at)
	m.gauges.Add(queue.WorkerGauges{
		Samples: 1, EventLoopLagSumMs: s.lagMs, EventLoopLagMaxMs: s.lagMs,
		FreeSlotsSum: s.freeSlots, FreeSlotsMin: s.freeSlots, DBConnections: s.poolSize,
		ParkedSum: int64(s.parkedAll), ParkedMax: int64(s.parkedAll),
	})
	for name, n := range s.parked {
		q := m.queueOf(name)
		q.parkedSum += int64(n)
		q.parkedMax = max(q.parkedMax, int64(n))
	}
	m.system.Merge(s.system, 1)
	m.systemSamples++
}

// ActivityRates are per-second rates over the last complete minute of this process.
type ActivityRates struct {
	// Minute is the start of the minute the rates cover.
	Minute                time.Time
	PushRequestsPerSecond float64
	PushMessagesPerSecond float64
	PopRequestsPerSecond  float64
	PopMessagesPerSecond  float64
	EmptyPopsPerSecond    float64
	AckRequestsPerSecond  float64
	AckMessagesPerSecond  float64
	// ProcessedPerSecond counts completed acks and autoAck deliveries.
	ProcessedPerSecond    float64
	TransactionsPerSecond float64
	DBErrorsPerSecond     float64
	// AvgLagMs and MaxLagMs describe the pop lag of that minute's deliveries.
	AvgLagMs float64
	MaxLagMs int64
}

// ActivitySnapshot is this process's activity: lifetime totals, per queue and
// overall, and the rates of the last complete minute.
type ActivitySnapshot struct {
	Hostname string
	WorkerID string
	PID      int
	// Since is when the process's broker was created; totals count from then.
	Since time.Time
	// Total counts every request of the process (requests without a queue included).
	Total queue.ActivityCounts
	// Queues holds lifetime totals per queue name (at most 10000 queues).
	Queues map[string]queue.ActivityCounts
	Rates  ActivityRates
	// Parked is the number of long-polls parked right now.
	Parked int
	// LastFlush is when counters last reached the database (zero: never).
	LastFlush time.Time
	// PendingMinutes counts minutes held in memory, not yet written; DroppedMinutes
	// counts minutes dropped because the database refused them for too long.
	PendingMinutes int
	DroppedMinutes int64
}

// Activity returns a snapshot of this process's activity counters (for metrics and
// logs). It runs no SQL.
func (b *Broker) Activity() ActivitySnapshot {
	a := b.activity
	now := time.Now()
	a.mu.Lock()
	a.rollRates(now.UTC().Truncate(time.Minute))
	snap := ActivitySnapshot{
		Hostname: a.hostname, WorkerID: a.workerID, PID: a.pid, Since: a.started, Total: a.total,
		Queues: make(map[string]queue.ActivityCounts, len(a.queues)), LastFlush: a.lastFlush,
		PendingMinutes: len(a.minutes), DroppedMinutes: a.dropped,
	}
	for name, c := range a.queues {
		snap.Queues[name] = *c
	}
	snap.Rates = ratesOf(a.rateMinute.Add(-time.Minute), a.rateLast)
	a.mu.Unlock()
	snap.Parked = b.waiters.count()
	return snap
}

func ratesOf(minute time.Time, c queue.ActivityCounts) ActivityRates {
	per := func(n int64) float64 { return float64(n) / time.Minute.Seconds() }
	return ActivityRates{
		Minute:                minute,
		PushRequestsPerSecond: per(c.PushRequests), PushMessagesPerSecond: per(c.PushMessages),
		PopRequestsPerSecond: per(c.PopRequests), PopMessagesPerSecond: per(c.PopMessages),
		EmptyPopsPerSecond: per(c.PopEmpty), AckRequestsPerSecond: per(c.AckRequests),
		AckMessagesPerSecond: per(c.AckMessages), ProcessedPerSecond: per(c.Processed()),
		TransactionsPerSecond: per(c.Transactions), DBErrorsPerSecond: per(c.DBErrors),
		AvgLagMs: c.AvgLagMs(), MaxLagMs: c.LagMaxMs,
	}
}
