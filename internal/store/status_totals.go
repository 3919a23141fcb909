package store

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// The totals of the live status views: counters summed over every partition of the
// queues a view covers, with no cap on partitions. They come from one grouped pass
// over those partitions' messages (a hash join, or index range scans when the planner
// finds that cheaper for a few partitions) instead of per-partition lateral queries:
// on 100 000 partitions of three messages each, the overview in 0.5 s against 1.4 s
// (docs/api.md, "status and report views").

// ppFiltered selects every partition of the queues matching $3 queue, $4 namespace,
// $5 task ("" = any) and the scope prefix $6 ("" = every queue).
const ppFiltered = `
pp AS (
    SELECT p.id AS pid, q.id AS qid, q.name::text AS qname,
           coalesce(q.namespace, '')::text AS ns, coalesce(q.task, '')::text AS task
    FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE ($3::text = '' OR q.name = $3::text) AND ($4::text = '' OR q.namespace = $4::text)
      AND ($5::text = '' OR q.task = $5::text) AND ($6::text = '' OR starts_with(q.name::text, $6::text))
)`

// sqlPartitionTotals is a CTE "ps" over a caller-defined CTE "pp" (pid, qid): one
// row (pid, qid, ...) per partition of pp with messages created in [$1, $2), with the
// counters of sqlPartitionStats (total, unconsumed, processing, dlq and the oldest
// message past the queue-mode cursor) but none of its per-partition probes. A
// partition without messages in the window counts zero everywhere, so it has no row.
// Dead letters are counted as there: distinct messages queue mode dead-lettered and
// passed, each looked up by its id.
const sqlPartitionTotals = `
pt AS (
    SELECT pp.pid, pp.qid, count(*) AS total,
           count(*) FILTER (WHERE c.last_consumed_created_at IS NULL
                            OR (m.created_at, m.id) > (c.last_consumed_created_at, c.last_consumed_id)) AS unconsumed,
           min(m.created_at) FILTER (WHERE c.last_consumed_created_at IS NULL
                            OR (m.created_at, m.id) > (c.last_consumed_created_at, c.last_consumed_id)) AS oldest_pending,
           max(CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN greatest(coalesce(c.batch_size, 0) - coalesce(c.acked_count, 0), 0) ELSE 0 END) AS in_flight
    FROM pp
    JOIN queen.messages m ON m.partition_id = pp.pid
    LEFT JOIN queen.partition_consumers c
           ON c.partition_id = m.partition_id AND c.consumer_group = '__QUEUE_MODE__'
    WHERE m.created_at >= $1 AND m.created_at < $2
    GROUP BY pp.pid, pp.qid
), pd AS (
    SELECT d.partition_id AS pid, count(DISTINCT d.message_id) AS n
    FROM pp
    JOIN queen.dead_letter_queue d ON d.partition_id = pp.pid AND d.consumer_group = '__QUEUE_MODE__'
    JOIN queen.partition_consumers c ON c.partition_id = d.partition_id AND c.consumer_group = '__QUEUE_MODE__'
    JOIN queen.messages m ON m.id = d.message_id
    WHERE m.created_at >= $1 AND m.created_at < $2
      AND (m.created_at, m.id) <= (c.last_consumed_created_at, c.last_consumed_id)
    GROUP BY d.partition_id
), ps AS (
    SELECT pt.pid, pt.qid, pt.total, pt.unconsumed,
           least(pt.in_flight, pt.unconsumed) AS processing, coalesce(pd.n, 0) AS dlq, pt.oldest_pending
    FROM pt LEFT JOIN pd ON pd.pid = pt.pid
)`

// sqlCounterColumns sums the six counters over ps rows.
const sqlCounterColumns = `coalesce(sum(ps.total), 0)::bigint AS c_total,
       coalesce(sum(ps.unconsumed - ps.processing), 0)::bigint AS c_pending,
       coalesce(sum(ps.processing), 0)::bigint AS c_processing,
       coalesce(sum(greatest(ps.total - ps.unconsumed - ps.dlq, 0)), 0)::bigint AS c_completed,
       coalesce(sum(ps.dlq), 0)::bigint AS c_dlq`

