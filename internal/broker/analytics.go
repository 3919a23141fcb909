package broker

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// SystemReplica is one process's system_activity series.
type SystemReplica struct {
	Hostname string
	WorkerID string
	Points   []SystemPoint // oldest first
}

// SystemPoint is one bucket of a process's system metrics.
type SystemPoint struct {
	Bucket  time.Time
	Samples int64
	Metrics queue.SystemSample
}

// SystemMetrics returns each process's system metrics series in the window of f
// (zero From = To − 1 h), filtered by f.Hostname and f.WorkerID.
func (b *Broker) SystemMetrics(ctx context.Context, f queue.SeriesFilter) (Window, []SystemReplica, error) {
	if err := checkFilters("hostname", f.Hostname, "workerId", f.WorkerID); err != nil {
		return Window{}, nil, err
	}
	w, err := window(f.From, f.To, DefaultStatusWindow, 0)
	if err != nil {
		return Window{}, nil, err
	}
	rows, err := b.store.SystemMetricsList(ctx, w.series(f))
	if err != nil {
		return Window{}, nil, err
	}
	type acc struct {
		samples int64
		metrics queue.SystemSample
	}
	series := make(map[replicaKey]map[time.Time]*acc)
	for _, r := range rows {
		k := replicaKey{r.Hostname, r.WorkerID}
		if series[k] == nil {
			series[k] = make(map[time.Time]*acc)
		}
		t := r.Bucket.Truncate(w.Bucket)
		a := series[k][t]
		if a == nil {
			a = &acc{metrics: make(queue.SystemSample)}
			series[k][t] = a
		}
		a.samples += r.Samples
		a.metrics.Merge(r.Metrics, r.Samples)
	}
	keys := slices.SortedFunc(maps.Keys(series), func(a, b replicaKey) int {
		return cmp.Or(cmp.Compare(a.hostname, b.hostname), cmp.Compare(a.workerID, b.workerID))
	})
	out := make([]SystemReplica, 0, len(keys))
	for _, k := range keys {
		rep := SystemReplica{Hostname: k.hostname, WorkerID: k.workerID}
		for _, t := range slices.SortedFunc(maps.Keys(series[k]), time.Time.Compare) {
			a := series[k][t]
			rep.Points = append(rep.Points, SystemPoint{Bucket: t, Samples: a.samples, Metrics: a.metrics})
		}
		out = append(out, rep)
	}
	return w, out, nil
}

// WorkerPoint is one bucket of the worker-metrics series, summed over processes.
type WorkerPoint struct {
	Bucket time.Time
	queue.ActivityCounts
	queue.WorkerGauges
}

// QueueLag is one queue's pop lag over a window.
type QueueLag struct {
	Queue     string
	PopCount  int64
	AvgLagMs  float64
	MaxLagMs  int64
	Processed int64
}

// WorkerReport is the /analytics/worker-metrics view.
type WorkerReport struct {
	Window  Window
	Series  []WorkerPoint // newest first, one per bucket
	Workers []WorkerSummary
	Queues  []QueueLag
	Totals  queue.ActivityCounts
	// PendingMessages counts the messages created in the window that the queue-mode
	// consumer has not consumed yet.
	PendingMessages int64
}

// WorkerMetrics builds the /analytics/worker-metrics view.
func (b *Broker) WorkerMetrics(ctx context.Context, f queue.SeriesFilter) (WorkerReport, error) {
	if err := checkFilters("hostname", f.Hostname, "workerId", f.WorkerID); err != nil {
		return WorkerReport{}, err
	}
	w, err := window(f.From, f.To, DefaultStatusWindow, 0)
	if err != nil {
		return WorkerReport{}, err
	}
	wrows, err := b.store.WorkerActivitySeries(ctx, w.series(f))
	if err != nil {
		return WorkerReport{}, err
	}
	qrows, err := b.store.QueueActivitySeries(ctx, w.series(queue.SeriesFilter{}))
	if err != nil {
		return WorkerReport{}, err
	}
	counters, err := b.store.MessageCounters(ctx, queue.StatusFilter{From: w.From, To: w.To})
	if err != nil {
		return WorkerReport{}, err
	}
	rep := WorkerReport{Window: w, Workers: workerSummaries(wrows), Queues: queueLags(qrows),
		PendingMessages: counters.Pending + counters.Processing}
	points := make(map[time.Time]*WorkerPoint)
	for _, t := range w.Buckets() {
		points[t] = &WorkerPoint{Bucket: t}
	}
	for _, r := range wrows {
		rep.Totals.Add(r.ActivityCounts)
		if p := points[r.Bucket]; p != nil {
			p.ActivityCounts.Add(r.ActivityCounts)
			p.WorkerGauges.Add(r.WorkerGauges)
		}
	}
	for _, t := range w.Buckets() {
		rep.Series = append(rep.Series, *points[t])
	}
	return rep, nil
}

