package analytics

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/store"
)

// The /api/v1/analytics/* views read the per-minute tables the brokers' recorders
// fill (system_activity, worker_activity, queue_activity, queue_parked_activity),
// retention_history and the PostgreSQL statistics views. Every read is bounded by its
// window (default the last hour, at most 366 days) and a row limit.

// readSeries checks the named filters of f, opens its window (the last hour by
// default) and reads that window's rows with read.
func readSeries[T any](ctx context.Context, f Filter, finest time.Duration,
	read func(context.Context, store.SeriesFilter) ([]T, error), filters ...string) (window, []T, error) {
	w, err := viewWindow(f, defaultWindow, finest, filters...)
	if err != nil {
		return window{}, nil, err
	}
	rows, err := read(ctx, w.series(f))
	return w, rows, err
}

// SystemMetrics builds GET /api/v1/analytics/system-metrics for f's window, Hostname
// and WorkerID: per broker process, a series of {avg,min,max,last} summaries of its
// 1 Hz process samples, oldest bucket first.
func (s *Service) SystemMetrics(ctx context.Context, f Filter) (api.SystemMetrics, error) {
	w, rows, err := readSeries(ctx, f, s.rec.width, s.store.SystemActivityList, "hostname", "workerId")
	if err != nil {
		return api.SystemMetrics{}, err
	}
	type acc struct {
		samples int64
		metrics systemSample
	}
	series := make(map[replicaKey]map[time.Time]*acc)
	for _, r := range rows {
		metrics, err := decodeSample(r.Metrics, r.Samples, r.Bucket)
		if err != nil {
			return api.SystemMetrics{}, err
		}
		k := replicaKey{r.Hostname, r.WorkerID}
		if series[k] == nil {
			series[k] = make(map[time.Time]*acc)
		}
		t := r.Bucket.Truncate(w.Bucket)
		a := series[k][t]
		if a == nil {
			a = &acc{metrics: make(systemSample)}
			series[k][t] = a
		}
		a.samples += r.Samples
		a.metrics.merge(metrics, r.Samples)
	}
	keys := slices.SortedFunc(maps.Keys(series), func(a, b replicaKey) int {
		return cmp.Or(cmp.Compare(a.hostname, b.hostname), cmp.Compare(a.workerID, b.workerID))
	})
	out := api.SystemMetrics{TimeRange: w.timeRange(), ReplicaCount: len(keys), BucketMinutes: w.Minutes(),
		BucketSeconds: w.Seconds(), PointCount: len(w.Buckets())}
	for _, k := range keys {
		rep := api.SystemReplica{Hostname: k.hostname, WorkerID: k.workerID, TimeSeries: []api.SystemPoint{}}
		for _, t := range slices.SortedFunc(maps.Keys(series[k]), time.Time.Compare) {
			a := series[k][t]
			rep.TimeSeries = append(rep.TimeSeries, api.SystemPoint{Timestamp: api.FormatSeconds(t),
				SampleCount: a.samples, Metrics: a.metrics.wire()})
		}
		out.Replicas = append(out.Replicas, rep)
	}
	return out, nil
}

