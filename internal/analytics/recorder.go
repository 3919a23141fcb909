package analytics

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Recorder bounds and timing.
const (
	// activitySampleInterval is the gauge sampling period (parked long-polls, pool,
	// scheduler delay, process stats); parked averages assume it divides a minute.
	activitySampleInterval = time.Second
	samplesPerMinute       = int64(time.Minute / activitySampleInterval)
	// maxPendingMinutes bounds the closed buckets kept while the database refuses
	// flushes, in minutes of buckets; older ones are dropped (and counted).
	maxPendingMinutes = 15
	// maxLifetimeQueues bounds the per-queue lifetime totals, and the queues of one
	// bucket that moved no message; activity of further queues still counts in the
	// process totals.
	maxLifetimeQueues = 10000
	// activityFlushTimeout bounds one flush; activityRetryInterval spaces retries
	// after a failed one.
	activityFlushTimeout  = 10 * time.Second
	activityRetryInterval = 10 * time.Second
	// finalFlushTimeout bounds the flush on shutdown, which delays the exit.
	finalFlushTimeout = 3 * time.Second
)

// recorder is the in-process recorder behind the analytics tables.
// The request paths add to buckets of width (a minute by default) under one mutex and
// never run SQL; the flush loop started by Service.Run writes each closed bucket to
// queue_activity, worker_activity, queue_parked_activity and system_activity, adding
// to whatever other processes wrote for the same bucket.
type recorder struct {
	hostname string
	workerID string
	pid      int
	started  time.Time
	// width is the bucket width; it divides a minute. maxPending is the closed
	// buckets kept for a retry: maxPendingMinutes minutes of buckets.
	width      time.Duration
	maxPending int

	mu      sync.Mutex
	buckets map[time.Time]*activityBucket
	total   store.ActivityCounts
	queues  map[string]*store.ActivityCounts
	// rateMinute is the minute rateCur counts; rateLast is the previous minute.
	rateMinute time.Time
	rateCur    store.ActivityCounts
	rateLast   store.ActivityCounts
	lastFlush  time.Time
	dropped    int64
}

// activityBucket is one bucket of one process. Counters and gauge sums are reset when
// flushed (the tables add them up); system holds the whole bucket's process samples,
// because system_activity rows are replaced, not added to.
type activityBucket struct {
	queues map[string]*queueBucket
	worker store.ActivityCounts
	gauges store.WorkerGauges

	system        systemSample
	systemSamples int64
}

type queueBucket struct {
	counts    store.ActivityCounts
	parkedSum int64
	parkedMax int64
}

// newRecorder returns a recorder of buckets of width, which must be positive and
// divide a minute.
func newRecorder(hostname, workerID string, pid int, now time.Time, width time.Duration) *recorder {
	if width <= 0 || time.Minute%width != 0 {
		panic("analytics: Config.Bucket must be positive and divide a minute") // programmer error: config validates it
	}
	return &recorder{
		hostname: hostname, workerID: workerID, pid: pid, started: now,
		width: width, maxPending: maxPendingMinutes * int(time.Minute/width),
		buckets: make(map[time.Time]*activityBucket),
		queues:  make(map[string]*store.ActivityCounts),
	}
}

// bucketAt returns the bucket of t, creating it. Callers hold rc.mu. Creating one
// drops the oldest beyond maxPending, so memory stays bounded even when nothing
// flushes (Run not running, database refusing).
func (rc *recorder) bucketAt(t time.Time) *activityBucket {
	key := rc.keyOf(t)
	m := rc.buckets[key]
	if m == nil {
		m = &activityBucket{queues: make(map[string]*queueBucket), system: make(systemSample)}
		rc.buckets[key] = m
		rc.dropOldest()
	}
	rc.rollRates(t.UTC().Truncate(time.Minute))
	return m
}

// keyOf is the start of t's bucket.
func (rc *recorder) keyOf(t time.Time) time.Time { return t.UTC().Truncate(rc.width) }

// dropOldest drops the oldest buckets beyond maxPending+1 (the closed ones kept for a
// retry, plus the current one) and counts them. Callers hold rc.mu.
func (rc *recorder) dropOldest() int {
	if len(rc.buckets) <= rc.maxPending+1 {
		return 0
	}
	keys := slices.SortedFunc(maps.Keys(rc.buckets), time.Time.Compare)
	n := len(keys) - (rc.maxPending + 1)
	for _, k := range keys[:n] {
		delete(rc.buckets, k)
	}
	rc.dropped += int64(n)
	return n
}

// rollRates moves the rate window to minute m. Callers hold rc.mu.
func (rc *recorder) rollRates(m time.Time) {
	if !m.After(rc.rateMinute) {
		return
	}
	if m.Equal(rc.rateMinute.Add(time.Minute)) {
		rc.rateLast = rc.rateCur
	} else {
		rc.rateLast = store.ActivityCounts{}
	}
	rc.rateCur = store.ActivityCounts{}
	rc.rateMinute = m
}

func (m *activityBucket) queueOf(name string) *queueBucket {
	q := m.queues[name]
	if q == nil {
		q = &queueBucket{}
		m.queues[name] = q
	}
	return q
}

