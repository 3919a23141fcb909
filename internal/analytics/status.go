package analytics

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// throughput accumulates one bucket of the /status throughput series.
type throughput struct {
	// queues sums queue_activity over the view's queues; workers and gauges sum
	// worker_activity over every broker process (not filterable by queue).
	queues  store.ActivityCounts
	workers store.ActivityCounts
	gauges  store.WorkerGauges
	// The rest sums, over processes, the bucket averages of system_activity.
	cpuUserPct, cpuSysPct, rssMB, poolActive, poolIdle, poolSize float64
}

// Status builds GET /api/v1/status for f's window (default the last hour), Queue,
// Namespace, Task and Scope. Throughput comes from the flushed per-minute activity of
// every broker (the current minute appears once flushed); the other sections are live
// SQL over the window. A tenant scope counts its queues only and gets none of the
// per-broker parts: no workers, and zero (minFreeSlots null) for the process gauges,
// CPU, memory, pool and database errors of the throughput series and errors.
func (s *Service) Status(ctx context.Context, f Filter) (api.StatusResponse, error) {
	w, err := viewWindow(f, defaultWindow, s.rec.width, "queue", "namespace", "task")
	if err != nil {
		return api.StatusResponse{}, err
	}
	scope := w.series(Filter{Queue: f.Queue, Namespace: f.Namespace, Task: f.Task, Scope: f.Scope})
	qrows, err := s.store.QueueActivitySeries(ctx, scope)
	if err != nil {
		return api.StatusResponse{}, err
	}
	var wrows []store.WorkerActivity
	var srows []store.SystemActivity
	if f.Scope.IsGlobal() {
		if wrows, err = s.store.WorkerActivitySeries(ctx, w.series(Filter{})); err != nil {
			return api.StatusResponse{}, err
		}
		if srows, err = s.store.SystemActivityList(ctx, w.series(Filter{})); err != nil {
			return api.StatusResponse{}, err
		}
	}
	snap, err := s.store.StatusSnapshot(ctx, scope)
	if err != nil {
		return api.StatusResponse{}, err
	}
	points := make(map[time.Time]*throughput)
	for _, t := range w.Buckets() {
		points[t] = &throughput{}
	}
	var queueTotal, workerTotal store.ActivityCounts
	for _, r := range qrows {
		queueTotal.Add(r.ActivityCounts)
		if p := points[r.Bucket]; p != nil {
			p.queues.Add(r.ActivityCounts)
		}
	}
	for _, r := range wrows {
		workerTotal.Add(r.ActivityCounts)
		if p := points[r.Bucket]; p != nil {
			p.workers.Add(r.ActivityCounts)
			p.gauges.Add(r.WorkerGauges)
		}
	}
	buckets, err := systemBuckets(srows, w.Bucket)
	if err != nil {
		return api.StatusResponse{}, err
	}
	for bucket, byReplica := range buckets {
		p := points[bucket]
		if p == nil {
			continue
		}
		for _, m := range byReplica {
			p.cpuUserPct += m["cpu"]["user_us"].Avg / 1e4
			p.cpuSysPct += m["cpu"]["system_us"].Avg / 1e4
			p.rssMB += m["memory"]["rss_bytes"].Avg / (1 << 20)
			p.poolActive += m["database"]["pool_active"].Avg
			p.poolIdle += m["database"]["pool_idle"].Avg
			p.poolSize += m["database"]["pool_size"].Avg
		}
	}
	req := workerTotal
	if f.Queue != "" || f.Namespace != "" || f.Task != "" || !f.Scope.IsGlobal() {
		req = queueTotal
	}
	out := api.StatusResponse{TimeRange: w.timeRange(), BucketMinutes: w.Minutes(), BucketSeconds: w.Seconds(),
		StatsAge: s.statsAge(), Workers: workerStatuses(wrows)}
	for _, t := range w.Buckets() {
		out.Throughput = append(out.Throughput, throughputPoint(w, t, points[t]))
	}
	out.PointCount = len(out.Throughput)
	for _, q := range snap.Queues {
		out.Queues = append(out.Queues, api.StatusQueue{ID: q.ID, Name: f.Scope.Relative(q.Name), Namespace: q.Namespace,
			Task: q.Task, Partitions: q.Partitions, TotalConsumed: q.TotalConsumed})
	}
	m := snap.Messages
	out.Messages = api.StatusMessages{
		Total: m.Total, Pending: m.Pending, Processing: m.Processing, Completed: m.Completed, Failed: m.Failed,
		DeadLetter: m.DeadLetter,
		Requests:   api.RequestCounts{Push: req.PushRequests, Pop: req.PopRequests, Ack: req.AckRequests},
		BatchEfficiency: api.BatchEfficiency{Push: ratioOf(req.PushMessages, req.PushRequests),
			Pop: ratioOf(req.PopMessages, req.PopRequests), Ack: ratioOf(req.AckMessages, req.AckRequests)},
	}
	l := snap.Leases
	out.Leases = api.StatusLeases{Active: l.Active, PartitionsWithLeases: l.PartitionsWithLeases,
		TotalBatchSize: l.TotalBatchSize, TotalAcked: l.TotalAcked}
	d := snap.DLQ
	out.DeadLetterQueue = api.StatusDLQ{TotalMessages: d.TotalMessages, AffectedPartitions: d.AffectedPartitions}
	for _, e := range d.TopErrors {
		out.DeadLetterQueue.TopErrors = append(out.DeadLetterQueue.TopErrors, api.ErrorCount{Error: e.Message, Count: e.Count})
	}
	out.Errors = api.StatusErrors{DBErrors: workerTotal.DBErrors, AckFailed: req.AckFailed, DLQMessages: req.DLQ}
	if out.ConsumerGroups, err = s.consumerGroups(ctx, f); err != nil {
		return api.StatusResponse{}, err
	}
	return out, nil
}