// WorkerMetrics builds GET /api/v1/analytics/worker-metrics for f's window, Hostname
// and WorkerID: the series summed over processes (newest first), each process's
// summary, every queue's pop lag and the window's totals. The series holds only the
// buckets some broker process wrote (one does for every bucket it runs through, idle
// or not): a bucket in which no broker ran is absent, not zero, so a chart shows the
// outage as a gap. pointCount counts the buckets present.
func (s *Service) WorkerMetrics(ctx context.Context, f Filter) (api.WorkerMetrics, error) {
	w, wrows, err := readSeries(ctx, f, s.rec.width, s.store.WorkerActivitySeries, "hostname", "workerId")
	if err != nil {
		return api.WorkerMetrics{}, err
	}
	qrows, err := s.store.QueueActivitySeries(ctx, w.series(Filter{}))
	if err != nil {
		return api.WorkerMetrics{}, err
	}
	counters, err := s.store.MessageCounters(ctx, w.series(Filter{}))
	if err != nil {
		return api.WorkerMetrics{}, err
	}
	type point struct {
		counts store.ActivityCounts
		gauges store.WorkerGauges
	}
	points := make(map[time.Time]*point)
	var t store.ActivityCounts
	for _, r := range wrows {
		t.Add(r.ActivityCounts)
		p := points[r.Bucket]
		if p == nil {
			p = &point{}
			points[r.Bucket] = p
		}
		p.counts.Add(r.ActivityCounts)
		p.gauges.Add(r.WorkerGauges)
	}
	out := api.WorkerMetrics{TimeRange: w.timeRange(), BucketMinutes: w.Minutes(), BucketSeconds: w.Seconds(),
		Workers: workerStatuses(wrows), Queues: queueLags(qrows)}
	for _, bucket := range w.Buckets() {
		p := points[bucket]
		if p == nil {
			continue
		}
		c, g := p.counts, p.gauges
		out.TimeSeries = append(out.TimeSeries, api.WorkerPoint{
			Timestamp: api.FormatSeconds(bucket), PushMessages: c.PushMessages, PopMessages: c.PopMessages,
			AckMessages: c.AckMessages, PushRequests: c.PushRequests, PopRequests: c.PopRequests,
			AckRequests: c.AckRequests, JobsDone: c.Requests(),
			PushPerSecond: w.perSecond(c.PushMessages), PopPerSecond: w.perSecond(c.PopMessages),
			AckPerSecond: w.perSecond(c.AckMessages), AvgEventLoopLagMs: g.AvgEventLoopLagMs(),
			MaxEventLoopLagMs: g.EventLoopLagMaxMs, AvgFreeSlots: g.AvgFreeSlots(), MinFreeSlots: minFreeSlots(g),
			DBConnections: g.DBConnections, BackoffSize: g.AvgParked(), AvgLagMs: c.AvgLagMs(), MaxLagMs: c.LagMaxMs,
			LagCount: c.LagCount, DBErrors: c.DBErrors, AckSuccess: c.AckSuccess, AckFailed: c.AckFailed, DLQCount: c.DLQ,
		})
	}
	out.PointCount = len(out.TimeSeries)
	out.Summary = api.WorkerSummary{
		TotalPushMessages: t.PushMessages, TotalPopMessages: t.PopMessages, TotalAckMessages: t.AckMessages,
		TotalPushRequests: t.PushRequests, TotalPopRequests: t.PopRequests, TotalAckRequests: t.AckRequests,
		TotalDBErrors: t.DBErrors, TotalAckFailed: t.AckFailed, TotalDLQ: t.DLQ,
		PendingMessages: counters.Pending + counters.Processing,
	}
	return out, nil
}

// queueLags sums queue rows per queue, by name.
func queueLags(rows []store.QueueActivity) []api.QueueLag {
	byQueue := make(map[string]*store.ActivityCounts)
	for _, r := range rows {
		c := byQueue[r.Queue]
		if c == nil {
			c = &store.ActivityCounts{}
			byQueue[r.Queue] = c
		}
		c.Add(r.ActivityCounts)
	}
	out := make([]api.QueueLag, 0, len(byQueue))
	for _, name := range slices.Sorted(maps.Keys(byQueue)) {
		c := byQueue[name]
		out = append(out, api.QueueLag{QueueName: name, PopCount: c.PopMessages, AvgLagMs: c.AvgLagMs(),
			MaxLagMs: c.LagMaxMs})
	}
	return out
}

// queueActivity returns per-(bucket, queue) activity in f's window, Queue, Namespace,
// Task and Scope, newest bucket first, under the scope's names; Parked is the
// bucket's average.
func (s *Service) queueActivity(ctx context.Context, f Filter) (window, []store.QueueActivity, error) {
	w, rows, err := readSeries(ctx, f, s.rec.width, s.store.QueueActivitySeries, "queue", "namespace", "task")
	if err != nil {
		return window{}, nil, err
	}
	for i := range rows {
		rows[i].Parked /= w.minutesOf()
		rows[i].Queue = f.Scope.Relative(rows[i].Queue)
	}
	return w, rows, nil
}

// QueueLag builds GET /api/v1/analytics/queue-lag for f's window, Queue, Namespace,
// Task and Scope: per-(bucket, queue) pop lag, newest first, for buckets with
// deliveries.
func (s *Service) QueueLag(ctx context.Context, f Filter) ([]api.QueueLagBucket, error) {
	_, rows, err := s.queueActivity(ctx, f)
	if err != nil {
		return nil, err
	}
	out := []api.QueueLagBucket{}
	for _, q := range rows {
		if q.PopMessages == 0 {
			continue
		}
		out = append(out, api.QueueLagBucket{QueueName: q.Queue, PopCount: q.PopMessages, AvgLagMs: q.AvgLagMs(),
			MaxLagMs: q.LagMaxMs, BucketTime: api.FormatSeconds(q.Bucket)})
	}
	return out, nil
}

