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
	// maxStatusPartitions caps the partitions of one queue QueueMessagesRecent takes
	// its candidates from, those with the newest heads (a string: it is spliced into
	// SQL). The counters and totals of the status views have no such cap
	// (status_totals.go).
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

// QueueMessagesRecent returns one page of a queue's messages, newest first, each with
// its status as the queue-mode consumer sees it (dead_letter, completed, processing,
// pending). Each partition contributes at most offset+limit rows through a backward
// scan of idx_messages_partition_created, so the cost is bounded by the page, not
// the queue.
func (s *Store) QueueMessagesRecent(ctx context.Context, queueName string, page queue.Page) ([]queue.MessageInfo, error) {
	rows, err := s.pool.Query(ctx, `
WITH pp AS (
    -- The partitions with the newest heads: the newest N messages of the queue are in
    -- at most N partitions, whose heads are among its N newest messages, so a page
    -- within the first maxStatusPartitions messages is exact however many partitions
    -- the queue has.
    SELECT p.id, p.name::text AS pname, q.name::text AS qname
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    LEFT JOIN queen.partition_lookup pl ON pl.partition_id = p.id AND pl.queue_name = q.name
    WHERE q.name = $1
    ORDER BY pl.last_message_created_at DESC NULLS LAST
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
