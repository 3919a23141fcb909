package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxSeriesRows bounds every analytics series read: a 7-day window at one-minute
// resolution for a few dozen queues, far more than a dashboard draws.
const maxSeriesRows = 50000

// deriveTimeout bounds the commit of the activity counters and the recomputation of
// the derived columns after it, which both run even when the caller's context is done
// (a flush on shutdown), so that a cancellation cannot turn a written flush into a
// failed one.
const deriveTimeout = 5 * time.Second

// ErrActivityDerive marks an ActivityAdd whose counters were written but whose derived
// columns were not recomputed. The flush must not be retried (its counters would count
// twice); the next flush of the same keys recomputes them.
var ErrActivityDerive = errors.New("activity counters written, derived columns not recomputed")

// sqlQueueActivityAdd adds per-(minute, queue) counters to queue_activity. Rows
// arrive sorted by (bucket, queue), so two brokers flushing at once lock shared rows
// in the same order.
const sqlQueueActivityAdd = `
INSERT INTO queen.queue_activity AS t (bucket_time, queue_name, pop_count, lag_sum_ms, avg_lag_ms, max_lag_ms,
    push_request_count, push_message_count, pop_request_count, pop_empty_count, ack_request_count,
    ack_message_count, ack_success_count, ack_failed_count, auto_ack_count, transaction_count, dlq_count)
SELECT x.b, x.q, x.pop, x.lag_sum, CASE WHEN x.pop > 0 THEN x.lag_sum::float8 / x.pop ELSE 0 END, x.lag_max,
       x.push_req, x.push_msg, x.pop_req, x.pop_empty, x.ack_req, x.ack_msg, x.ack_ok, x.ack_fail, x.auto_ack,
       x.tx, x.dlq
FROM unnest($1::timestamptz[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
            $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[],
            $15::bigint[], $16::bigint[])
     AS x(b, q, pop, lag_sum, lag_max, push_req, push_msg, pop_req, pop_empty, ack_req, ack_msg, ack_ok, ack_fail,
          auto_ack, tx, dlq)
ORDER BY x.b, x.q
ON CONFLICT (bucket_time, queue_name) DO UPDATE SET
    pop_count          = t.pop_count + excluded.pop_count,
    lag_sum_ms         = t.lag_sum_ms + excluded.lag_sum_ms,
    avg_lag_ms         = CASE WHEN t.pop_count + excluded.pop_count > 0
                              THEN (t.lag_sum_ms + excluded.lag_sum_ms)::float8 / (t.pop_count + excluded.pop_count)
                              ELSE 0 END,
    max_lag_ms         = greatest(t.max_lag_ms, excluded.max_lag_ms),
    push_request_count = t.push_request_count + excluded.push_request_count,
    push_message_count = t.push_message_count + excluded.push_message_count,
    pop_request_count  = t.pop_request_count + excluded.pop_request_count,
    pop_empty_count    = t.pop_empty_count + excluded.pop_empty_count,
    ack_request_count  = t.ack_request_count + excluded.ack_request_count,
    ack_message_count  = t.ack_message_count + excluded.ack_message_count,
    ack_success_count  = t.ack_success_count + excluded.ack_success_count,
    ack_failed_count   = t.ack_failed_count + excluded.ack_failed_count,
    auto_ack_count     = t.auto_ack_count + excluded.auto_ack_count,
    transaction_count  = t.transaction_count + excluded.transaction_count,
    dlq_count          = t.dlq_count + excluded.dlq_count,
    updated_at         = now()`