// queueLags sums queue rows per queue, by name.
func queueLags(rows []queue.QueueActivity) []QueueLag {
	byQueue := make(map[string]*queue.ActivityCounts)
	for _, r := range rows {
		c := byQueue[r.Queue]
		if c == nil {
			c = &queue.ActivityCounts{}
			byQueue[r.Queue] = c
		}
		c.Add(r.ActivityCounts)
	}
	out := make([]QueueLag, 0, len(byQueue))
	for _, name := range slices.Sorted(maps.Keys(byQueue)) {
		c := byQueue[name]
		out = append(out, QueueLag{Queue: name, PopCount: c.PopMessages, AvgLagMs: c.AvgLagMs(),
			MaxLagMs: c.LagMaxMs, Processed: c.Processed()})
	}
	return out
}

// QueueActivity returns per-(bucket, queue) activity in the window of f (zero From =
// To − 1 h), newest bucket first; Parked is the bucket's average.
func (b *Broker) QueueActivity(ctx context.Context, f queue.SeriesFilter) (Window, []queue.QueueActivity, error) {
	if err := checkFilters("queue", f.Queue, "namespace", f.Namespace, "task", f.Task); err != nil {
		return Window{}, nil, err
	}
	w, err := window(f.From, f.To, DefaultStatusWindow, 0)
	if err != nil {
		return Window{}, nil, err
	}
	rows, err := b.store.QueueActivitySeries(ctx, w.series(f))
	if err != nil {
		return Window{}, nil, err
	}
	for i := range rows {
		rows[i].Parked /= float64(w.Minutes())
	}
	return w, rows, nil
}

// ParkedReplicas returns per-(bucket, queue, replica) parked averages in the window
// of f (zero From = To − 1 h), newest bucket first.
func (b *Broker) ParkedReplicas(ctx context.Context, f queue.SeriesFilter) (Window, []queue.ParkedReplica, error) {
	if err := checkFilters("queue", f.Queue); err != nil {
		return Window{}, nil, err
	}
	w, err := window(f.From, f.To, DefaultStatusWindow, 0)
	if err != nil {
		return Window{}, nil, err
	}
	rows, err := b.store.ParkedReplicaSeries(ctx, w.series(f))
	if err != nil {
		return Window{}, nil, err
	}
	for i := range rows {
		rows[i].Parked /= float64(w.Minutes())
	}
	return w, rows, nil
}

// Retention returns retention_history sums per bucket in the window of f (zero From
// = To − 1 h), newest first. Empty until the retention jobs exist.
func (b *Broker) Retention(ctx context.Context, f queue.SeriesFilter) (Window, []queue.RetentionBucket, error) {
	if err := checkFilters("queue", f.Queue); err != nil {
		return Window{}, nil, err
	}
	w, err := window(f.From, f.To, DefaultStatusWindow, 0)
	if err != nil {
		return Window{}, nil, err
	}
	rows, err := b.store.RetentionSeries(ctx, w.series(f))
	return w, rows, err
}

// PostgresStats returns PostgreSQL statistics of this database (free-form JSON).
func (b *Broker) PostgresStats(ctx context.Context) (queue.PostgresStats, error) {
	return b.store.PostgresStats(ctx)
}
