package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// Bounds of the live status reads.
const (
	// maxStatusPartitions caps the partitions one status read computes counters for
	// (a string: it is spliced into SQL constants).
	maxStatusPartitions = "10000"
	// maxStatusQueues caps the queues listed by the /status view.
	maxStatusQueues = 500
	// topDLQErrors is the number of distinct DLQ error messages /status reports.
	topDLQErrors = 5
)

// StatusSnapshot is the live part of the /status view.
type StatusSnapshot struct {
	// Messages counts the messages created in the window.
	Messages queue.Counters
	Queues   []queue.QueueStatus
	Leases   LeaseSummary
	DLQ      DLQSummary
}

// LeaseSummary describes the live queue leases of a status view.
type LeaseSummary struct {
	Active               int64
	PartitionsWithLeases int64
	TotalBatchSize       int64
	TotalAcked           int64
}

// DLQSummary describes the dead-letter entries of a status view.
type DLQSummary struct {
	TotalMessages      int64
	AffectedPartitions int64
	TopErrors          []DLQError
}

// DLQError is one dead-letter error message with its number of entries.
type DLQError struct {
	Message string
	Count   int64
}

// allTime is the window of the all-time counters.
var (
	windowStart = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	windowEnd   = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
)

// sqlPartitionStats is a CTE "ps" over a caller-defined CTE "pp" (pid, pname,
// pcreated, qid, qname, ns, task): each partition's counters for the messages created
// in [$1, $2), from the queue-mode cursor's point of view (the rules of
// sqlPartitionCounters: processing is the live lease's unacked part of what is past
// the cursor, dead-lettered counts the distinct messages queue mode dead-lettered and
// passed, so that the four add up to the total), plus the oldest
// message past the cursor and the cursor's counters. Per partition it runs one range
// scan of idx_messages_partition_created, one index probe for the oldest pending
// message and one scan of idx_dlq_partition.
const sqlPartitionStats = `
ps AS (
    SELECT pp.*, c.total, c.unconsumed,
           CASE WHEN pc.worker_id IS NOT NULL AND pc.lease_expires_at > now()
                THEN least(greatest(coalesce(pc.batch_size, 0) - coalesce(pc.acked_count, 0), 0), c.unconsumed)
                ELSE 0 END AS processing,
           d.n AS dlq, c.oldest, c.newest, o.created_at AS oldest_pending,
           coalesce(pc.total_messages_consumed, 0)::bigint AS consumed,
           coalesce(pc.total_batches_consumed, 0)::bigint AS batches, pc.last_consumed_at
    FROM pp
    LEFT JOIN queen.partition_consumers pc
           ON pc.partition_id = pp.pid AND pc.consumer_group = '__QUEUE_MODE__'
    CROSS JOIN LATERAL (
        SELECT count(*) AS total,
               count(*) FILTER (WHERE (m.created_at, m.id) >
                   (coalesce(pc.last_consumed_created_at, '-infinity'),
                    coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'))) AS unconsumed,
               min(m.created_at) AS oldest, max(m.created_at) AS newest
        FROM queen.messages m
        WHERE m.partition_id = pp.pid AND m.created_at >= $1 AND m.created_at < $2
    ) c
    LEFT JOIN LATERAL (
        SELECT m.created_at FROM queen.messages m
        WHERE m.partition_id = pp.pid AND m.created_at >= $1 AND m.created_at < $2
          AND (m.created_at, m.id) >
              (coalesce(pc.last_consumed_created_at, '-infinity'),
               coalesce(pc.last_consumed_id, '00000000-0000-0000-0000-000000000000'))
        ORDER BY m.created_at, m.id
        LIMIT 1
    ) o ON true
    CROSS JOIN LATERAL (
        -- Each dead letter's message by its id (joined, a plan could walk every message
        -- of the database once per partition).
        SELECT count(DISTINCT d.message_id) AS n FROM queen.dead_letter_queue d
        WHERE d.partition_id = pp.pid AND d.consumer_group = '__QUEUE_MODE__'
          AND (SELECT m.created_at >= $1 AND m.created_at < $2
                      AND (m.created_at, m.id) <= (pc.last_consumed_created_at, pc.last_consumed_id)
               FROM queen.messages m WHERE m.id = d.message_id)
    ) d
)`

