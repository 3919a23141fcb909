package broker

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Limits of the status and analytics views.
const (
	// MaxAnalyticsRange is the longest from..to window a view accepts.
	MaxAnalyticsRange = 366 * 24 * time.Hour
	// maxAnalyticsPoints caps the buckets of /status/analytics.
	maxAnalyticsPoints = 10000
	// maxQueuePartitions caps the partitions of one queue's status view.
	maxQueuePartitions = 10000
)

// Default windows of the views.
const (
	DefaultStatusWindow    = time.Hour
	DefaultAnalyticsWindow = 24 * time.Hour
)

// BucketFor is the series bucket width for a window of length d:
// up to 1 h → 1 min, 6 h → 5 min, 24 h → 15 min, 7 d → 60 min, else 360 min.
func BucketFor(d time.Duration) time.Duration {
	switch {
	case d <= time.Hour:
		return time.Minute
	case d <= 6*time.Hour:
		return 5 * time.Minute
	case d <= 24*time.Hour:
		return 15 * time.Minute
	case d <= 7*24*time.Hour:
		return time.Hour
	}
	return 6 * time.Hour
}

// Window is a validated view window: [From, To) cut into buckets of Bucket, aligned
// to multiples of Bucket since the Unix epoch. From is the start of the first whole
// bucket at or after the requested from; the last bucket holds To and may be partial.
type Window struct {
	From   time.Time
	To     time.Time
	Bucket time.Duration
}

// Buckets returns the bucket starts, newest first.
func (w Window) Buckets() []time.Time {
	var out []time.Time
	for t := w.To.Add(-time.Nanosecond).Truncate(w.Bucket); !t.Before(w.From); t = t.Add(-w.Bucket) {
		out = append(out, t)
	}
	return out
}

// Minutes is the bucket width in minutes.
func (w Window) Minutes() int { return int(w.Bucket / time.Minute) }

// window validates from..to (zero from = to − def, zero to = now) and aligns it to
// bucket (zero = BucketFor the window's length).
func window(from, to time.Time, def, bucket time.Duration) (Window, error) {
	if to.IsZero() {
		to = time.Now()
	}
	if from.IsZero() {
		from = to.Add(-def)
	}
	to, from = to.UTC(), from.UTC()
	if !from.Before(to) {
		return Window{}, queue.Invalid("from", "from must be before to")
	}
	if to.Sub(from) > MaxAnalyticsRange {
		return Window{}, queue.Invalid("from", "from..to must span at most %d days", int(MaxAnalyticsRange/(24*time.Hour)))
	}
	if bucket == 0 {
		bucket = BucketFor(to.Sub(from))
	}
	start := from.Truncate(bucket)
	if start.Before(from) {
		start = start.Add(bucket)
	}
	if !start.Before(to) {
		start = to.Add(-time.Nanosecond).Truncate(bucket)
	}
	return Window{From: start, To: to, Bucket: bucket}, nil
}

// checkFilters checks the exact-match filters of a view.
func checkFilters(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := checkText(pairs[i], pairs[i+1], queue.MaxNameLength); err != nil {
			return err
		}
	}
	return nil
}

func (w Window) series(f queue.SeriesFilter) queue.SeriesFilter {
	f.From, f.To, f.Bucket = w.From, w.To, w.Bucket
	return f
}

// ThroughputPoint is one bucket of the /status throughput series.
type ThroughputPoint struct {
	Bucket time.Time
	// Queues sums queue_activity over the view's queues; Workers sums
	// worker_activity over every broker process (not filterable by queue).
	Queues  queue.ActivityCounts
	Workers queue.ActivityCounts
	Gauges  queue.WorkerGauges
	// System sums, over processes, the bucket averages of system_activity.
	CPUUserPct, CPUSysPct, RSSMB, PoolActive, PoolIdle, PoolSize float64
}

// WorkerSummary aggregates one broker process (hostname, worker id) over a window.
type WorkerSummary struct {
	Hostname string
	WorkerID string
	queue.ActivityCounts
	queue.WorkerGauges
	// LastFreeSlots and LastParked are the averages of the newest bucket.
	LastFreeSlots float64
	LastParked    float64
	LastSeen      time.Time
}

// StatusReport is the /status view.
type StatusReport struct {
	Window     Window
	Throughput []ThroughputPoint // newest first, one per bucket
	Snapshot   queue.StatusSnapshot
	// Requests sums the window's counters: over the view's queues when a filter is
	// set, else over every process.
	Requests queue.ActivityCounts
	Workers  []WorkerSummary
	// DBErrors counts database errors of every process in the window.
	DBErrors int64
	// StatsAge is seconds since this process last flushed its counters (-1: never).
	StatsAge int64
}