// QueueOps builds GET /api/v1/analytics/queue-ops for f's window, Queue, Namespace,
// Task and Scope: per-(bucket, queue) operation counts and rates, newest bucket
// first, and the names of the queues in the series.
func (s *Service) QueueOps(ctx context.Context, f Filter) (api.QueueOps, error) {
	w, rows, err := s.queueActivity(ctx, f)
	if err != nil {
		return api.QueueOps{}, err
	}
	out := api.QueueOps{TimeRange: w.timeRange(), BucketMinutes: w.Minutes(), BucketSeconds: w.Seconds()}
	names := make(map[string]struct{})
	for _, q := range rows {
		names[q.Queue] = struct{}{}
		out.Series = append(out.Series, api.QueueOpsPoint{
			Bucket: api.FormatSeconds(q.Bucket), QueueName: q.Queue, PushRequests: q.PushRequests,
			PushMessages: q.PushMessages, PopMessages: q.PopMessages, PopEmpty: q.PopEmpty,
			AckRequests: q.AckRequests, AckSuccess: q.AckSuccess, AckFailed: q.AckFailed,
			Transactions: q.Transactions, PartitionsCreated: q.PartitionsCreated,
			PartitionsDeleted: q.PartitionsDeleted, PartitionCount: q.PartitionCount, AvgLagMs: q.AvgLagMs(),
			MaxLagMs: q.LagMaxMs, PushPerSecond: w.perSecond(q.PushMessages),
			PopPerSecond: w.perSecond(q.PopMessages), AckPerSecond: w.perSecond(q.AckMessages),
			EmptyPerSecond: w.perSecond(q.PopEmpty), ParkedCount: q.Parked,
		})
	}
	out.Queues = slices.Sorted(maps.Keys(names))
	return out, nil
}

// ParkedReplicas builds GET /api/v1/analytics/queue-parked-replicas for f's window,
// Queue and Scope: per-(bucket, queue, replica) parked averages, newest bucket first,
// and the replicas in the series. A tenant scope names no replica: its rows are
// summed over replicas per (bucket, queue), with empty hostname and workerId, and
// its replica list is empty.
func (s *Service) ParkedReplicas(ctx context.Context, f Filter) (api.ParkedReplicas, error) {
	w, rows, err := readSeries(ctx, f, s.rec.width, s.store.ParkedReplicaSeries, "queue")
	if err != nil {
		return api.ParkedReplicas{}, err
	}
	if !f.Scope.IsGlobal() {
		rows = withoutReplicas(rows, f.Scope)
	}
	out := api.ParkedReplicas{TimeRange: w.timeRange(), BucketMinutes: w.Minutes(), BucketSeconds: w.Seconds()}
	replicas := make(map[api.ReplicaID]struct{})
	for _, p := range rows {
		if f.Scope.IsGlobal() {
			replicas[api.ReplicaID{Hostname: p.Hostname, WorkerID: p.WorkerID}] = struct{}{}
		}
		out.Series = append(out.Series, api.ParkedPoint{Bucket: api.FormatSeconds(p.Bucket), QueueName: p.Queue,
			Hostname: p.Hostname, WorkerID: p.WorkerID, ParkedCount: p.Parked / w.minutesOf()})
	}
	out.Replicas = slices.SortedFunc(maps.Keys(replicas), func(a, b api.ReplicaID) int {
		return cmp.Or(cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(a.WorkerID, b.WorkerID))
	})
	return out, nil
}

// Retention builds GET /api/v1/analytics/retention for f's window and Queue: the
// retention_history sums per bucket, newest first, and their totals. The series holds
// what the retention and eviction jobs deleted.
func (s *Service) Retention(ctx context.Context, f Filter) (api.Retention, error) {
	w, rows, err := readSeries(ctx, f, s.rec.width, s.store.RetentionSeries, "queue")
	if err != nil {
		return api.Retention{}, err
	}
	out := api.Retention{TimeRange: w.timeRange(), BucketMinutes: w.Minutes(), BucketSeconds: w.Seconds()}
	for _, b := range rows {
		t := api.RetentionTotals{
			RetentionMsgs: b.RetentionMsgs, CompletedRetentionMsgs: b.CompletedRetentionMsgs, EvictionMsgs: b.EvictionMsgs,
			TotalMsgs: b.RetentionMsgs + b.CompletedRetentionMsgs + b.EvictionMsgs, EventCount: b.EventCount,
		}
		out.Series = append(out.Series, api.RetentionPoint{Bucket: api.FormatSeconds(b.Bucket), RetentionTotals: t})
		out.Totals.RetentionMsgs += t.RetentionMsgs
		out.Totals.CompletedRetentionMsgs += t.CompletedRetentionMsgs
		out.Totals.EvictionMsgs += t.EvictionMsgs
		out.Totals.TotalMsgs += t.TotalMsgs
		out.Totals.EventCount += t.EventCount
	}
	return out, nil
}

// PostgresStats returns GET /api/v1/analytics/postgres-stats: cache hit ratios, dead
// tuples, HOT updates, active queries (text cut to 200 characters), autovacuum,
// buffer settings and usage, and table sizes of the queen schema, each list at most
// 50 rows (20 queries), as one JSON object built by PostgreSQL.
func (s *Service) PostgresStats(ctx context.Context) (json.RawMessage, error) {
	return s.store.PostgresStats(ctx)
}