// add records worker-level counts w and per-queue counts byQueue at now.
func (rc *recorder) add(now time.Time, w store.ActivityCounts, byQueue map[string]store.ActivityCounts) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m := rc.bucketAt(now)
	m.worker.Add(w)
	rc.total.Add(w)
	rc.rateCur.Add(w)
	for name, c := range byQueue {
		if name == "" {
			continue
		}
		// A bucket takes any queue that moved a message, and up to the bound others.
		if m.queues[name] != nil || movedMessages(c) || len(m.queues) < maxLifetimeQueues {
			m.queueOf(name).counts.Add(c)
		}
		lt := rc.queues[name]
		if lt == nil {
			// The lifetime totals hold what the per-queue metric families export. A
			// request that moved no message (an empty pop, whose name may be no queue
			// at all) adds nothing to them and makes no entry, so pops of unknown names
			// cannot crowd real queues out of the bound or the exported series.
			if !movedMessages(c) || len(rc.queues) >= maxLifetimeQueues {
				continue
			}
			lt = &store.ActivityCounts{}
			rc.queues[name] = lt
		}
		lt.Add(c)
	}
}

// movedMessages reports counts that stored, delivered, acknowledged or dead-lettered
// a message: the counters of a queue's lifetime totals that can be non-zero.
func movedMessages(c store.ActivityCounts) bool {
	return c.PushMessages != 0 || c.PopMessages != 0 || c.AckSuccess != 0 || c.AckFailed != 0 || c.DLQ != 0
}

// recordPush counts one /push request and the items it stored as new messages.
func (rc *recorder) recordPush(now time.Time, results []queue.PushResult) {
	w := store.ActivityCounts{PushRequests: 1}
	byQueue := make(map[string]store.ActivityCounts, 1)
	for _, r := range results {
		c := byQueue[r.Queue]
		c.PushRequests = 1
		if r.Status == queue.StatusQueued {
			c.PushMessages++
			w.PushMessages++
		}
		byQueue[r.Queue] = c
	}
	rc.add(now, w, byQueue)
}

// recordPop counts one pop request and what it delivered: the lag of each message
// is now minus its createdAt. A failure other than the client leaving is a database
// error.
func (rc *recorder) recordPop(now time.Time, req queue.PopRequest, res queue.PopResult, err error) {
	c := store.ActivityCounts{PopRequests: 1}
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
	rc.add(now, w, map[string]store.ActivityCounts{name: c})
}

// recordAck counts one ack request: acks[i] was answered results[i]. Items that
// completed their message are successes; all others (negative acks, refused items)
// are failures.
func (rc *recorder) recordAck(now time.Time, acks []queue.Ack, results []queue.AckResult) {
	w := store.ActivityCounts{AckRequests: 1}
	byQueue := make(map[string]store.ActivityCounts, 1)
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
	rc.add(now, w, byQueue)
}

func ackCounts(status string, success, dlq bool) store.ActivityCounts {
	c := store.ActivityCounts{AckMessages: 1}
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
func (rc *recorder) recordTransaction(now time.Time, ops []queue.TxOp, res queue.TxResult, err error) {
	w := store.ActivityCounts{Transactions: 1}
	if isDBError(err) {
		w.DBErrors = 1
	}
	byQueue := make(map[string]store.ActivityCounts, 1)
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
	rc.add(now, w, byQueue)
}

// recordCycle counts a committed cycle in the analytics: its stored sink messages as
// pushed messages of their queues and its ack as acks of the source queue (without
// counting the cycle as a push or ack request).
func (rc *recorder) recordCycle(now time.Time, c queue.StreamCycle, res queue.StreamCycleResult) {
	var w store.ActivityCounts
	byQueue := make(map[string]store.ActivityCounts, 2)
	for _, p := range res.Push {
		if p.Status == queue.StatusQueued {
			w.PushMessages++
			q := byQueue[p.Queue]
			q.PushMessages++
			byQueue[p.Queue] = q
		}
	}
	if res.Ack != nil && c.Ack != nil {
		n := max(res.Ack.Count, 1)
		ack := store.ActivityCounts{AckMessages: n}
		if res.Ack.DLQ {
			ack.AckFailed, ack.DLQ = n, res.Ack.DeadLettered
		} else {
			ack.AckSuccess = n
		}
		w.Add(ack)
		q := byQueue[res.SourceQueue]
		q.Add(ack)
		byQueue[res.SourceQueue] = q
	}
	rc.add(now, w, byQueue)
}

// recordDBError counts a request that failed in the database.
func (rc *recorder) recordDBError(now time.Time, err error) {
	if isDBError(err) {
		rc.add(now, store.ActivityCounts{DBErrors: 1}, nil)
	}
}

// isDBError reports whether err is a failure of the database rather than of the
// request (invalid input, client gone).
func isDBError(err error) bool {
	var ve *queue.ValidationError
	switch {
	case err == nil, errors.As(err, &ve), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, queue.ErrNotFound),
		errors.Is(err, queue.ErrConflict):
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
	system    systemSample
}

// observe adds one gauge sample to the current bucket.
func (rc *recorder) observe(s gaugeSample) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m := rc.bucketAt(s.at)
	m.gauges.Add(store.WorkerGauges{
		Samples: 1, EventLoopLagSumMs: s.lagMs, EventLoopLagMaxMs: s.lagMs,
		FreeSlotsSum: s.freeSlots, FreeSlotsMin: s.freeSlots, DBConnections: s.poolSize,
		ParkedSum: int64(s.parkedAll), ParkedMax: int64(s.parkedAll),
	})
	for name, n := range s.parked {
		q := m.queueOf(name)
		q.parkedSum += int64(n)
		q.parkedMax = max(q.parkedMax, int64(n))
	}
	m.system.merge(s.system, 1)
	m.systemSamples++
}