// sqlCounterColumns sums the six counters over ps rows.
const sqlCounterColumns = `coalesce(sum(ps.total), 0)::bigint AS c_total,
       coalesce(sum(ps.unconsumed - ps.processing), 0)::bigint AS c_pending,
       coalesce(sum(ps.processing), 0)::bigint AS c_processing,
       coalesce(sum(greatest(ps.total - ps.unconsumed - ps.dlq, 0)), 0)::bigint AS c_completed,
       coalesce(sum(ps.dlq), 0)::bigint AS c_dlq`

// ppFiltered selects the partitions of the queues matching $3 queue, $4 namespace,
// $5 task ("" = any) and the scope prefix $6 ("" = every queue), at most
// maxStatusPartitions.
const ppFiltered = `
pp AS (
    SELECT p.id AS pid, p.name::text AS pname, p.created_at AS pcreated, q.id AS qid, q.name::text AS qname,
           coalesce(q.namespace, '')::text AS ns, coalesce(q.task, '')::text AS task
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE ($3::text = '' OR q.name = $3::text) AND ($4::text = '' OR q.namespace = $4::text)
      AND ($5::text = '' OR q.task = $5::text) AND ($6::text = '' OR starts_with(q.name::text, $6::text))
    ORDER BY q.name, p.name
    LIMIT ` + maxStatusPartitions + `
)`

func scanCounters(c *queue.Counters) []any {
	return []any{&c.Total, &c.Pending, &c.Processing, &c.Completed, &c.DeadLetter}
}

// fillFailed copies the dead-letter count into Failed (both count dead-lettered
// messages, as in the resource views).
func fillFailed(c *queue.Counters) { c.Failed = c.DeadLetter }

// PartitionStatusList returns partitions with their live all-time counters and
// queue-mode cursor, ordered by queue then partition name, one page. queueName ""
// lists the partitions of every queue of the scope.
func (s *Store) PartitionStatusList(ctx context.Context, sc queue.Scope, queueName string, page queue.Page) ([]queue.PartitionStatus, error) {
	rows, err := s.pool.Query(ctx, `
WITH pp AS (
    SELECT p.id AS pid, p.name::text AS pname, p.created_at AS pcreated, q.id AS qid, q.name::text AS qname,
           coalesce(q.namespace, '')::text AS ns, coalesce(q.task, '')::text AS task
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE ($3::text = '' OR q.name = $3::text) AND ($6::text = '' OR starts_with(q.name::text, $6::text))
    ORDER BY q.name, p.name
    LIMIT $4 OFFSET $5
), `+sqlPartitionStats+`
SELECT ps.pid::text, ps.pname, coalesce(ps.pcreated, now()), ps.qid::text, ps.qname, ps.ns, ps.task,
       ps.total, ps.unconsumed - ps.processing, ps.processing, greatest(ps.total - ps.unconsumed - ps.dlq, 0), ps.dlq,
       ps.oldest, ps.newest, ps.consumed, ps.batches, ps.last_consumed_at
FROM ps
ORDER BY ps.qname, ps.pname`, windowStart, windowEnd, queueName, page.Limit, page.Offset, sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.PartitionStatus, error) {
		var p queue.PartitionStatus
		c := &p.Counters
		var oldest, newest, last *time.Time
		err := row.Scan(&p.ID, &p.Name, &p.CreatedAt, &p.QueueID, &p.Queue, &p.Namespace, &p.Task,
			&c.Total, &c.Pending, &c.Processing, &c.Completed, &c.DeadLetter, &oldest, &newest,
			&p.TotalConsumed, &p.BatchesConsumed, &last)
		fillFailed(c)
		p.CreatedAt = p.CreatedAt.UTC()
		p.OldestMessage, p.NewestMessage, p.LastActivity = utcPtr(oldest), utcPtr(newest), utcPtr(last)
		return p, err
	})
	return out, interpretError(err)
}

// GroupCounterList returns live all-time counters per namespace (by "namespace") or
// per task (by "task") of the scope's queues, for the non-empty values, by name.
func (s *Store) GroupCounterList(ctx context.Context, sc queue.Scope, by string) ([]queue.GroupCounters, error) {
	col := "ns"
	if by == "task" {
		col = "task"
	}
	rows, err := s.pool.Query(ctx, `
WITH `+ppFiltered+`, `+sqlPartitionStats+`
SELECT ps.`+col+`, count(DISTINCT ps.qid), count(*), `+sqlCounterColumns+`
FROM ps
WHERE ps.`+col+` <> ''
GROUP BY ps.`+col+`
ORDER BY ps.`+col, windowStart, windowEnd, "", "", "", sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.GroupCounters, error) {
		var g queue.GroupCounters
		err := row.Scan(append([]any{&g.Key, &g.Queues, &g.Partitions}, scanCounters(&g.Counters)...)...)
		fillFailed(&g.Counters)
		return g, err
	})
	return out, interpretError(err)
}

