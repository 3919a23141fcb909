package httpapi

import (
	"cmp"
	"maps"
	"net/http"
	"slices"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The /api/v1/analytics/* routes read the per-minute tables the
// brokers' activity recorders fill (queen.system_activity, worker_activity,
// queue_activity, queue_parked_activity), retention_history and the PostgreSQL
// statistics views. Every read is bounded by its window (default the last hour, at
// most 366 days) and a row limit.

// handleSystemMetrics is GET /api/v1/analytics/system-metrics: per broker
// process, a series of {avg,min,max,last} summaries of its 1 Hz process samples.
func (s *Server) handleSystemMetrics(w http.ResponseWriter, r *http.Request) error {
	f, err := seriesFilter(r)
	if err != nil {
		return err
	}
	win, replicas, err := s.broker.SystemMetrics(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.SystemMetrics{TimeRange: timeRange(win), ReplicaCount: len(replicas),
		BucketMinutes: win.Minutes(), PointCount: len(win.Buckets())}
	for _, rep := range replicas {
		ar := api.SystemReplica{Hostname: rep.Hostname, WorkerID: rep.WorkerID, TimeSeries: []api.SystemPoint{}}
		for _, p := range rep.Points {
			metrics := make(map[string]map[string]api.Stat, len(p.Metrics))
			for group, keys := range p.Metrics {
				g := make(map[string]api.Stat, len(keys))
				for k, st := range keys {
					g[k] = api.Stat{Avg: st.Avg, Min: st.Min, Max: st.Max, Last: st.Last}
				}
				metrics[group] = g
			}
			ar.TimeSeries = append(ar.TimeSeries, api.SystemPoint{Timestamp: api.FormatSeconds(p.Bucket),
				SampleCount: p.Samples, Metrics: metrics})
		}
		out.Replicas = append(out.Replicas, ar)
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleWorkerMetrics is GET /api/v1/analytics/worker-metrics.
func (s *Server) handleWorkerMetrics(w http.ResponseWriter, r *http.Request) error {
	f, err := seriesFilter(r)
	if err != nil {
		return err
	}
	rep, err := s.broker.WorkerMetrics(r.Context(), f)
	if err != nil {
		return err
	}
	bucket := rep.Window.Bucket
	out := api.WorkerMetrics{TimeRange: timeRange(rep.Window), BucketMinutes: rep.Window.Minutes(),
		PointCount: len(rep.Series), Workers: workerStatuses(rep.Workers)}
	for _, p := range rep.Series {
		out.TimeSeries = append(out.TimeSeries, api.WorkerPoint{
			Timestamp: api.FormatSeconds(p.Bucket), PushMessages: p.PushMessages, PopMessages: p.PopMessages,
			AckMessages: p.AckMessages, PushRequests: p.PushRequests, PopRequests: p.PopRequests,
			AckRequests: p.AckRequests, JobsDone: p.Requests(),
			PushPerSecond: perSecond(p.PushMessages, bucket), PopPerSecond: perSecond(p.PopMessages, bucket),
			AckPerSecond: perSecond(p.AckMessages, bucket), AvgEventLoopLagMs: p.AvgEventLoopLagMs(),
			MaxEventLoopLagMs: p.EventLoopLagMaxMs, AvgFreeSlots: p.AvgFreeSlots(), MinFreeSlots: minFreeSlots(p.WorkerGauges),
			DBConnections: p.DBConnections, BackoffSize: p.AvgParked(), AvgLagMs: p.AvgLagMs(), MaxLagMs: p.LagMaxMs,
			LagCount: p.LagCount, DBErrors: p.DBErrors, AckSuccess: p.AckSuccess, AckFailed: p.AckFailed, DLQCount: p.DLQ,
		})
	}
	for _, q := range rep.Queues {
		out.Queues = append(out.Queues, api.QueueLag{QueueName: q.Queue, PopCount: q.PopCount, AvgLagMs: q.AvgLagMs,
			MaxLagMs: q.MaxLagMs})
	}
	t := rep.Totals
	out.Summary = api.WorkerSummary{
		TotalPushMessages: t.PushMessages, TotalPopMessages: t.PopMessages, TotalAckMessages: t.AckMessages,
		TotalPushRequests: t.PushRequests, TotalPopRequests: t.PopRequests, TotalAckRequests: t.AckRequests,
		TotalDBErrors: t.DBErrors, TotalAckFailed: t.AckFailed, TotalDLQ: t.DLQ, PendingMessages: rep.PendingMessages,
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleQueueLag is GET /api/v1/analytics/queue-lag: a top-level array
// of per-(bucket, queue) pop lag, newest first, for buckets with deliveries.
func (s *Server) handleQueueLag(w http.ResponseWriter, r *http.Request) error {
	f, err := seriesFilter(r)
	if err != nil {
		return err
	}
	_, rows, err := s.broker.QueueActivity(r.Context(), f)
	if err != nil {
		return err
	}
	out := []api.QueueLagBucket{}
	for _, q := range rows {
		if q.PopMessages == 0 {
			continue
		}
		out = append(out, api.QueueLagBucket{QueueName: q.Queue, PopCount: q.PopMessages, AvgLagMs: q.AvgLagMs(),
			MaxLagMs: q.LagMaxMs, BucketTime: api.FormatSeconds(q.Bucket)})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleQueueOps is GET /api/v1/analytics/queue-ops.
func (s *Server) handleQueueOps(w http.ResponseWriter, r *http.Request) error {
	f, err := seriesFilter(r)
	if err != nil {
		return err
	}
	win, rows, err := s.broker.QueueActivity(r.Context(), f)
	if err != nil {
		return err
	}
	bucket := win.Bucket
	out := api.QueueOps{TimeRange: timeRange(win), BucketMinutes: win.Minutes()}
	names := make(map[string]struct{})
	for _, q := range rows {
		names[q.Queue] = struct{}{}
		out.Series = append(out.Series, api.QueueOpsPoint{
			Bucket: api.FormatSeconds(q.Bucket), QueueName: q.Queue, PushRequests: q.PushRequests,
			PushMessages: q.PushMessages, PopMessages: q.PopMessages, PopEmpty: q.PopEmpty,
			AckRequests: q.AckRequests, AckSuccess: q.AckSuccess, AckFailed: q.AckFailed,
			Transactions: q.Transactions, PartitionsCreated: q.PartitionsCreated,
			PartitionsDeleted: q.PartitionsDeleted, PartitionCount: q.PartitionCount, AvgLagMs: q.AvgLagMs(),
			MaxLagMs: q.LagMaxMs, PushPerSecond: perSecond(q.PushMessages, bucket),
			PopPerSecond: perSecond(q.PopMessages, bucket), AckPerSecond: perSecond(q.AckMessages, bucket),
			EmptyPerSecond: perSecond(q.PopEmpty, bucket), ParkedCount: q.Parked,
		})
	}
	out.Queues = slices.Sorted(maps.Keys(names))
	return writeJSON(w, http.StatusOK, out)
}

// handleParkedReplicas is GET /api/v1/analytics/queue-parked-replicas.
func (s *Server) handleParkedReplicas(w http.ResponseWriter, r *http.Request) error {
	f, err := seriesFilter(r)
	if err != nil {
		return err
	}
	win, rows, err := s.broker.ParkedReplicas(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.ParkedReplicas{TimeRange: timeRange(win), BucketMinutes: win.Minutes()}
	replicas := make(map[api.ReplicaID]struct{})
	for _, p := range rows {
		replicas[api.ReplicaID{Hostname: p.Hostname, WorkerID: p.WorkerID}] = struct{}{}
		out.Series = append(out.Series, api.ParkedPoint{Bucket: api.FormatSeconds(p.Bucket), QueueName: p.Queue,
			Hostname: p.Hostname, WorkerID: p.WorkerID, ParkedCount: p.Parked})
	}
	out.Replicas = slices.SortedFunc(maps.Keys(replicas), func(a, b api.ReplicaID) int {
		return cmp.Or(cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(a.WorkerID, b.WorkerID))
	})
	return writeJSON(w, http.StatusOK, out)
}

// handleRetention is GET /api/v1/analytics/retention. The series is
// empty until the retention and eviction jobs, which write retention_history, exist.
func (s *Server) handleRetention(w http.ResponseWriter, r *http.Request) error {
	f, err := seriesFilter(r)
	if err != nil {
		return err
	}
	win, rows, err := s.broker.Retention(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.Retention{TimeRange: timeRange(win), BucketMinutes: win.Minutes()}
	for _, b := range rows {
		t := retentionTotals(b)
		out.Series = append(out.Series, api.RetentionPoint{Bucket: api.FormatSeconds(b.Bucket), RetentionTotals: t})
		out.Totals.RetentionMsgs += t.RetentionMsgs
		out.Totals.CompletedRetentionMsgs += t.CompletedRetentionMsgs
		out.Totals.EvictionMsgs += t.EvictionMsgs
		out.Totals.TotalMsgs += t.TotalMsgs
		out.Totals.EventCount += t.EventCount
	}
	return writeJSON(w, http.StatusOK, out)
}

func retentionTotals(b queue.RetentionBucket) api.RetentionTotals {
	return api.RetentionTotals{
		RetentionMsgs: b.RetentionMsgs, CompletedRetentionMsgs: b.CompletedRetentionMsgs, EvictionMsgs: b.EvictionMsgs,
		TotalMsgs: b.RetentionMsgs + b.CompletedRetentionMsgs + b.EvictionMsgs, EventCount: b.EventCount,
	}
}

// handlePostgresStats is GET /api/v1/analytics/postgres-stats: cache hit
// ratios, dead tuples, HOT updates, active queries (text cut to 200 characters),
// autovacuum, buffer settings and usage, and table sizes of the queen schema, each
// list at most 50 rows (20 queries).
func (s *Server) handlePostgresStats(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.broker.PostgresStats(r.Context())
	if err != nil {
		return err
	}
	writeBytes(w, http.StatusOK, doc) // one jsonb object built by PostgreSQL
	return nil
}