// sqlQueueConsumed is a CTE "pq" over pp: per queue, its partitions and the messages
// its queue-mode cursors consumed.
const sqlQueueConsumed = `
pq AS (
    SELECT pp.qid, count(*) AS parts, coalesce(sum(c.total_messages_consumed), 0)::bigint AS consumed
    FROM pp LEFT JOIN queen.partition_consumers c
           ON c.partition_id = pp.pid AND c.consumer_group = '__QUEUE_MODE__'
    GROUP BY pp.qid
)`

// GroupCounterList returns live all-time counters per namespace (by "namespace") or
// per task (by "task") of the scope's queues, for the non-empty values, by name.
func (s *Store) GroupCounterList(ctx context.Context, sc queue.Scope, by string) ([]queue.GroupCounters, error) {
	// pcol names the key in pp, col in queen.queues.
	pcol, col := "ns", "namespace"
	if by == "task" {
		pcol, col = "task", "task"
	}
	rows, err := s.pool.Query(ctx, `
WITH `+ppFiltered+`, `+sqlPartitionTotals+`, g AS (
    SELECT pp.`+pcol+` AS k, count(DISTINCT pp.qid) AS queues, count(*) AS parts FROM pp GROUP BY pp.`+pcol+`
), gc AS (
    SELECT coalesce(q.`+col+`, '')::text AS k, `+sqlCounterColumns+`
    FROM ps JOIN queen.queues q ON q.id = ps.qid GROUP BY 1
)
SELECT g.k, g.queues, g.parts, coalesce(gc.c_total, 0), coalesce(gc.c_pending, 0), coalesce(gc.c_processing, 0),
       coalesce(gc.c_completed, 0), coalesce(gc.c_dlq, 0)
FROM g LEFT JOIN gc ON gc.k = g.k
WHERE g.k <> ''
ORDER BY g.k`, windowStart, windowEnd, "", "", "", sc.Prefix())
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
WITH `+ppFiltered+`, `+sqlPartitionTotals+`, lag AS (
    SELECT extract(epoch FROM now() - ps.oldest_pending)::float8 AS secs, (ps.unconsumed)::float8 AS n
    FROM ps WHERE ps.oldest_pending IS NOT NULL
)
SELECT (SELECT count(*) FROM pp), `+sqlCounterColumns+`,
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
    SELECT p.id AS pid, qp.id AS qid, qp.name AS qname, qp.ns, qp.task
    FROM qp JOIN queen.partitions p ON p.queue_id = qp.id
), `+sqlPartitionTotals+`, `+sqlQueueConsumed+`, agg AS (
    SELECT ps.qid, `+sqlCounterColumns+` FROM ps GROUP BY ps.qid
)
SELECT qp.id::text, qp.name, qp.ns, qp.task, qp.created_at, coalesce(pq.parts, 0),
       coalesce(agg.c_total, 0), coalesce(agg.c_pending, 0), coalesce(agg.c_processing, 0),
       coalesce(agg.c_completed, 0), coalesce(agg.c_dlq, 0), coalesce(pq.consumed, 0)
FROM qp LEFT JOIN agg ON agg.qid = qp.id LEFT JOIN pq ON pq.qid = qp.id
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
WITH ` + ppFiltered + `, ` + sqlPartitionTotals + `
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
WITH `+ppFiltered+`, `+sqlPartitionTotals+`, `+sqlQueueConsumed+`, agg AS (
    SELECT ps.qid, `+sqlCounterColumns+` FROM ps GROUP BY ps.qid
)
SELECT q.id::text, q.name::text, coalesce(q.namespace, '')::text, coalesce(q.task, '')::text,
       coalesce(q.created_at, now()), pq.parts, agg.c_total, agg.c_pending, agg.c_processing, agg.c_completed,
       agg.c_dlq, pq.consumed
FROM agg JOIN pq ON pq.qid = agg.qid JOIN queen.queues q ON q.id = agg.qid
WHERE agg.c_total > 0
ORDER BY q.name
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