// Overview returns the live all-time summary of the scope's queues: counts of
// queues, partitions, namespaces and tasks, message counters, and the lag of the
// partitions with pending messages (the age of their oldest pending message, and
// their number of pending messages).
func (s *Store) Overview(ctx context.Context, sc queue.Scope) (queue.Overview, error) {
	var o queue.Overview
	batch := &pgx.Batch{}
	batch.Queue(`SELECT count(*), count(DISTINCT nullif(namespace, '')), count(DISTINCT nullif(task, ''))
FROM queen.queues WHERE ($1::text = '' OR starts_with(name::text, $1::text))`, sc.Prefix())
	batch.Queue(`
WITH `+ppFiltered+`, `+sqlPartitionStats+`, lag AS (
    SELECT extract(epoch FROM now() - ps.oldest_pending)::float8 AS secs, (ps.unconsumed)::float8 AS n
    FROM ps WHERE ps.oldest_pending IS NOT NULL
)
SELECT (SELECT count(*) FROM ps), `+sqlCounterColumns+`,
       (SELECT coalesce(avg(secs), 0)::float8 FROM lag),
       (SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), 0)::float8 FROM lag),
       (SELECT coalesce(min(secs), 0)::float8 FROM lag), (SELECT coalesce(max(secs), 0)::float8 FROM lag),
       (SELECT coalesce(avg(n), 0)::float8 FROM lag),
       (SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY n), 0)::float8 FROM lag),
       (SELECT coalesce(min(n), 0)::float8 FROM lag), (SELECT coalesce(max(n), 0)::float8 FROM lag)
FROM ps`, windowStart, windowEnd, "", "", "", sc.Prefix())
	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	if err := br.QueryRow().Scan(&o.Queues, &o.Namespaces, &o.Tasks); err != nil {
		return o, interpretError(err)
	}
	t, n := &o.TimeLag, &o.OffsetLag
	dest := append([]any{&o.Partitions}, scanCounters(&o.Counters)...)
	dest = append(dest, &t.Avg, &t.Median, &t.Min, &t.Max, &n.Avg, &n.Median, &n.Min, &n.Max)
	if err := br.QueryRow().Scan(dest...); err != nil {
		return o, interpretError(err)
	}
	fillFailed(&o.Counters)
	return o, interpretError(br.Close())
}

// QueueStatusList returns one page of the scope's queues (namespace and task filter by
// exact match, "" = any), newest first, with live all-time counters.
func (s *Store) QueueStatusList(ctx context.Context, sc queue.Scope, name, namespace, task string,
	page queue.Page) ([]queue.QueueStatus, error) {
	rows, err := s.pool.Query(ctx, `
WITH qp AS (
    SELECT q.id, q.name::text AS name, coalesce(q.namespace, '')::text AS ns, coalesce(q.task, '')::text AS task,
           coalesce(q.created_at, now()) AS created_at
    FROM queen.queues q
    WHERE ($3::text = '' OR q.namespace = $3::text) AND ($4::text = '' OR q.task = $4::text)
      AND ($7::text = '' OR q.name = $7::text) AND ($8::text = '' OR starts_with(q.name::text, $8::text))
    ORDER BY q.created_at DESC, q.name
    LIMIT $5 OFFSET $6
), pp AS (
    SELECT p.id AS pid, p.name::text AS pname, p.created_at AS pcreated, qp.id AS qid, qp.name AS qname,
           qp.ns, qp.task
    FROM qp JOIN queen.partitions p ON p.queue_id = qp.id
), `+sqlPartitionStats+`, agg AS (
    SELECT ps.qid, count(*) AS parts, sum(ps.consumed)::bigint AS consumed, `+sqlCounterColumns+`
    FROM ps GROUP BY ps.qid
)
SELECT qp.id::text, qp.name, qp.ns, qp.task, qp.created_at, coalesce(agg.parts, 0),
       coalesce(agg.c_total, 0), coalesce(agg.c_pending, 0), coalesce(agg.c_processing, 0),
       coalesce(agg.c_completed, 0), coalesce(agg.c_dlq, 0), coalesce(agg.consumed, 0)
FROM qp LEFT JOIN agg ON agg.qid = qp.id
ORDER BY qp.created_at DESC, qp.name`, windowStart, windowEnd, namespace, task, page.Limit, page.Offset, name,
		sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	return collectQueueStatus(rows)
}

func collectQueueStatus(rows pgx.Rows) ([]queue.QueueStatus, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.QueueStatus, error) {
		var q queue.QueueStatus
		dest := append([]any{&q.ID, &q.Name, &q.Namespace, &q.Task, &q.CreatedAt, &q.Partitions},
			scanCounters(&q.Counters)...)
		err := row.Scan(append(dest, &q.TotalConsumed)...)
		fillFailed(&q.Counters)
		q.CreatedAt = q.CreatedAt.UTC()
		return q, err
	})
	return out, interpretError(err)
}

