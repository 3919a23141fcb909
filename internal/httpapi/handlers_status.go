package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// Default page sizes of the status listings.
const (
	defaultStatusQueuesLimit   = 100
	defaultQueueMessagesLimit  = 50
	defaultPartitionsListLimit = 100
)

// statusFilter reads from, to, queue, namespace and task.
func statusFilter(r *http.Request) (queue.StatusFilter, error) {
	q := r.URL.Query()
	var f queue.StatusFilter
	var err error
	if f.From, err = queryTimestamp(q, "from"); err != nil {
		return f, err
	}
	if f.To, err = queryTimestamp(q, "to"); err != nil {
		return f, err
	}
	f.Queue, _ = queryString(q, "queue")
	f.Namespace, _ = queryString(q, "namespace")
	f.Task, _ = queryString(q, "task")
	return f, nil
}

// seriesFilter reads from, to, queue, namespace, task, hostname and workerId.
func seriesFilter(r *http.Request) (queue.SeriesFilter, error) {
	sf, err := statusFilter(r)
	if err != nil {
		return queue.SeriesFilter{}, err
	}
	q := r.URL.Query()
	f := queue.SeriesFilter{From: sf.From, To: sf.To, Queue: sf.Queue, Namespace: sf.Namespace, Task: sf.Task}
	f.Hostname, _ = queryString(q, "hostname")
	f.WorkerID, _ = queryString(q, "workerId")
	return f, nil
}

func timeRange(w broker.Window) api.TimeRange {
	return api.TimeRange{From: api.FormatMillis(w.From), To: api.FormatMillis(w.To)}
}

// perSecond is n per second over a bucket of d.
func perSecond(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() }

