package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlMessageParts selects partitions with their queue's columns (the CTE x).
const sqlMessageParts = `
SELECT p.id, p.name::text AS pname, q.name::text AS qname, coalesce(q.namespace, '')::text AS ns,
       coalesce(q.task, '')::text AS task, coalesce(q.priority, 0) AS prio,
       coalesce(q.lease_time, 300) AS lease_time, coalesce(q.retry_limit, 3) AS retry_limit,
       coalesce(q.retry_delay, 1000) AS retry_delay, coalesce(q.ttl, 3600) AS ttl
FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id`

// sqlMessagePartsFiltered is sqlMessageParts with the listing's exact-match filters
// ($1 queue, $2 partition, $3 namespace, $4 task; empty = any) and the scope's queue
// name prefix $5 ("" = every queue).
const sqlMessagePartsFiltered = sqlMessageParts + `
WHERE ($1::text = '' OR q.name = $1::text) AND ($2::text = '' OR p.name = $2::text)
  AND ($3::text = '' OR q.namespace = $3::text) AND ($4::text = '' OR q.task = $4::text)
  AND ($5::text = '' OR starts_with(q.name::text, $5::text))`

// sqlMessageCursors (the CTE c) adds to each partition of x the cursor facts the
// status needs, read once per partition through the partition_consumers unique key:
// the queue-mode cursor and live lease, the number of named (bus) groups and the
// lowest bus cursor (NULL when some bus group has not consumed anything yet).
const sqlMessageCursors = `
SELECT x.*, (qm.id IS NOT NULL) AS has_qm, qm.last_consumed_created_at AS qm_ts, qm.last_consumed_id AS qm_id,
       CASE WHEN qm.worker_id IS NOT NULL AND qm.lease_expires_at > now() THEN qm.lease_expires_at END AS qm_lease,
       bus.n AS bus_groups, bmin.ts AS bus_ts, bmin.id AS bus_id
FROM x
LEFT JOIN queen.partition_consumers qm ON qm.partition_id = x.id AND qm.consumer_group = '__QUEUE_MODE__'
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n FROM queen.partition_consumers pc
    WHERE pc.partition_id = x.id AND pc.consumer_group <> '__QUEUE_MODE__'
) bus
LEFT JOIN LATERAL (
    SELECT pc.last_consumed_created_at AS ts, pc.last_consumed_id AS id FROM queen.partition_consumers pc
    WHERE pc.partition_id = x.id AND pc.consumer_group <> '__QUEUE_MODE__'
    ORDER BY pc.last_consumed_created_at NULLS FIRST, pc.last_consumed_id
    LIMIT 1
) bmin ON true`

// sqlMessageStatus is the status of message m in partition c: dead_letter with any
// DLQ row (one probe of idx_dlq_message_consumer); in bus mode (named groups, no
// queue-mode cursor) completed iff every bus cursor is at or past it; else completed /
// processing (live lease) / pending from queue mode. Cursors are compared as
// (created_at, id) tuples, never by id alone.
const sqlMessageStatus = `CASE
    WHEN EXISTS (SELECT 1 FROM queen.dead_letter_queue d WHERE d.message_id = m.id) THEN 'dead_letter'
    WHEN NOT c.has_qm AND c.bus_groups > 0 THEN
         CASE WHEN c.bus_ts IS NOT NULL AND (c.bus_ts, c.bus_id) >= (m.created_at, m.id)
              THEN 'completed' ELSE 'pending' END
    WHEN c.qm_ts IS NOT NULL AND (c.qm_ts, c.qm_id) >= (m.created_at, m.id) THEN 'completed'
    WHEN c.qm_lease IS NOT NULL THEN 'processing'
    ELSE 'pending' END`

// sqlMessageQueueStatus is what queue mode alone sees of message m.
const sqlMessageQueueStatus = `CASE
    WHEN s.dlq_qm THEN 'dead_letter'
    WHEN c.qm_ts IS NOT NULL AND (c.qm_ts, c.qm_id) >= (m.created_at, m.id) THEN 'completed'
    WHEN c.qm_lease IS NOT NULL THEN 'processing'
    ELSE 'pending' END`