// sqlMessageCounters sums the counters of the messages created in [$1, $2) of the
// queues matching $3 queue, $4 namespace, $5 task and the scope prefix $6.
const sqlMessageCounters = `
WITH ` + ppFiltered + `, ` + sqlPartitionStats + `
SELECT ` + sqlCounterColumns + ` FROM ps`

// MessageCounters returns the live counters of the messages created in the window
// of f, in the queues its Queue, Namespace, Task and Prefix match.
func (s *Store) MessageCounters(ctx context.Context, f SeriesFilter) (queue.Counters, error) {
	var c queue.Counters
	err := s.pool.QueryRow(ctx, sqlMessageCounters, f.From, f.To, f.Queue, f.Namespace, f.Task, f.Prefix).
		Scan(scanCounters(&c)...)
	fillFailed(&c)
	return c, interpretError(err)
}

// StatusSnapshot returns the live part of the /status view for f (its window,
// Queue, Namespace, Task and Prefix): counters of the
// messages created in the window, the queues with messages in it (at most 500, by
// name, with their all-time consumed count), the live queue leases, and the
// dead-letter entries that failed in the window.
func (s *Store) StatusSnapshot(ctx context.Context, f SeriesFilter) (StatusSnapshot, error) {
	var snap StatusSnapshot
	batch := &pgx.Batch{}
	batch.Queue(sqlMessageCounters, f.From, f.To, f.Queue, f.Namespace, f.Task, f.Prefix)
	batch.Queue(`
WITH `+ppFiltered+`, `+sqlPartitionStats+`
SELECT ps.qid::text, ps.qname, ps.ns, ps.task, min(q.created_at), count(*), `+sqlCounterColumns+`,
       sum(ps.consumed)::bigint
FROM ps JOIN queen.queues q ON q.id = ps.qid
GROUP BY ps.qid, ps.qname, ps.ns, ps.task
HAVING sum(ps.total) > 0
ORDER BY ps.qname
LIMIT `+strconv.Itoa(maxStatusQueues), f.From, f.To, f.Queue, f.Namespace, f.Task, f.Prefix)
	batch.Queue(`
SELECT count(DISTINCT pc.worker_id), count(*), coalesce(sum(pc.batch_size), 0)::bigint,
       coalesce(sum(pc.acked_count), 0)::bigint
FROM queen.partition_consumers pc
JOIN queen.partitions p ON p.id = pc.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE pc.worker_id IS NOT NULL AND pc.lease_expires_at > now()
  AND ($1::text = '' OR q.name = $1::text) AND ($2::text = '' OR q.namespace = $2::text)
  AND ($3::text = '' OR q.task = $3::text) AND ($4::text = '' OR starts_with(q.name::text, $4::text))`,
		f.Queue, f.Namespace, f.Task, f.Prefix)
	const dlqScope = `
FROM queen.dead_letter_queue d
JOIN queen.partitions p ON p.id = d.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE d.failed_at >= $1 AND d.failed_at < $2
  AND ($3::text = '' OR q.name = $3::text) AND ($4::text = '' OR q.namespace = $4::text)
  AND ($5::text = '' OR q.task = $5::text) AND ($6::text = '' OR starts_with(q.name::text, $6::text))`
	batch.Queue(`SELECT count(*), count(DISTINCT d.partition_id)`+dlqScope, f.From, f.To, f.Queue, f.Namespace, f.Task,
		f.Prefix)
	batch.Queue(`SELECT coalesce(d.error_message, ''), count(*)`+dlqScope+`
GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT `+strconv.Itoa(topDLQErrors), f.From, f.To, f.Queue, f.Namespace, f.Task, f.Prefix)

	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	if err := br.QueryRow().Scan(scanCounters(&snap.Messages)...); err != nil {
		return snap, interpretError(err)
	}
	fillFailed(&snap.Messages)
	rows, err := br.Query()
	if err != nil {
		return snap, interpretError(err)
	}
	if snap.Queues, err = collectQueueStatus(rows); err != nil {
		return snap, err
	}
	l := &snap.Leases
	if err := br.QueryRow().Scan(&l.Active, &l.PartitionsWithLeases, &l.TotalBatchSize, &l.TotalAcked); err != nil {
		return snap, interpretError(err)
	}
	if err := br.QueryRow().Scan(&snap.DLQ.TotalMessages, &snap.DLQ.AffectedPartitions); err != nil {
		return snap, interpretError(err)
	}
	rows, err = br.Query()
	if err != nil {
		return snap, interpretError(err)
	}
	snap.DLQ.TopErrors, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (DLQError, error) {
		var e DLQError
		return e, row.Scan(&e.Message, &e.Count)
	})
	if err != nil {
		return snap, interpretError(err)
	}
	return snap, interpretError(br.Close())
}