// throughputPoint renders bucket t of the throughput series.
func throughputPoint(w window, t time.Time, p *throughput) api.ThroughputPoint {
	q, g := p.queues, p.gauges
	return api.ThroughputPoint{
		Timestamp: api.FormatSeconds(t), Ingested: q.PushMessages, Processed: q.Processed(), PopMessages: q.PopMessages,
		IngestedPerSecond: w.perSecond(q.PushMessages), ProcessedPerSecond: w.perSecond(q.Processed()),
		PopPerSecond: w.perSecond(q.PopMessages), AvgLagMs: q.AvgLagMs(), MaxLagMs: q.LagMaxMs,
		AvgEventLoopLagMs: g.AvgEventLoopLagMs(), MaxEventLoopLagMs: g.EventLoopLagMaxMs,
		MinFreeSlots: minFreeSlots(g), DBErrors: p.workers.DBErrors, AckFailed: q.AckFailed, DLQCount: q.DLQ,
		QueenCPUUserPct: p.cpuUserPct, QueenCPUSysPct: p.cpuSysPct, QueenRSSMB: p.rssMB,
		DBPoolActive: p.poolActive, DBPoolIdle: p.poolIdle, DBPoolSize: p.poolSize,
	}
}

// MessageCounts builds GET /api/v1/status/analytics: the messages created per
// interval ("minute", "hour" or "day"; "" = hour) in f's window (default the last
// 24 h), Queue, Namespace, Task and Scope, oldest first, zero-filled.
func (s *Service) MessageCounts(ctx context.Context, f Filter, interval string) (api.MessageAnalytics, error) {
	if interval == "" {
		interval = "hour"
	}
	if err := checkFilters(f, "queue", "namespace", "task"); err != nil {
		return api.MessageAnalytics{}, err
	}
	bucket, ok := intervalBucket(interval)
	if !ok {
		return api.MessageAnalytics{}, queue.Invalid("interval", "interval must be minute, hour or day")
	}
	w, err := newWindow(f.From, f.To, defaultCountWindow, bucket, time.Minute)
	if err != nil {
		return api.MessageAnalytics{}, err
	}
	// Counts cover the whole window asked for: its first bucket is partial rather than
	// dropped (a day bucket would otherwise lose up to a day of a "last 24 h" view).
	if from := f.From; !from.IsZero() {
		w.From = from.UTC()
	} else {
		w.From = w.To.Add(-defaultCountWindow)
	}
	if w.To.Sub(w.From)/bucket > maxCountPoints {
		return api.MessageAnalytics{}, queue.Invalid("interval",
			"from..to holds more than %d %ss; use a wider interval", maxCountPoints, interval)
	}
	rows, err := s.store.MessageCreationCounts(ctx, w.series(f), interval)
	if err != nil {
		return api.MessageAnalytics{}, err
	}
	counts := make(map[time.Time]int64, len(rows))
	for _, r := range rows {
		counts[r.Bucket] = r.Count
	}
	buckets := w.Buckets()
	slices.Reverse(buckets)
	out := api.MessageAnalytics{Interval: interval, From: api.FormatMillis(w.From), To: api.FormatMillis(w.To)}
	for _, t := range buckets {
		out.DataPoints = append(out.DataPoints, api.DataPoint{Timestamp: api.FormatSeconds(t), Messages: counts[t]})
	}
	return out, nil
}