// Status builds the /status view for f (zero From = To − 1 h, zero To = now).
func (b *Broker) Status(ctx context.Context, f queue.StatusFilter) (StatusReport, error) {
	if err := checkFilters("queue", f.Queue, "namespace", f.Namespace, "task", f.Task); err != nil {
		return StatusReport{}, err
	}
	w, err := window(f.From, f.To, DefaultStatusWindow, 0)
	if err != nil {
		return StatusReport{}, err
	}
	sf := w.series(queue.SeriesFilter{Queue: f.Queue, Namespace: f.Namespace, Task: f.Task})
	qrows, err := b.store.QueueActivitySeries(ctx, sf)
	if err != nil {
		return StatusReport{}, err
	}
	wrows, err := b.store.WorkerActivitySeries(ctx, w.series(queue.SeriesFilter{}))
	if err != nil {
		return StatusReport{}, err
	}
	srows, err := b.store.SystemMetricsList(ctx, w.series(queue.SeriesFilter{}))
	if err != nil {
		return StatusReport{}, err
	}
	f.From, f.To = w.From, w.To
	snap, err := b.store.StatusSnapshot(ctx, f)
	if err != nil {
		return StatusReport{}, err
	}
	rep := StatusReport{Window: w, Snapshot: snap, Workers: workerSummaries(wrows), StatsAge: b.statsAge()}
	points := make(map[time.Time]*ThroughputPoint)
	for _, t := range w.Buckets() {
		points[t] = &ThroughputPoint{Bucket: t}
	}
	var queueTotal, workerTotal queue.ActivityCounts
	for _, r := range qrows {
		queueTotal.Add(r.ActivityCounts)
		if p := points[r.Bucket]; p != nil {
			p.Queues.Add(r.ActivityCounts)
		}
	}
	for _, r := range wrows {
		workerTotal.Add(r.ActivityCounts)
		if p := points[r.Bucket]; p != nil {
			p.Workers.Add(r.ActivityCounts)
			p.Gauges.Add(r.WorkerGauges)
		}
	}
	for bucket, byReplica := range systemBuckets(srows, w.Bucket) {
		p := points[bucket]
		if p == nil {
			continue
		}
		for _, s := range byReplica {
			p.CPUUserPct += s["cpu"]["user_us"].Avg / 1e4
			p.CPUSysPct += s["cpu"]["system_us"].Avg / 1e4
			p.RSSMB += s["memory"]["rss_bytes"].Avg / (1 << 20)
			p.PoolActive += s["database"]["pool_active"].Avg
			p.PoolIdle += s["database"]["pool_idle"].Avg
			p.PoolSize += s["database"]["pool_size"].Avg
		}
	}
	for _, t := range w.Buckets() {
		rep.Throughput = append(rep.Throughput, *points[t])
	}
	rep.Requests = workerTotal
	if f.Queue != "" || f.Namespace != "" || f.Task != "" {
		rep.Requests = queueTotal
	}
	rep.DBErrors = workerTotal.DBErrors
	return rep, nil
}

// statsAge is seconds since this process last flushed its activity, or -1.
func (b *Broker) statsAge() int64 {
	b.activity.mu.Lock()
	last := b.activity.lastFlush
	b.activity.mu.Unlock()
	if last.IsZero() {
		return -1
	}
	return int64(time.Since(last) / time.Second)
}

type replicaKey struct{ hostname, workerID string }

// systemBuckets merges per-minute system_activity rows into buckets per replica.
func systemBuckets(rows []queue.SystemMetrics, bucket time.Duration) map[time.Time]map[replicaKey]queue.SystemSample {
	out := make(map[time.Time]map[replicaKey]queue.SystemSample)
	for _, r := range rows {
		t := r.Bucket.Truncate(bucket)
		byReplica := out[t]
		if byReplica == nil {
			byReplica = make(map[replicaKey]queue.SystemSample)
			out[t] = byReplica
		}
		k := replicaKey{r.Hostname, r.WorkerID}
		s := byReplica[k]
		if s == nil {
			s = make(queue.SystemSample)
			byReplica[k] = s
		}
		s.Merge(r.Metrics, r.Samples)
	}
	return out
}

// workerSummaries aggregates worker rows (newest first) per process.
func workerSummaries(rows []queue.WorkerActivity) []WorkerSummary {
	byKey := make(map[replicaKey]*WorkerSummary)
	for _, r := range rows {
		k := replicaKey{r.Hostname, r.WorkerID}
		s := byKey[k]
		if s == nil {
			s = &WorkerSummary{Hostname: r.Hostname, WorkerID: r.WorkerID,
				LastFreeSlots: r.AvgFreeSlots(), LastParked: r.AvgParked()}
			byKey[k] = s
		}
		s.ActivityCounts.Add(r.ActivityCounts)
		s.WorkerGauges.Add(r.WorkerGauges)
		if r.LastSeen.After(s.LastSeen) {
			s.LastSeen = r.LastSeen
		}
	}
	out := make([]WorkerSummary, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b WorkerSummary) int {
		return cmp.Or(cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(a.WorkerID, b.WorkerID))
	})
	return out
}

// AnalyticsIntervals maps the interval names of /status/analytics to bucket widths.
var AnalyticsIntervals = map[string]time.Duration{
	"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
}