// QueueMessagesRecent returns one page of a queue's messages, newest first, each with
// its status as the queue-mode consumer sees it (dead_letter, completed, processing,
// pending). Each partition contributes at most offset+limit rows through a backward
// scan of idx_messages_partition_created, so the cost is bounded by the page, not
// the queue.
func (s *Store) QueueMessagesRecent(ctx context.Context, queueName string, page queue.Page) ([]queue.MessageInfo, error) {
	rows, err := s.pool.Query(ctx, `
WITH pp AS (
    SELECT p.id, p.name::text AS pname, q.name::text AS qname
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.name = $1
    LIMIT `+maxStatusPartitions+`
), cand AS (
    SELECT m.id, m.transaction_id, m.partition_id, m.created_at, pp.pname, pp.qname
    FROM pp CROSS JOIN LATERAL (
        SELECT m.id, m.transaction_id, m.partition_id, m.created_at FROM queen.messages m
        WHERE m.partition_id = pp.id
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT $2::bigint + $3::bigint
    ) m
)
SELECT c.id::text, c.transaction_id, c.partition_id::text, c.pname, c.qname, c.created_at,
       CASE WHEN EXISTS (SELECT 1 FROM queen.dead_letter_queue d
                         WHERE d.message_id = c.id AND d.consumer_group = '__QUEUE_MODE__') THEN 'dead_letter'
            WHEN pc.last_consumed_created_at IS NOT NULL
                 AND (pc.last_consumed_created_at, pc.last_consumed_id) >= (c.created_at, c.id) THEN 'completed'
            WHEN pc.worker_id IS NOT NULL AND pc.lease_expires_at > now() THEN 'processing'
            ELSE 'pending' END
FROM cand c
LEFT JOIN queen.partition_consumers pc ON pc.partition_id = c.partition_id AND pc.consumer_group = '__QUEUE_MODE__'
ORDER BY c.created_at DESC, c.id DESC
LIMIT $2 OFFSET $3`, queueName, page.Limit, page.Offset)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.MessageInfo, error) {
		var m queue.MessageInfo
		err := row.Scan(&m.ID, &m.TransactionID, &m.PartitionID, &m.Partition, &m.Queue, &m.CreatedAt, &m.State.Status)
		m.CreatedAt = m.CreatedAt.UTC()
		return m, err
	})
	return out, interpretError(err)
}

// MessageCreationCounts counts the messages created in [From, To) of the queues
// matching f's Queue, Namespace, Task and Prefix, per unit ("minute", "hour" or "day", UTC), oldest first; buckets without
// messages are absent.
func (s *Store) MessageCreationCounts(ctx context.Context, f SeriesFilter, unit string) ([]CountBucket, error) {
	rows, err := s.pool.Query(ctx, `
SELECT date_trunc($6::text, m.created_at) AS b, count(*)
FROM queen.partitions p
JOIN queen.queues q ON q.id = p.queue_id
JOIN queen.messages m ON m.partition_id = p.id AND m.created_at >= $1 AND m.created_at < $2
WHERE ($3::text = '' OR q.name = $3::text) AND ($4::text = '' OR q.namespace = $4::text)
  AND ($5::text = '' OR q.task = $5::text) AND ($7::text = '' OR starts_with(q.name::text, $7::text))
GROUP BY 1
ORDER BY 1
LIMIT `+strconv.Itoa(maxSeriesRows), f.From, f.To, f.Queue, f.Namespace, f.Task, unit, f.Prefix)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CountBucket, error) {
		var c CountBucket
		err := row.Scan(&c.Bucket, &c.Count)
		c.Bucket = c.Bucket.UTC()
		return c, err
	})
	return out, interpretError(err)
}