// sqlMessageGroupCounts (lateral s) counts, for one shown message m, the groups of its
// partition and those at or past it; it runs only for the rows of a page.
const sqlMessageGroupCounts = `
SELECT (count(*) FILTER (WHERE g.consumed))::int AS consumed_by, count(*)::int AS total_groups,
       (count(*) FILTER (WHERE g.consumed AND NOT g.qm))::int AS bus_consumed,
       EXISTS (SELECT 1 FROM queen.dead_letter_queue d
               WHERE d.message_id = m.id AND d.consumer_group = '__QUEUE_MODE__') AS dlq_qm
FROM (
    SELECT pc.consumer_group = '__QUEUE_MODE__' AS qm,
           (pc.last_consumed_created_at IS NOT NULL
            AND (pc.last_consumed_created_at, pc.last_consumed_id) >= (m.created_at, m.id)) AS consumed
    FROM queen.partition_consumers pc
    WHERE pc.partition_id = m.partition_id
) g`

// sqlMessageInfoColumns are the columns scanned by scanMessageInfo, over m, c and s.
const sqlMessageInfoColumns = `m.id::text, m.transaction_id, m.partition_id::text, c.pname, c.qname, c.ns, c.task,
       coalesce(m.trace_id::text, ''), coalesce(m.producer_sub, ''), c.prio, m.created_at,
       ` + sqlMessageStatus + `, ` + sqlMessageQueueStatus + `,
       s.consumed_by, s.total_groups, c.has_qm, c.bus_groups, s.bus_consumed, c.qm_lease`

// sqlMessageListPage finds the page per partition first: a backward range scan of
// idx_messages_partition_created over [$6, $7) that stops after $9 + $10 rows
// (matching status $8, when given), so the work is bounded by partitions × (limit +
// offset) index rows, never more than the window holds. The merged top rows are then
// paged, and each row of the page (at most $9) is detailed by one primary-key probe.
// Two planner traps are closed on purpose: the partition's facts ride along from c,
// because a second join with c was rescanned once per page row; and the lateral with
// OFFSET 0 cannot be flattened, because a plain join with queen.messages was planned,
// at limit 10 000, as a scan of the whole table, the window ignored.
const sqlMessageListPage = `WITH x AS (` + sqlMessagePartsFiltered + `), c AS (` + sqlMessageCursors + `),
page AS (
    SELECT c.*, h.id AS mid FROM c CROSS JOIN LATERAL (
        SELECT m.id, m.created_at FROM queen.messages m
        WHERE m.partition_id = c.id AND m.created_at >= $6 AND m.created_at < $7
          AND ($8::text = '' OR ` + sqlMessageStatus + ` = $8::text)
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT $9::bigint + $10::bigint
    ) h
    ORDER BY h.created_at DESC, h.id DESC
    LIMIT $9::bigint OFFSET $10::bigint
)
SELECT ` + sqlMessageInfoColumns + `
FROM page c
CROSS JOIN LATERAL (
    SELECT m.id, m.transaction_id, m.partition_id, m.trace_id, m.producer_sub, m.created_at
    FROM queen.messages m WHERE m.id = c.mid OFFSET 0
) m
CROSS JOIN LATERAL (` + sqlMessageGroupCounts + `) s
ORDER BY m.created_at DESC, m.id DESC`

// sqlMessageListCount counts the window's messages (in status $8, when given) with
// index-only range scans per partition; a status costs one DLQ probe per message.
const sqlMessageListCount = `WITH x AS (` + sqlMessagePartsFiltered + `), c AS (` + sqlMessageCursors + `)
SELECT count(*) FROM c
JOIN queen.messages m ON m.partition_id = c.id AND m.created_at >= $6 AND m.created_at < $7
WHERE ($8::text = '' OR ` + sqlMessageStatus + ` = $8::text)`

// sqlMessageListMode summarises the cursors of the filtered partitions.
const sqlMessageListMode = `WITH x AS (` + sqlMessagePartsFiltered + `)
SELECT coalesce(bool_or(pc.consumer_group = '__QUEUE_MODE__'), false),
       (count(DISTINCT pc.consumer_group) FILTER (WHERE pc.consumer_group <> '__QUEUE_MODE__'))::int
FROM x JOIN queen.partition_consumers pc ON pc.partition_id = x.id`