// sqlWorkerActivityAdd adds per-minute counters and gauge sums of one process to
// worker_activity; only that process writes its rows.
const sqlWorkerActivityAdd = `
INSERT INTO queen.worker_activity AS t (bucket_time, hostname, worker_id, pid, sample_count,
    event_loop_lag_sum_ms, avg_event_loop_lag_ms, max_event_loop_lag_ms, free_slots_sum, avg_free_slots,
    min_free_slots, db_connections, parked_sum, avg_parked, max_parked, jobs_done,
    push_request_count, pop_request_count, ack_request_count, transaction_count, push_message_count,
    pop_message_count, pop_empty_count, ack_message_count, ack_success_count, ack_failed_count, auto_ack_count,
    lag_count, lag_sum_ms, avg_lag_ms, max_lag_ms, db_error_count, dlq_count)
SELECT x.b, $1, $2, $3, x.n,
       x.ev_sum, CASE WHEN x.n > 0 THEN x.ev_sum / x.n ELSE 0 END, x.ev_max,
       x.free_sum, CASE WHEN x.n > 0 THEN x.free_sum::float8 / x.n ELSE 0 END,
       CASE WHEN x.n > 0 THEN x.free_min END, x.conns,
       x.parked_sum, CASE WHEN x.n > 0 THEN x.parked_sum::float8 / x.n ELSE 0 END, x.parked_max,
       x.push_req + x.pop_req + x.ack_req + x.tx,
       x.push_req, x.pop_req, x.ack_req, x.tx, x.push_msg, x.pop_msg, x.pop_empty, x.ack_msg, x.ack_ok, x.ack_fail,
       x.auto_ack, x.lag_n, x.lag_sum, CASE WHEN x.lag_n > 0 THEN x.lag_sum::float8 / x.lag_n ELSE 0 END, x.lag_max,
       x.db_err, x.dlq
FROM unnest($4::timestamptz[], $5::bigint[], $6::float8[], $7::float8[], $8::bigint[], $9::bigint[], $10::bigint[],
            $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[],
            $18::bigint[], $19::bigint[], $20::bigint[], $21::bigint[], $22::bigint[], $23::bigint[], $24::bigint[],
            $25::bigint[], $26::bigint[], $27::bigint[], $28::bigint[])
     AS x(b, n, ev_sum, ev_max, free_sum, free_min, conns, parked_sum, parked_max, push_req, pop_req, ack_req, tx,
          push_msg, pop_msg, pop_empty, ack_msg, ack_ok, ack_fail, auto_ack, lag_n, lag_sum, lag_max, db_err, dlq)
ORDER BY x.b
ON CONFLICT (bucket_time, hostname, worker_id, pid) DO UPDATE SET
    sample_count          = t.sample_count + excluded.sample_count,
    event_loop_lag_sum_ms = t.event_loop_lag_sum_ms + excluded.event_loop_lag_sum_ms,
    avg_event_loop_lag_ms = CASE WHEN t.sample_count + excluded.sample_count > 0
                                 THEN (t.event_loop_lag_sum_ms + excluded.event_loop_lag_sum_ms)
                                      / (t.sample_count + excluded.sample_count) ELSE 0 END,
    max_event_loop_lag_ms = greatest(t.max_event_loop_lag_ms, excluded.max_event_loop_lag_ms),
    free_slots_sum        = t.free_slots_sum + excluded.free_slots_sum,
    avg_free_slots        = CASE WHEN t.sample_count + excluded.sample_count > 0
                                 THEN (t.free_slots_sum + excluded.free_slots_sum)::float8
                                      / (t.sample_count + excluded.sample_count) ELSE 0 END,
    min_free_slots        = least(t.min_free_slots, excluded.min_free_slots),
    db_connections        = greatest(t.db_connections, excluded.db_connections),
    parked_sum            = t.parked_sum + excluded.parked_sum,
    avg_parked            = CASE WHEN t.sample_count + excluded.sample_count > 0
                                 THEN (t.parked_sum + excluded.parked_sum)::float8
                                      / (t.sample_count + excluded.sample_count) ELSE 0 END,
    max_parked            = greatest(t.max_parked, excluded.max_parked),
    jobs_done             = t.jobs_done + excluded.jobs_done,
    push_request_count    = t.push_request_count + excluded.push_request_count,
    pop_request_count     = t.pop_request_count + excluded.pop_request_count,
    ack_request_count     = t.ack_request_count + excluded.ack_request_count,
    transaction_count     = t.transaction_count + excluded.transaction_count,
    push_message_count    = t.push_message_count + excluded.push_message_count,
    pop_message_count     = t.pop_message_count + excluded.pop_message_count,
    pop_empty_count       = t.pop_empty_count + excluded.pop_empty_count,
    ack_message_count     = t.ack_message_count + excluded.ack_message_count,
    ack_success_count     = t.ack_success_count + excluded.ack_success_count,
    ack_failed_count      = t.ack_failed_count + excluded.ack_failed_count,
    auto_ack_count        = t.auto_ack_count + excluded.auto_ack_count,
    lag_count             = t.lag_count + excluded.lag_count,
    lag_sum_ms            = t.lag_sum_ms + excluded.lag_sum_ms,
    avg_lag_ms            = CASE WHEN t.lag_count + excluded.lag_count > 0
                                 THEN (t.lag_sum_ms + excluded.lag_sum_ms)::float8
                                      / (t.lag_count + excluded.lag_count) ELSE 0 END,
    max_lag_ms            = greatest(t.max_lag_ms, excluded.max_lag_ms),
    db_error_count        = t.db_error_count + excluded.db_error_count,
    dlq_count             = t.dlq_count + excluded.dlq_count,
    updated_at            = now()`