// statsAge is seconds since this process last flushed its activity, or -1.
func (s *Service) statsAge() int64 {
	s.rec.mu.Lock()
	last := s.rec.lastFlush
	s.rec.mu.Unlock()
	if last.IsZero() {
		return -1
	}
	return int64(time.Since(last) / time.Second)
}

type replicaKey struct{ hostname, workerID string }

// systemBuckets merges per-minute system_activity rows into buckets per replica.
func systemBuckets(rows []store.SystemActivity, bucket time.Duration) (map[time.Time]map[replicaKey]systemSample, error) {
	out := make(map[time.Time]map[replicaKey]systemSample)
	for _, r := range rows {
		metrics, err := decodeSample(r.Metrics, r.Samples, r.Bucket)
		if err != nil {
			return nil, err
		}
		t := r.Bucket.Truncate(bucket)
		byReplica := out[t]
		if byReplica == nil {
			byReplica = make(map[replicaKey]systemSample)
			out[t] = byReplica
		}
		k := replicaKey{r.Hostname, r.WorkerID}
		m := byReplica[k]
		if m == nil {
			m = make(systemSample)
			byReplica[k] = m
		}
		m.merge(metrics, r.Samples)
	}
	return out, nil
}

// workerSummary aggregates one broker process (hostname, worker id) over a window.
type workerSummary struct {
	hostname, workerID string
	counts             store.ActivityCounts
	gauges             store.WorkerGauges
	// lastFreeSlots and lastParked are the averages of the newest bucket.
	lastFreeSlots, lastParked float64
	lastSeen                  time.Time
}

// workerStatuses summarises worker rows (newest first) per process, by hostname then
// worker id.
func workerStatuses(rows []store.WorkerActivity) []api.WorkerStatus {
	byKey := make(map[replicaKey]*workerSummary)
	for _, r := range rows {
		k := replicaKey{r.Hostname, r.WorkerID}
		s := byKey[k]
		if s == nil {
			s = &workerSummary{hostname: r.Hostname, workerID: r.WorkerID,
				lastFreeSlots: r.AvgFreeSlots(), lastParked: r.AvgParked()}
			byKey[k] = s
		}
		s.counts.Add(r.ActivityCounts)
		s.gauges.Add(r.WorkerGauges)
		if r.LastSeen.After(s.lastSeen) {
			s.lastSeen = r.LastSeen
		}
	}
	sums := make([]*workerSummary, 0, len(byKey))
	for _, s := range byKey {
		sums = append(sums, s)
	}
	slices.SortFunc(sums, func(a, b *workerSummary) int {
		return cmp.Or(cmp.Compare(a.hostname, b.hostname), cmp.Compare(a.workerID, b.workerID))
	})
	out := make([]api.WorkerStatus, 0, len(sums))
	for _, s := range sums {
		out = append(out, api.WorkerStatus{
			Hostname: s.hostname, WorkerID: s.workerID, AvgEventLoopLagMs: s.gauges.AvgEventLoopLagMs(),
			MaxEventLoopLagMs: s.gauges.EventLoopLagMaxMs, FreeSlots: s.lastFreeSlots,
			DBConnections: s.gauges.DBConnections, BackoffSize: s.lastParked,
			MessagesProcessed: s.counts.PushMessages + s.counts.PopMessages, LastSeen: api.FormatMillis(s.lastSeen),
		})
	}
	return out
}

// minFreeSlots is the bucket's lowest free-slot sample, nil without samples.
func minFreeSlots(g store.WorkerGauges) *int64 {
	if g.Samples == 0 {
		return nil
	}
	v := g.FreeSlotsMin
	return &v
}

func ratioOf(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}
