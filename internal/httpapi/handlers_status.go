package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/analytics"
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

// viewFilter reads from, to, queue, namespace, task, hostname and workerId, in the
// request's scope (queue is taken as a relative name of a tenant request); each view
// applies the filters it knows.
func viewFilter(r *http.Request) (analytics.Filter, error) {
	q := r.URL.Query()
	f := analytics.Filter{Scope: scopeOf(r)}
	var err error
	if f.From, err = queryTimestamp(q, "from"); err != nil {
		return f, err
	}
	if f.To, err = queryTimestamp(q, "to"); err != nil {
		return f, err
	}
	f.Queue, _ = queryString(q, "queue")
	if f.Queue, err = scopeName(r, "queue", f.Queue); err != nil {
		return f, err
	}
	f.Namespace, _ = queryString(q, "namespace")
	f.Task, _ = queryString(q, "task")
	f.Hostname, _ = queryString(q, "hostname")
	f.WorkerID, _ = queryString(q, "workerId")
	return f, nil
}

// answerView answers 200 with the report build makes for the request's filter.
func answerView[T any](w http.ResponseWriter, r *http.Request, build func(context.Context, analytics.Filter) (T, error)) error {
	f, err := viewFilter(r)
	if err != nil {
		return err
	}
	out, err := build(r.Context(), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStatus is GET /api/v1/status: throughput from the flushed per-minute
// activity of every broker, the other sections live over the window; a tenant
// request covers its queues and gets no per-broker parts.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.Status)
}

// handleStatusQueues is GET /api/v1/status/queues: one page of queues
// (queue, namespace and task filter by exact match), newest first, with live counters.
func (s *Server) handleStatusQueues(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	page, err := listPage(q, defaultStatusQueuesLimit)
	if err != nil {
		return err
	}
	name, _ := queryString(q, "queue")
	ns, _ := queryString(q, "namespace")
	task, _ := queryString(q, "task")
	if name, err = scopeName(r, "queue", name); err != nil {
		return err
	}
	list, err := s.broker.QueueStatusList(r.Context(), scopeOf(r), name, ns, task, page)
	if err != nil {
		return err
	}
	out := api.StatusQueueList{Pagination: api.Pagination{Limit: page.Limit, Offset: page.Offset}}
	for _, qs := range list {
		out.Queues = append(out.Queues, api.QueueSummary{
			ID: qs.ID, Name: unscopeName(r, qs.Name), Namespace: qs.Namespace, Task: qs.Task,
			CreatedAt:  api.FormatMillis(qs.CreatedAt),
			Partitions: int(qs.Partitions), Messages: api.QueueMessageCounts{Total: int(qs.Counters.Total),
				Pending: int(qs.Counters.Pending), Processing: int(qs.Counters.Processing),
				Completed: int(qs.Counters.Completed)},
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStatusQueue is GET /api/v1/status/queues/{queue}: the queue, its
// configuration, its totals over every partition and its first partitionLimit
// (default and at most 10 000; 0 for none) partitions by name with live counters and
// the queue-mode cursor, plus (queen only) the partition count, whether the list was
// cut, the whole stored option set as options and how far each consumer group is
// behind as consumerGroups; 404 {"error":"Queue not found"} for an unknown queue.
func (s *Server) handleStatusQueue(w http.ResponseWriter, r *http.Request) error {
	name, err := scopedQueueParam(r)
	if err != nil {
		return err
	}
	limit, ok, err := queryInt(r.URL.Query(), "partitionLimit")
	if err != nil {
		return err
	}
	if !ok {
		limit = broker.MaxQueuePartitions
	}
	d, err := s.broker.QueueStatus(r.Context(), name, int(max(min(limit, math.MaxInt32), math.MinInt32)))
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	qi, o := d.Info, d.Info.Options
	out := api.StatusQueueDetail{Queue: api.StatusQueueInfo{
		ID: qi.ID, Name: unscopeName(r, qi.Name), Namespace: qi.Namespace, Task: qi.Task, Priority: o.Priority,
		CreatedAt: api.FormatMillis(qi.CreatedAt),
		Config: api.StatusQueueConfig{LeaseTime: o.LeaseTime, RetryLimit: o.RetryLimit, RetryDelay: o.RetryDelay,
			TTL: o.TTL, MaxQueueSize: o.MaxSize, DeadLetterQueue: o.DeadLetterQueue},
	}, PartitionCount: d.Totals.Partitions, PartitionsTruncated: int64(len(d.Partitions)) < d.Totals.Partitions}
	for _, p := range d.Partitions {
		c := counters(p.Counters)
		out.Partitions = append(out.Partitions, api.StatusPartition{
			ID: p.ID, Name: p.Name, CreatedAt: api.FormatMillis(p.CreatedAt), Messages: c, Stats: c,
			Cursor:       api.PartitionCursor{TotalConsumed: p.TotalConsumed, BatchesConsumed: p.BatchesConsumed},
			LastActivity: optionalTime(p.LastActivity), OldestMessage: optionalTime(p.OldestMessage),
			NewestMessage: optionalTime(p.NewestMessage),
		})
	}
	totals := counters(d.Totals.Counters)
	out.Totals = api.StatusTotals{Messages: totals, Counters: totals, TotalConsumed: d.Totals.TotalConsumed}
	opts := optionsEcho(o)
	out.Options = &opts
	groups, err := s.broker.QueueConsumerGroups(r.Context(), name)
	if err != nil {
		return err
	}
	out.ConsumerGroups = analytics.GroupLags(scopeOf(r), groups)
	return writeJSON(w, http.StatusOK, out)
}

// handleStatusQueueMessages is GET /api/v1/status/queues/{queue}/messages: a
// top-level array of one page of the queue's messages, newest first, with
// the queue-mode status; [] past the end; 404 for an unknown queue.
func (s *Server) handleStatusQueueMessages(w http.ResponseWriter, r *http.Request) error {
	name, err := scopedQueueParam(r)
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
		queueName := unscopeName(r, m.Queue)
		out[i] = api.QueueMessage{
			ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID, QueuePath: queueName + "/" + m.Partition,
			Queue: queueName, Partition: m.Partition, Status: m.State.Status, CreatedAt: api.FormatMillis(m.CreatedAt),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// scopedQueueParam reads the {queue} path parameter as a stored name of the request's
// scope.
func scopedQueueParam(r *http.Request) (string, error) {
	name, err := pathParam(r, "queue")
	if err != nil {
		return "", err
	}
	return scopeName(r, "queue", name)
}

// handleStatusAnalytics is GET /api/v1/status/analytics: message
// creation counts per minute, hour (default) or day, zero-filled, oldest first, of
// the request's scope.
func (s *Server) handleStatusAnalytics(w http.ResponseWriter, r *http.Request) error {
	interval, _ := queryString(r.URL.Query(), "interval")
	return answerView(w, r, func(ctx context.Context, f analytics.Filter) (api.MessageAnalytics, error) {
		return s.analytics.MessageCounts(ctx, f, interval)
	})
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