// sqlParkedReplicaAdd adds one process's parked averages to queue_parked_activity.
const sqlParkedReplicaAdd = `
INSERT INTO queen.queue_parked_activity AS t (bucket_time, queue_name, hostname, worker_id, parked_count, max_parked)
SELECT x.b, x.q, $1, $2, x.parked, x.mx
FROM unnest($3::timestamptz[], $4::text[], $5::float8[], $6::bigint[]) AS x(b, q, parked, mx)
ORDER BY x.b, x.q
ON CONFLICT (bucket_time, queue_name, hostname, worker_id) DO UPDATE SET
    parked_count = t.parked_count + excluded.parked_count,
    max_parked   = greatest(t.max_parked, excluded.max_parked),
    updated_at   = now()`

// sqlSystemActivityPut writes one process's minute aggregates, replacing earlier
// writes of the same minute (the process holds the whole minute until it closes); a
// late write of an older, smaller aggregate does not replace a newer one.
const sqlSystemActivityPut = `
INSERT INTO queen.system_activity AS t (bucket_time, hostname, worker_id, pid, sample_count, metrics)
SELECT x.b, $1, $2, $3, x.n, x.m
FROM unnest($4::timestamptz[], $5::bigint[], $6::jsonb[]) AS x(b, n, m)
ORDER BY x.b
ON CONFLICT (bucket_time, hostname, worker_id, pid) DO UPDATE SET
    sample_count = excluded.sample_count,
    metrics      = excluded.metrics,
    updated_at   = now()
WHERE t.sample_count <= excluded.sample_count`

// sqlQueueActivityDerive recomputes the derived columns of queue_activity for the
// given (bucket, queue) keys: the cluster's parked average (the sum over replicas),
// the queue's partition count and the partitions created in that bucket ($3 seconds
// wide). It sets rather than adds, so running it twice is harmless; it reads only the
// partitions of the given queues. Two brokers deriving the same key at once may leave
// the parked average one flush behind; the next flush of that key corrects it.
const sqlQueueActivityDerive = `
WITH k AS (
    SELECT DISTINCT x.b, x.q FROM unnest($1::timestamptz[], $2::text[]) AS x(b, q)
), parked AS (
    SELECT k.b, k.q, coalesce(sum(r.parked_count), 0) AS parked
    FROM k LEFT JOIN queen.queue_parked_activity r ON r.bucket_time = k.b AND r.queue_name = k.q
    GROUP BY k.b, k.q
), parts AS (
    SELECT k.b, k.q, count(p.id) AS n,
           count(p.id) FILTER (WHERE p.created_at >= k.b AND p.created_at < k.b + make_interval(secs => $3::float8)) AS created
    FROM k LEFT JOIN queen.queues qq ON qq.name = k.q
    LEFT JOIN queen.partitions p ON p.queue_id = qq.id
    GROUP BY k.b, k.q
)
INSERT INTO queen.queue_activity AS t (bucket_time, queue_name, parked_count, partition_count, partitions_created)
SELECT parked.b, parked.q, parked.parked, parts.n, parts.created
FROM parked JOIN parts ON parts.b = parked.b AND parts.q = parked.q
ORDER BY parked.b, parked.q
ON CONFLICT (bucket_time, queue_name) DO UPDATE SET
    parked_count       = excluded.parked_count,
    partition_count    = excluded.partition_count,
    partitions_created = excluded.partitions_created,
    updated_at         = now()`