// minFreeSlots is the bucket's lowest free-slot sample, nil without samples.
func minFreeSlots(g queue.WorkerGauges) *int64 {
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

// handleStatus is GET /api/v1/status. Throughput comes from the flushed
// per-minute activity of every broker (the current minute appears once flushed); the
// other sections are live SQL over the window.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) error {
	f, err := statusFilter(r)
	if err != nil {
		return err
	}
	rep, err := s.broker.Status(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.StatusResponse{
		TimeRange: timeRange(rep.Window), BucketMinutes: rep.Window.Minutes(), PointCount: len(rep.Throughput),
		StatsAge: rep.StatsAge,
	}
	bucket := rep.Window.Bucket
	for _, p := range rep.Throughput {
		out.Throughput = append(out.Throughput, api.ThroughputPoint{
			Timestamp: api.FormatSeconds(p.Bucket), Ingested: p.Queues.PushMessages, Processed: p.Queues.Processed(),
			PopMessages:       p.Queues.PopMessages,
			IngestedPerSecond: perSecond(p.Queues.PushMessages, bucket), ProcessedPerSecond: perSecond(p.Queues.Processed(), bucket),
			PopPerSecond: perSecond(p.Queues.PopMessages, bucket), AvgLagMs: p.Queues.AvgLagMs(), MaxLagMs: p.Queues.LagMaxMs,
			AvgEventLoopLagMs: p.Gauges.AvgEventLoopLagMs(), MaxEventLoopLagMs: p.Gauges.EventLoopLagMaxMs,
			MinFreeSlots: minFreeSlots(p.Gauges), DBErrors: p.Workers.DBErrors, AckFailed: p.Queues.AckFailed,
			DLQCount: p.Queues.DLQ, QueenCPUUserPct: p.CPUUserPct, QueenCPUSysPct: p.CPUSysPct, QueenRSSMB: p.RSSMB,
			DBPoolActive: p.PoolActive, DBPoolIdle: p.PoolIdle, DBPoolSize: p.PoolSize,
		})
	}
	for _, q := range rep.Snapshot.Queues {
		out.Queues = append(out.Queues, api.StatusQueue{ID: q.ID, Name: q.Name, Namespace: q.Namespace, Task: q.Task,
			Partitions: q.Partitions, TotalConsumed: q.TotalConsumed})
	}
	m, req := rep.Snapshot.Messages, rep.Requests
	out.Messages = api.StatusMessages{
		Total: m.Total, Pending: m.Pending, Processing: m.Processing, Completed: m.Completed, Failed: m.Failed,
		DeadLetter: m.DeadLetter,
		Requests:   api.RequestCounts{Push: req.PushRequests, Pop: req.PopRequests, Ack: req.AckRequests},
		BatchEfficiency: api.BatchEfficiency{Push: ratioOf(req.PushMessages, req.PushRequests),
			Pop: ratioOf(req.PopMessages, req.PopRequests), Ack: ratioOf(req.AckMessages, req.AckRequests)},
	}
	l := rep.Snapshot.Leases
	out.Leases = api.StatusLeases{Active: l.Active, PartitionsWithLeases: l.PartitionsWithLeases,
		TotalBatchSize: l.TotalBatchSize, TotalAcked: l.TotalAcked}
	d := rep.Snapshot.DLQ
	out.DeadLetterQueue = api.StatusDLQ{TotalMessages: d.TotalMessages, AffectedPartitions: d.AffectedPartitions}
	for _, e := range d.TopErrors {
		out.DeadLetterQueue.TopErrors = append(out.DeadLetterQueue.TopErrors, api.ErrorCount{Error: e.Error, Count: e.Count})
	}
	out.Workers = workerStatuses(rep.Workers)
	out.Errors = api.StatusErrors{DBErrors: rep.DBErrors, AckFailed: req.AckFailed, DLQMessages: req.DLQ}
	return writeJSON(w, http.StatusOK, out)
}

func workerStatuses(ws []broker.WorkerSummary) []api.WorkerStatus {
	out := make([]api.WorkerStatus, 0, len(ws))
	for _, w := range ws {
		out = append(out, api.WorkerStatus{
			Hostname: w.Hostname, WorkerID: w.WorkerID, AvgEventLoopLagMs: w.AvgEventLoopLagMs(),
			MaxEventLoopLagMs: w.EventLoopLagMaxMs, FreeSlots: w.LastFreeSlots, DBConnections: w.DBConnections,
			BackoffSize: w.LastParked, MessagesProcessed: w.PushMessages + w.PopMessages,
			LastSeen: api.FormatMillis(w.LastSeen),
		})
	}
	return out
}

// handleStatusQueues is GET /api/v1/status/queues: one page of queues
// (namespace and task filter by exact match), newest first, with live counters.
func (s *Server) handleStatusQueues(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	page, err := listPage(q, defaultStatusQueuesLimit)
	if err != nil {
		return err
	}
	ns, _ := queryString(q, "namespace")
	task, _ := queryString(q, "task")
	list, err := s.broker.QueueStatusList(r.Context(), ns, task, page)
	if err != nil {
		return err
	}
	out := api.StatusQueueList{Pagination: api.Pagination{Limit: page.Limit, Offset: page.Offset}}
	for _, qs := range list {
		out.Queues = append(out.Queues, api.QueueSummary{
			ID: qs.ID, Name: qs.Name, Namespace: qs.Namespace, Task: qs.Task, CreatedAt: api.FormatMillis(qs.CreatedAt),
			Partitions: int(qs.Partitions), Messages: api.QueueMessageCounts{Total: int(qs.Counters.Total),
				Pending: int(qs.Counters.Pending), Processing: int(qs.Counters.Processing)},
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStatusQueue is GET /api/v1/status/queues/{queue}: the queue, its
// configuration and every partition with live counters and the queue-mode cursor;
// 404 {"error":"Queue not found"} for an unknown queue.
func (s *Server) handleStatusQueue(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	qi, parts, err := s.broker.QueueStatus(r.Context(), name)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	o := qi.Options
	out := api.StatusQueueDetail{Queue: api.StatusQueueInfo{
		ID: qi.ID, Name: qi.Name, Namespace: qi.Namespace, Task: qi.Task, Priority: o.Priority,
		CreatedAt: api.FormatMillis(qi.CreatedAt),
		Config: api.StatusQueueConfig{LeaseTime: o.LeaseTime, RetryLimit: o.RetryLimit, RetryDelay: o.RetryDelay,
			TTL: o.TTL, MaxQueueSize: o.MaxSize, DeadLetterQueue: o.DeadLetterQueue},
	}}
	var totals queue.Counters
	for _, p := range parts {
		totals.Add(p.Counters)
		c := counters(p.Counters)
		out.Partitions = append(out.Partitions, api.StatusPartition{
			ID: p.ID, Name: p.Name, CreatedAt: api.FormatMillis(p.CreatedAt), Messages: c, Stats: c,
			Cursor:       api.PartitionCursor{TotalConsumed: p.TotalConsumed, BatchesConsumed: p.BatchesConsumed},
			LastActivity: optionalTime(p.LastActivity), OldestMessage: optionalTime(p.OldestMessage),
			NewestMessage: optionalTime(p.NewestMessage),
		})
	}
	out.Totals = api.StatusTotals{Messages: counters(totals), Counters: counters(totals)}
	return writeJSON(w, http.StatusOK, out)
}

// handleStatusQueueMessages is GET /api/v1/status/queues/{queue}/messages: a
// top-level array of one page of the queue's messages, newest first, with
// the queue-mode status; [] past the end; 404 for an unknown queue.
func (s *Server) handleStatusQueueMessages(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	page, err := listPage(r.URL.Query(), defaultQueueMessagesLimit)
	if err != nil {
		return err
	}
	msgs, err := s.broker.QueueMessages(r.Context(), name, page)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	out := make([]api.QueueMessage, len(msgs))
	for i, m := range msgs {
		out[i] = api.QueueMessage{
			ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID, QueuePath: m.Queue + "/" + m.Partition,
			Queue: m.Queue, Partition: m.Partition, Status: m.State.Status, CreatedAt: api.FormatMillis(m.CreatedAt),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStatusAnalytics is GET /api/v1/status/analytics: message
// creation counts per minute, hour (default) or day, zero-filled, oldest first.
func (s *Server) handleStatusAnalytics(w http.ResponseWriter, r *http.Request) error {
	f, err := statusFilter(r)
	if err != nil {
		return err
	}
	interval, ok := queryString(r.URL.Query(), "interval")
	if !ok || interval == "" {
		interval = "hour"
	}
	win, counts, err := s.broker.MessageCounts(r.Context(), f, interval)
	if err != nil {
		return err
	}
	out := api.MessageAnalytics{Interval: interval, From: api.FormatMillis(win.From), To: api.FormatMillis(win.To)}
	for _, c := range counts {
		out.DataPoints = append(out.DataPoints, api.DataPoint{Timestamp: api.FormatSeconds(c.Bucket), Messages: c.Count})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStatusBuffers is GET /api/v1/status/buffers: this broker's disk
// spool (depth, bytes, age, quarantined and corrupt records, write health); dbHealthy
// is a live ping.
func (s *Server) handleStatusBuffers(w http.ResponseWriter, r *http.Request) error {
	healthy := s.ping(r) == nil
	if r.Context().Err() != nil {
		return r.Context().Err()
	}
	st, ok := s.broker.SpoolStats()
	out := api.BufferStatus{
		Pending: st.PendingRecords, Failed: st.QuarantinedRecords, DBHealthy: healthy, Worker: 0,
		PendingBytes: st.PendingBytes, Segments: st.Segments, CorruptRegions: st.CorruptRegions,
		CorruptBytes: st.CorruptBytes, Healthy: ok && st.Healthy, LastError: st.LastError,
		Appended: st.Appended, Replayed: st.Drained,
	}
	if !st.OldestPending.IsZero() {
		out.OldestPendingAgeSeconds = max(time.Since(st.OldestPending).Seconds(), 0)
	}
	if !ok {
		out.Note = "this broker has no spool"
	}
	return writeJSON(w, http.StatusOK, out)
}