// MessageList returns one page of the messages matching f (window and page already
// validated), newest first, with the total count and the mode summary. The three
// queries go in one batch inside one read-only REPEATABLE READ transaction, so the
// total, the mode and the page describe the same snapshot: offset + len(page) < total
// holds exactly when rows are left after the page.
func (s *Store) MessageList(ctx context.Context, f queue.MessageFilter) (queue.MessageList, error) {
	var list queue.MessageList
	filters := []any{f.Queue, f.Partition, f.Namespace, f.Task, f.Scope.Prefix()}
	window := append(filters[:5:5], f.From, f.To, f.Status)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			batch := &pgx.Batch{}
			batch.Queue(sqlMessageListCount, window...)
			batch.Queue(sqlMessageListMode, filters...)
			batch.Queue(sqlMessageListPage, append(window[:8:8], f.Page.Limit, f.Page.Offset)...)
			br := tx.SendBatch(ctx, batch)
			defer func() { _ = br.Close() }()

			if err := br.QueryRow().Scan(&list.Total); err != nil {
				return err
			}
			if err := br.QueryRow().Scan(&list.HasQueueMode, &list.BusGroups); err != nil {
				return err
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			list.Messages, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.MessageInfo, error) {
				var mi queue.MessageInfo
				return mi, scanMessageInfo(row, &mi)
			})
			if err != nil {
				return err
			}
			return br.Close()
		})
	if err != nil {
		return queue.MessageList{}, interpretError(err)
	}
	return list, nil
}

func scanMessageInfo(row pgx.Row, mi *queue.MessageInfo, extra ...any) error {
	st := &mi.State
	var lease *time.Time
	dest := append([]any{&mi.ID, &mi.TransactionID, &mi.PartitionID, &mi.Partition, &mi.Queue, &mi.Namespace,
		&mi.Task, &mi.TraceID, &mi.ProducerSub, &mi.Priority, &mi.CreatedAt, &st.Status, &st.QueueStatus,
		&st.ConsumedBy, &st.TotalGroups, &st.HasQueueMode, &st.BusGroups, &st.BusConsumed, &lease}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	mi.CreatedAt = mi.CreatedAt.UTC()
	if st.Status == queue.MessageProcessing {
		st.LeaseExpiresAt = utcPtr(lease)
	}
	return nil
}

const sqlMessageGet = `WITH x AS (` + sqlMessageParts + `
    WHERE p.id = $1::uuid AND ($3::text = '' OR starts_with(q.name::text, $3::text))), c AS (` + sqlMessageCursors + `)
SELECT ` + sqlMessageInfoColumns + `,
       m.payload, coalesce(m.is_encrypted, false), c.lease_time, c.retry_limit, c.retry_delay, c.ttl,
       dl.found IS NOT NULL, dl.error_message, dl.retry_count
FROM c
JOIN queen.messages m ON m.partition_id = c.id AND m.transaction_id COLLATE "C" = $2
CROSS JOIN LATERAL (` + sqlMessageGroupCounts + `) s
LEFT JOIN LATERAL (
    SELECT true AS found, d.error_message, d.retry_count FROM queen.dead_letter_queue d
    WHERE d.message_id = m.id
    ORDER BY d.failed_at DESC NULLS LAST, d.id DESC
    LIMIT 1
) dl ON true`

// sqlMessageGroups lists the cursors of the message's partition ($1) with whether
// each is at or past the message ($2 created_at, $3 id); queue mode first.
const sqlMessageGroups = `
SELECT pc.consumer_group::text,
       (pc.last_consumed_created_at IS NOT NULL
        AND (pc.last_consumed_created_at, pc.last_consumed_id) >= ($2::timestamptz, $3::uuid)),
       CASE WHEN pc.worker_id IS NOT NULL AND pc.lease_expires_at > now() THEN pc.lease_expires_at END
FROM queen.partition_consumers pc
WHERE pc.partition_id = $1::uuid
ORDER BY pc.consumer_group <> '__QUEUE_MODE__', pc.consumer_group`

// MessageGet returns one message (partition id already validated as a UUID) of the
// scope with its stored payload, state, latest DLQ entry and per-group consumption;
// queue.ErrNotFound when absent or outside the scope.
func (s *Store) MessageGet(ctx context.Context, sc queue.Scope, partitionID, transactionID string) (queue.MessageDetail, error) {
	var d queue.MessageDetail
	var payload []byte
	var hasDLQ bool
	var dlqError *string
	var dlqRetry *int
	err := scanMessageInfo(s.pool.QueryRow(ctx, sqlMessageGet, partitionID, transactionID, sc.Prefix()), &d.MessageInfo,
		&payload, &d.IsEncrypted, &d.LeaseTime, &d.RetryLimit, &d.RetryDelay, &d.TTL, &hasDLQ, &dlqError, &dlqRetry)
	if err != nil {
		return d, interpretError(err)
	}
	d.Payload = json.RawMessage(payload)
	if hasDLQ {
		d.DLQError, d.DLQRetryCount = dlqError, dlqRetry
		if d.DLQRetryCount == nil {
			d.DLQRetryCount = new(int)
		}
	}
	rows, err := s.pool.Query(ctx, sqlMessageGroups, partitionID, d.CreatedAt, d.ID)
	if err != nil {
		return d, interpretError(err)
	}
	d.Groups, err = collectRows(rows, func(row pgx.Rows) (queue.GroupConsumption, error) {
		var g queue.GroupConsumption
		var lease *time.Time
		err := row.Scan(&g.Name, &g.Consumed, &lease)
		g.LeaseExpiresAt = utcPtr(lease)
		return g, err
	})
	return d, err
}

// sqlMessageDelete deletes message ($1 partition, $2 transaction id) when its queue is
// in the scope of prefix $3 ("" = every queue).
const sqlMessageDelete = `DELETE FROM queen.messages m
WHERE m.partition_id = $1::uuid AND m.transaction_id COLLATE "C" = $2
  AND ($3::text = '' OR EXISTS (
      SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
      WHERE p.id = $1::uuid AND starts_with(q.name::text, $3::text)))`

// MessageDelete deletes one message (partition id already validated as a UUID) of the
// scope; its DLQ rows and traces go with it (foreign keys ON DELETE CASCADE), cursors
// stay. A message outside the scope is not deleted and reported as absent.
func (s *Store) MessageDelete(ctx context.Context, sc queue.Scope, partitionID, transactionID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, sqlMessageDelete, partitionID, transactionID, sc.Prefix())
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() > 0, nil
}