// ActivityAdd writes one flush of a broker's activity recorder: the counters are
// added (one transaction, so a failed flush can be retried without counting twice),
// then the derived per-queue columns are recomputed in a second statement. Rows must
// have unique keys. An error matching ErrActivityDerive means the counters are
// written: retrying the flush would count them twice.
func (s *Store) ActivityAdd(ctx context.Context, f ActivityFlush) error {
	if f.IsEmpty() {
		return nil
	}
	slices.SortFunc(f.Queues, func(a, b QueueActivity) int {
		return cmpBucketKey(a.Bucket, b.Bucket, a.Queue, b.Queue)
	})
	slices.SortFunc(f.Parked, func(a, b ParkedReplica) int {
		return cmpBucketKey(a.Bucket, b.Bucket, a.Queue, b.Queue)
	})
	batch := &pgx.Batch{}
	if len(f.Queues) > 0 {
		batch.Queue(sqlQueueActivityAdd, queueActivityArgs(f.Queues)...)
	}
	if len(f.Workers) > 0 {
		batch.Queue(sqlWorkerActivityAdd, append([]any{f.Hostname, f.WorkerID, f.PID}, workerActivityArgs(f.Workers)...)...)
	}
	if len(f.Parked) > 0 {
		n := len(f.Parked)
		buckets, names, parked, maxes := make([]time.Time, n), make([]string, n), make([]float64, n), make([]int64, n)
		for i, p := range f.Parked {
			buckets[i], names[i], parked[i], maxes[i] = p.Bucket, p.Queue, p.Parked, p.Max
		}
		batch.Queue(sqlParkedReplicaAdd, f.Hostname, f.WorkerID, buckets, names, parked, maxes)
	}
	if len(f.System) > 0 {
		n := len(f.System)
		buckets, samples, docs := make([]time.Time, n), make([]int64, n), make([]string, n)
		for i, m := range f.System {
			buckets[i], samples[i], docs[i] = m.Bucket, m.Samples, string(m.Metrics)
		}
		batch.Queue(sqlSystemActivityPut, f.Hostname, f.WorkerID, f.PID, buckets, samples, docs)
	}
	if err := s.activityCommit(ctx, batch); err != nil {
		return err
	}
	keys := make(map[[2]string]time.Time)
	for _, q := range f.Queues {
		keys[[2]string{q.Bucket.UTC().Format(time.RFC3339), q.Queue}] = q.Bucket
	}
	for _, p := range f.Parked {
		keys[[2]string{p.Bucket.UTC().Format(time.RFC3339), p.Queue}] = p.Bucket
	}
	buckets, names := make([]time.Time, 0, len(keys)), make([]string, 0, len(keys))
	for k, b := range keys {
		buckets, names = append(buckets, b), append(names, k[1])
	}
	deriveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deriveTimeout)
	defer cancel()
	width := cmp.Or(f.Width, time.Minute)
	if _, err := s.pool.Exec(deriveCtx, sqlQueueActivityDerive, buckets, names, width.Seconds()); err != nil {
		return fmt.Errorf("store: %w: %w", ErrActivityDerive, interpretError(err))
	}
	return nil
}

// activityCommit runs batch in one transaction. The commit itself ignores ctx's
// cancellation (bounded by deriveTimeout): a cancellation then either rolls the
// counters back or leaves them committed, never committed behind an error.
func (s *Store) activityCommit(ctx context.Context, batch *pgx.Batch) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return interpretError(err)
	}
	commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deriveTimeout)
	defer cancel()
	return interpretError(tx.Commit(commitCtx))
}

func cmpBucketKey(a, b time.Time, qa, qb string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return strings.Compare(qa, qb)
}

func queueActivityArgs(rows []QueueActivity) []any {
	n := len(rows)
	buckets, names := make([]time.Time, n), make([]string, n)
	cols := make([][]int64, 14)
	for i := range cols {
		cols[i] = make([]int64, n)
	}
	for i, r := range rows {
		buckets[i], names[i] = r.Bucket, r.Queue
		for j, v := range []int64{r.PopMessages, r.LagSumMs, r.LagMaxMs, r.PushRequests, r.PushMessages,
			r.PopRequests, r.PopEmpty, r.AckRequests, r.AckMessages, r.AckSuccess, r.AckFailed, r.AutoAcked,
			r.Transactions, r.DLQ} {
			cols[j][i] = v
		}
	}
	args := []any{buckets, names}
	for _, c := range cols {
		args = append(args, c)
	}
	return args
}