// MessageCounts counts the messages created per interval ("minute", "hour" or
// "day") in the window of f (zero From = To − 24 h), oldest first, zero-filled.
func (b *Broker) MessageCounts(ctx context.Context, f queue.StatusFilter, interval string) (Window, []queue.CountBucket, error) {
	if err := checkFilters("queue", f.Queue, "namespace", f.Namespace, "task", f.Task); err != nil {
		return Window{}, nil, err
	}
	bucket, ok := AnalyticsIntervals[interval]
	if !ok {
		return Window{}, nil, queue.Invalid("interval", "interval must be minute, hour or day")
	}
	w, err := window(f.From, f.To, DefaultAnalyticsWindow, bucket)
	if err != nil {
		return Window{}, nil, err
	}
	if w.To.Sub(w.From)/bucket > maxAnalyticsPoints {
		return Window{}, nil, queue.Invalid("interval", "from..to holds more than %d %ss; use a wider interval",
			maxAnalyticsPoints, interval)
	}
	f.From, f.To = w.From, w.To
	rows, err := b.store.MessageCreationCounts(ctx, f, interval)
	if err != nil {
		return Window{}, nil, err
	}
	counts := make(map[time.Time]int64, len(rows))
	for _, r := range rows {
		counts[r.Bucket] = r.Count
	}
	buckets := w.Buckets()
	slices.Reverse(buckets)
	out := make([]queue.CountBucket, len(buckets))
	for i, t := range buckets {
		out[i] = queue.CountBucket{Bucket: t, Count: counts[t]}
	}
	return w, out, nil
}

// OverviewReport is the /resources/overview view: live counters plus the cluster's
// rates over the last complete minute.
type OverviewReport struct {
	queue.Overview
	IngestedPerSecond  float64
	ProcessedPerSecond float64
}

// Overview returns live cluster totals (computed now; they scan every message).
func (b *Broker) Overview(ctx context.Context) (OverviewReport, error) {
	o, err := b.store.Overview(ctx)
	if err != nil {
		return OverviewReport{}, err
	}
	last := time.Now().UTC().Truncate(time.Minute)
	rows, err := b.store.QueueActivitySeries(ctx, queue.SeriesFilter{From: last.Add(-time.Minute), To: last,
		Bucket: time.Minute})
	if err != nil {
		return OverviewReport{}, err
	}
	var c queue.ActivityCounts
	for _, r := range rows {
		c.Add(r.ActivityCounts)
	}
	return OverviewReport{Overview: o, IngestedPerSecond: float64(c.PushMessages) / 60,
		ProcessedPerSecond: float64(c.Processed()) / 60}, nil
}

// Namespaces returns live counters per namespace.
func (b *Broker) Namespaces(ctx context.Context) ([]queue.GroupCounters, error) {
	return b.store.GroupCounterList(ctx, "namespace")
}

// Tasks returns live counters per task.
func (b *Broker) Tasks(ctx context.Context) ([]queue.GroupCounters, error) {
	return b.store.GroupCounterList(ctx, "task")
}

// Partitions lists partitions with live counters, by queue then name; queueName ""
// lists all. An unknown queue is queue.ErrNotFound.
func (b *Broker) Partitions(ctx context.Context, queueName string, page queue.Page) ([]queue.PartitionStatus, error) {
	if err := checkPage(page); err != nil {
		return nil, err
	}
	if queueName != "" {
		if err := checkFilters("queue", queueName); err != nil {
			return nil, err
		}
		if _, err := b.store.QueueGet(ctx, queueName); err != nil {
			return nil, err
		}
	}
	return b.store.PartitionStatusList(ctx, queueName, page)
}

// QueueStatusList returns one page of queues (namespace, task: exact match, "" =
// any), newest first, with live counters.
func (b *Broker) QueueStatusList(ctx context.Context, namespace, task string, page queue.Page) ([]queue.QueueStatus, error) {
	if err := checkFilters("namespace", namespace, "task", task); err != nil {
		return nil, err
	}
	if err := checkPage(page); err != nil {
		return nil, err
	}
	return b.store.QueueStatusList(ctx, namespace, task, page)
}

// QueueStatus returns a queue's configuration and its partitions (at most 10000)
// with live counters and queue-mode cursors; queue.ErrNotFound when absent.
func (b *Broker) QueueStatus(ctx context.Context, name string) (queue.QueueInfo, []queue.PartitionStatus, error) {
	if err := checkFilters("queue", name); err != nil {
		return queue.QueueInfo{}, nil, err
	}
	qi, err := b.store.QueueGet(ctx, name)
	if err != nil {
		return qi, nil, err
	}
	parts, err := b.store.PartitionStatusList(ctx, name, queue.Page{Limit: maxQueuePartitions})
	return qi, parts, err
}

// QueueMessages returns one page of a queue's messages, newest first, with their
// queue-mode status; queue.ErrNotFound when the queue does not exist.
func (b *Broker) QueueMessages(ctx context.Context, name string, page queue.Page) ([]queue.MessageInfo, error) {
	if err := checkFilters("queue", name); err != nil {
		return nil, err
	}
	if err := checkPage(page); err != nil {
		return nil, err
	}
	if _, err := b.store.QueueGet(ctx, name); err != nil {
		return nil, err
	}
	return b.store.QueueMessagesRecent(ctx, name, page)
}