// sqlDLQFilter selects dead-letter rows d of partitions p of queues q by $1 queue,
// $2 consumer group, $3 partition (empty = any), failed_at bounds $4, $5 (NULL =
// unbounded, inclusive) and the scope's queue name prefix $6 ("" = every queue).
const sqlDLQFilter = `
FROM queen.dead_letter_queue d
JOIN queen.partitions p ON p.id = d.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE ($1::text = '' OR q.name = $1::text) AND ($2::text = '' OR d.consumer_group = $2::text)
  AND ($3::text = '' OR p.name = $3::text)
  AND ($4::timestamptz IS NULL OR d.failed_at >= $4::timestamptz)
  AND ($5::timestamptz IS NULL OR d.failed_at <= $5::timestamptz)
  AND ($6::text = '' OR starts_with(q.name::text, $6::text))`

const sqlDLQCount = `SELECT count(*)` + sqlDLQFilter

// sqlDLQPage pages the DLQ rows first (idx_dlq_failed_at), then reads the page's
// messages.
const sqlDLQPage = `
WITH page AS (
    SELECT d.id, d.message_id, d.partition_id, q.name::text AS qname, p.name::text AS pname,
           coalesce(d.consumer_group, '')::text AS grp, d.error_message, coalesce(d.retry_count, 0) AS retry_count,
           coalesce(d.failed_at, now()) AS failed_at
    ` + sqlDLQFilter + `
    ORDER BY d.failed_at DESC, d.id DESC
    LIMIT $7 OFFSET $8
)
SELECT m.id::text, m.transaction_id, page.partition_id::text, page.qname, page.pname, page.grp,
       page.error_message, page.retry_count, m.payload, coalesce(m.producer_sub, ''), m.created_at, page.failed_at,
       page.id::text
FROM page JOIN queen.messages m ON m.id = page.message_id
ORDER BY page.failed_at DESC, page.id DESC`

// DLQList returns one page of dead-letter entries matching f, newest failure first,
// with the stored (possibly encrypted) payloads and the total count.
func (s *Store) DLQList(ctx context.Context, f queue.DLQFilter) ([]queue.DLQEntry, int64, error) {
	args := dlqFilterArgs(f)
	var total int64
	if err := s.pool.QueryRow(ctx, sqlDLQCount, args...).Scan(&total); err != nil {
		return nil, 0, interpretError(err)
	}
	if total <= int64(f.Page.Offset) {
		return nil, total, nil
	}
	rows, err := s.pool.Query(ctx, sqlDLQPage, append(args, f.Page.Limit, f.Page.Offset)...)
	if err != nil {
		return nil, 0, interpretError(err)
	}
	entries, err := collectRows(rows, func(row pgx.Rows) (queue.DLQEntry, error) {
		var e queue.DLQEntry
		var payload []byte
		err := row.Scan(&e.MessageID, &e.TransactionID, &e.PartitionID, &e.Queue, &e.Partition, &e.ConsumerGroup,
			&e.ErrorMessage, &e.RetryCount, &payload, &e.ProducerSub, &e.CreatedAt, &e.FailedAt, &e.DLQID)
		e.Payload = json.RawMessage(payload)
		e.CreatedAt, e.FailedAt = e.CreatedAt.UTC(), e.FailedAt.UTC()
		return e, err
	})
	return entries, total, err
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