func workerActivityArgs(rows []WorkerActivity) []any {
	n := len(rows)
	buckets := make([]time.Time, n)
	evSum, evMax := make([]float64, n), make([]float64, n)
	ints := make([][]int64, 21)
	for i := range ints {
		ints[i] = make([]int64, n)
	}
	for i, r := range rows {
		buckets[i], evSum[i], evMax[i] = r.Bucket, r.EventLoopLagSumMs, r.EventLoopLagMaxMs
		for j, v := range []int64{r.FreeSlotsSum, r.FreeSlotsMin, r.DBConnections, r.ParkedSum, r.ParkedMax,
			r.PushRequests, r.PopRequests, r.AckRequests, r.Transactions, r.PushMessages, r.PopMessages, r.PopEmpty,
			r.AckMessages, r.AckSuccess, r.AckFailed, r.AutoAcked, r.LagCount, r.LagSumMs, r.LagMaxMs, r.DBErrors,
			r.DLQ} {
			ints[j][i] = v
		}
	}
	samples := make([]int64, n)
	for i, r := range rows {
		samples[i] = r.Samples
	}
	args := []any{buckets, samples, evSum, evMax}
	for _, c := range ints {
		args = append(args, c)
	}
	return args
}

// bucketOf + column + bucketEnd floors a timestamp column to buckets of $3 seconds
// since the epoch.
const (
	bucketOf  = `to_timestamp(floor(extract(epoch FROM `
	bucketEnd = `) / $3::float8) * $3::float8)`
)

// bucketSeconds is f's bucket width in seconds, at least one.
func bucketSeconds(f SeriesFilter) float64 {
	return max(f.Bucket.Seconds(), 1)
}

// sqlQueueActivitySeries sums queue_activity per (bucket, queue) in [$1, $2),
// newest first; $4 queue, $5 namespace, $6 task, $8 scope prefix ("" = any). A
// namespace or task filter only matches queues that still exist.
const sqlQueueActivitySeries = `
SELECT ` + bucketOf + `l.bucket_time` + bucketEnd + ` AS b, l.queue_name,
       sum(l.push_request_count)::bigint, sum(l.push_message_count)::bigint, sum(l.pop_request_count)::bigint,
       sum(l.pop_empty_count)::bigint, sum(l.pop_count)::bigint, sum(l.ack_request_count)::bigint,
       sum(l.ack_message_count)::bigint, sum(l.ack_success_count)::bigint, sum(l.ack_failed_count)::bigint,
       sum(l.auto_ack_count)::bigint, sum(l.transaction_count)::bigint, sum(l.dlq_count)::bigint,
       sum(l.lag_sum_ms)::bigint, max(l.max_lag_ms)::bigint, sum(l.parked_count)::float8,
       sum(l.partitions_created)::bigint, sum(l.partitions_deleted)::bigint, max(l.partition_count)::bigint
FROM queen.queue_activity l
LEFT JOIN queen.queues q ON q.name = l.queue_name
WHERE l.bucket_time >= $1 AND l.bucket_time < $2
  AND ($4::text = '' OR l.queue_name = $4::text)
  AND ($5::text = '' OR q.namespace = $5::text)
  AND ($6::text = '' OR q.task = $6::text) AND ($8::text = '' OR starts_with(l.queue_name::text, $8::text))
GROUP BY 1, 2
ORDER BY 1 DESC, 2
LIMIT $7`

// QueueActivitySeries returns per-(bucket, queue) sums of queue_activity in the
// window, newest bucket first. Parked is the sum of the minutes' averages (divide by
// the bucket's minutes for the bucket's average).
func (s *Store) QueueActivitySeries(ctx context.Context, f SeriesFilter) ([]QueueActivity, error) {
	rows, err := s.pool.Query(ctx, sqlQueueActivitySeries, f.From, f.To, bucketSeconds(f), f.Queue, f.Namespace,
		f.Task, maxSeriesRows, f.Prefix)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueActivity, error) {
		var r QueueActivity
		err := row.Scan(&r.Bucket, &r.Queue, &r.PushRequests, &r.PushMessages, &r.PopRequests, &r.PopEmpty,
			&r.PopMessages, &r.AckRequests, &r.AckMessages, &r.AckSuccess, &r.AckFailed, &r.AutoAcked,
			&r.Transactions, &r.DLQ, &r.LagSumMs, &r.LagMaxMs, &r.Parked, &r.PartitionsCreated,
			&r.PartitionsDeleted, &r.PartitionCount)
		r.Bucket = r.Bucket.UTC()
		r.LagCount = r.PopMessages
		return r, err
	})
	return out, interpretError(err)
}

// sqlWorkerActivitySeries sums worker_activity per (bucket, hostname, worker_id) in
// [$1, $2), newest first; $4 hostname, $5 worker id ("" = any).
const sqlWorkerActivitySeries = `
SELECT ` + bucketOf + `w.bucket_time` + bucketEnd + ` AS b, w.hostname, w.worker_id, max(w.pid),
       sum(w.push_request_count)::bigint, sum(w.push_message_count)::bigint, sum(w.pop_request_count)::bigint,
       sum(w.pop_empty_count)::bigint, sum(w.pop_message_count)::bigint, sum(w.ack_request_count)::bigint,
       sum(w.ack_message_count)::bigint, sum(w.ack_success_count)::bigint, sum(w.ack_failed_count)::bigint,
       sum(w.auto_ack_count)::bigint, sum(w.transaction_count)::bigint, sum(w.dlq_count)::bigint,
       sum(w.db_error_count)::bigint, sum(w.lag_count)::bigint, sum(w.lag_sum_ms)::bigint, max(w.max_lag_ms)::bigint,
       sum(w.sample_count)::bigint, sum(w.event_loop_lag_sum_ms)::float8, max(w.max_event_loop_lag_ms)::float8,
       sum(w.free_slots_sum)::bigint, coalesce(min(w.min_free_slots), -1)::bigint, max(w.db_connections)::bigint,
       sum(w.parked_sum)::bigint, max(w.max_parked)::bigint, max(w.updated_at)
FROM queen.worker_activity w
WHERE w.bucket_time >= $1 AND w.bucket_time < $2
  AND ($4::text = '' OR w.hostname = $4::text)
  AND ($5::text = '' OR w.worker_id = $5::text)
GROUP BY 1, 2, 3
ORDER BY 1 DESC, 2, 3
LIMIT $6`

// WorkerActivitySeries returns per-(bucket, hostname, worker id) sums of
// worker_activity in the window, newest bucket first.
func (s *Store) WorkerActivitySeries(ctx context.Context, f SeriesFilter) ([]WorkerActivity, error) {
	rows, err := s.pool.Query(ctx, sqlWorkerActivitySeries, f.From, f.To, bucketSeconds(f), f.Hostname, f.WorkerID,
		maxSeriesRows)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkerActivity, error) {
		var r WorkerActivity
		err := row.Scan(&r.Bucket, &r.Hostname, &r.WorkerID, &r.PID, &r.PushRequests, &r.PushMessages,
			&r.PopRequests, &r.PopEmpty, &r.PopMessages, &r.AckRequests, &r.AckMessages, &r.AckSuccess,
			&r.AckFailed, &r.AutoAcked, &r.Transactions, &r.DLQ, &r.DBErrors, &r.LagCount, &r.LagSumMs,
			&r.LagMaxMs, &r.Samples, &r.EventLoopLagSumMs, &r.EventLoopLagMaxMs, &r.FreeSlotsSum,
			&r.FreeSlotsMin, &r.DBConnections, &r.ParkedSum, &r.ParkedMax, &r.LastSeen)
		r.Bucket, r.LastSeen = r.Bucket.UTC(), r.LastSeen.UTC()
		return r, err
	})
	return out, interpretError(err)
}

// sqlParkedReplicaSeries sums queue_parked_activity per (bucket, queue, replica) in
// [$1, $2), newest first; $4 queue, $6 scope prefix ("" = any).
const sqlParkedReplicaSeries = `
SELECT ` + bucketOf + `r.bucket_time` + bucketEnd + ` AS b, r.queue_name, r.hostname, r.worker_id,
       sum(r.parked_count)::float8, max(r.max_parked)::bigint
FROM queen.queue_parked_activity r
WHERE r.bucket_time >= $1 AND r.bucket_time < $2 AND ($4::text = '' OR r.queue_name = $4::text)
  AND ($6::text = '' OR starts_with(r.queue_name::text, $6::text))
GROUP BY 1, 2, 3, 4
ORDER BY 1 DESC, 2, 3, 4
LIMIT $5`

// ParkedReplicaSeries returns per-(bucket, queue, replica) sums of the minutes'
// parked averages in the window, newest bucket first.
func (s *Store) ParkedReplicaSeries(ctx context.Context, f SeriesFilter) ([]ParkedReplica, error) {
	rows, err := s.pool.Query(ctx, sqlParkedReplicaSeries, f.From, f.To, bucketSeconds(f), f.Queue, maxSeriesRows,
		f.Prefix)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ParkedReplica, error) {
		var r ParkedReplica
		err := row.Scan(&r.Bucket, &r.Queue, &r.Hostname, &r.WorkerID, &r.Parked, &r.Max)
		r.Bucket = r.Bucket.UTC()
		return r, err
	})
	return out, interpretError(err)
}

// SystemActivityList returns the per-minute system_activity rows in [From, To), oldest
// first; Hostname and WorkerID filter ("" = any). Bucket is ignored.
func (s *Store) SystemActivityList(ctx context.Context, f SeriesFilter) ([]SystemActivity, error) {
	rows, err := s.pool.Query(ctx, `
SELECT bucket_time, hostname, worker_id, pid, sample_count, metrics
FROM queen.system_activity
WHERE bucket_time >= $1 AND bucket_time < $2
  AND ($3::text = '' OR hostname = $3::text) AND ($4::text = '' OR worker_id = $4::text)
ORDER BY bucket_time, hostname, worker_id, pid
LIMIT $5`, f.From, f.To, f.Hostname, f.WorkerID, maxSeriesRows)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SystemActivity, error) {
		var r SystemActivity
		var doc []byte
		err := row.Scan(&r.Bucket, &r.Hostname, &r.WorkerID, &r.PID, &r.Samples, &doc)
		r.Bucket, r.Metrics = r.Bucket.UTC(), doc
		return r, err
	})
	return out, interpretError(err)
}

// sqlRetentionSeries sums retention_history per bucket in [$1, $2), newest first; $4
// queue ("" = any; only matches partitions that still exist).
const sqlRetentionSeries = `
SELECT ` + bucketOf + `h.executed_at` + bucketEnd + ` AS b,
       coalesce(sum(h.messages_deleted) FILTER (WHERE h.retention_type = 'retention'), 0)::bigint,
       coalesce(sum(h.messages_deleted) FILTER (WHERE h.retention_type = 'completed_retention'), 0)::bigint,
       coalesce(sum(h.messages_deleted) FILTER (WHERE h.retention_type = 'max_wait_time_eviction'), 0)::bigint,
       count(*)
FROM queen.retention_history h
LEFT JOIN queen.partitions p ON p.id = h.partition_id
LEFT JOIN queen.queues q ON q.id = p.queue_id
WHERE h.executed_at >= $1 AND h.executed_at < $2 AND ($4::text = '' OR q.name = $4::text)
GROUP BY 1
ORDER BY 1 DESC
LIMIT $5`

// RetentionSeries returns retention_history sums per bucket in the window, newest
// first.
func (s *Store) RetentionSeries(ctx context.Context, f SeriesFilter) ([]RetentionBucket, error) {
	rows, err := s.pool.Query(ctx, sqlRetentionSeries, f.From, f.To, bucketSeconds(f), f.Queue, maxSeriesRows)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RetentionBucket, error) {
		var r RetentionBucket
		err := row.Scan(&r.Bucket, &r.RetentionMsgs, &r.CompletedRetentionMsgs, &r.EvictionMsgs, &r.EventCount)
		r.Bucket = r.Bucket.UTC()
		return r, err
	})
	return out, interpretError(err)
}
