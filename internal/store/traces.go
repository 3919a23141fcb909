package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlTracePartitionInScope8 holds when partition_id belongs to a queue of the scope
// prefix $8 ("" = every queue).
const sqlTracePartitionInScope8 = `($8::text = '' OR EXISTS (
    SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = $1::uuid AND starts_with(q.name::text, $8::text)))`

// sqlTraceInsert resolves the message and inserts the trace row and its names in one
// statement (so one implicit transaction): no message, no row, no names. It locks the
// partition row first, in key-share mode (the lock its foreign key takes): a delete of
// the queue locks the partition before the messages, while the trace row's foreign keys
// would lock the message first, and each would wait for the other.
const sqlTraceInsert = `
WITH p AS MATERIALIZED (
    SELECT p.id FROM queen.partitions p WHERE p.id = $1::uuid FOR KEY SHARE
), m AS (
    SELECT mm.id, mm.partition_id, mm.transaction_id FROM p JOIN queen.messages mm ON mm.partition_id = p.id
    WHERE mm.transaction_id = $2 AND ` + sqlTracePartitionInScope8 + `
), t AS (
    INSERT INTO queen.message_traces (message_id, partition_id, transaction_id, consumer_group,
                                      event_type, data, worker_id)
    SELECT m.id, m.partition_id, m.transaction_id, $3, $4, $5::jsonb, $6 FROM m
    RETURNING id
), n AS (
    INSERT INTO queen.message_trace_names (trace_id, trace_name)
    SELECT t.id, x.name FROM t CROSS JOIN unnest($7::text[]) WITH ORDINALITY AS x(name, ord)
    ORDER BY x.ord
    ON CONFLICT (trace_id, trace_name) DO NOTHING
)
SELECT id::text FROM t`

// TraceInsert records ev (partition id already validated as a UUID, names
// deduplicated) with workerID and returns the trace id; queue.ErrNotFound when the
// message does not exist in the scope.
func (s *Store) TraceInsert(ctx context.Context, sc queue.Scope, ev queue.TraceEvent, workerID string) (string, error) {
	names := ev.Names
	if names == nil {
		names = []string{}
	}
	var id string
	err := retryRaced(ctx, func() error { // a deadlock with a delete of the queue took no effect
		return s.pool.QueryRow(ctx, sqlTraceInsert, ev.PartitionID, ev.TransactionID, ev.ConsumerGroup,
			ev.EventType, string(ev.Data), workerID, names, sc.Prefix()).Scan(&id)
	})
	if isDeletedMeanwhile(err) {
		// The message (its queue) was deleted between the statement's read and its
		// insert: nothing was written, and the message is gone.
		return "", fmt.Errorf("%w: message %q", queue.ErrNotFound, ev.TransactionID)
	}
	return id, interpretError(err)
}

// sqlTraceColumns are the columns scanned by scanTrace, over message_traces t. A
// trace's names come in the order they were given: message_trace_names has no column
// to order by in upstream's layout, but one trace's names are inserted by one statement
// and never updated, so their physical order (ctid) is the insertion order.
const sqlTraceColumns = `t.id::text, coalesce(t.partition_id::text, ''), coalesce(t.transaction_id, ''),
       coalesce(t.consumer_group, ''), coalesce(t.event_type, 'info'), coalesce(t.worker_id, ''),
       coalesce(t.data, 'null'::jsonb), coalesce(t.created_at, now()),
       coalesce((SELECT array_agg(n.trace_name ORDER BY n.ctid) FROM queen.message_trace_names n
                 WHERE n.trace_id = t.id), '{}')`

// sqlTraceListByMessage uses idx_message_traces_transaction_partition (transaction_id,
// partition_id), upstream's index, in the database collation like the comparison.
const sqlTraceListByMessage = `SELECT ` + sqlTraceColumns + `
FROM queen.message_traces t
WHERE t.partition_id = $1::uuid AND t.transaction_id = $2
  AND ($5::text = '' OR EXISTS (
      SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
      WHERE p.id = $1::uuid AND starts_with(q.name::text, $5::text)))
ORDER BY t.created_at, t.id
LIMIT $3 OFFSET $4`

// TraceListByMessage returns one page of a message's traces, oldest first; none for
// a message outside the scope.
func (s *Store) TraceListByMessage(ctx context.Context, sc queue.Scope, partitionID, transactionID string,
	page queue.Page) ([]queue.Trace, error) {
	rows, err := s.pool.Query(ctx, sqlTraceListByMessage, partitionID, transactionID, page.Limit, page.Offset, sc.Prefix())
	if err != nil {
		return nil, interpretError(err)
	}
	return collectRows(rows, func(row pgx.Rows) (queue.Trace, error) {
		var tr queue.Trace
		return tr, scanTrace(row, &tr)
	})
}

func scanTrace(row pgx.Row, tr *queue.Trace, extra ...any) error {
	var data []byte
	dest := append([]any{&tr.ID, &tr.PartitionID, &tr.TransactionID, &tr.ConsumerGroup, &tr.EventType,
		&tr.WorkerID, &data, &tr.CreatedAt, &tr.Names}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	tr.Data = json.RawMessage(data)
	tr.CreatedAt = tr.CreatedAt.UTC()
	return nil
}

// sqlTraceNameInScope holds when the trace of name row n belongs to a queue of the
// scope prefix $2 ("" = every queue).
const sqlTraceNameInScope = `($2::text = '' OR EXISTS (
    SELECT 1 FROM queen.message_traces st
    JOIN queen.partitions sp ON sp.id = st.partition_id JOIN queen.queues sq ON sq.id = sp.queue_id
    WHERE st.id = n.trace_id AND starts_with(sq.name::text, $2::text)))`

// sqlTraceCountByName counts on idx_message_trace_names_name.
const sqlTraceCountByName = `SELECT count(*) FROM queen.message_trace_names n WHERE n.trace_name = $1 AND ` +
	sqlTraceNameInScope

// sqlTraceListByName pages the trace ids first (names index, no payloads), then joins
// the page's messages, partitions and queues.
const sqlTraceListByName = `
WITH page AS (
    SELECT t.* FROM queen.message_trace_names n
    JOIN queen.message_traces t ON t.id = n.trace_id
    WHERE n.trace_name = $1 AND ` + sqlTraceNameInScope + `
    ORDER BY t.created_at, t.id
    LIMIT $3 OFFSET $4
)
SELECT ` + sqlTraceColumns + `, coalesce(q.name, ''), coalesce(p.name, ''), m.payload
FROM page t
LEFT JOIN queen.messages m ON m.id = t.message_id
LEFT JOIN queen.partitions p ON p.id = t.partition_id
LEFT JOIN queen.queues q ON q.id = p.queue_id
ORDER BY t.created_at, t.id`

// TraceListByName returns one page of the traces of the scope carrying name, oldest
// first, with their message's queue, partition and stored payload, and the total count.
func (s *Store) TraceListByName(ctx context.Context, sc queue.Scope, name string, page queue.Page) ([]queue.Trace, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, sqlTraceCountByName, name, sc.Prefix()).Scan(&total); err != nil {
		return nil, 0, interpretError(err)
	}
	if total <= int64(page.Offset) {
		return nil, total, nil
	}
	rows, err := s.pool.Query(ctx, sqlTraceListByName, name, sc.Prefix(), page.Limit, page.Offset)
	if err != nil {
		return nil, 0, interpretError(err)
	}
	traces, err := collectRows(rows, func(row pgx.Rows) (queue.Trace, error) {
		var tr queue.Trace
		var payload []byte
		if err := scanTrace(row, &tr, &tr.Queue, &tr.Partition, &payload); err != nil {
			return tr, err
		}
		if payload != nil {
			tr.MessagePayload = json.RawMessage(payload)
		}
		return tr, nil
	})
	return traces, total, err
}

// sqlTraceNameCount counts the distinct names of traces in the scope prefix $1.
const sqlTraceNameCount = `SELECT count(DISTINCT n.trace_name) FROM queen.message_trace_names n
WHERE $1::text = '' OR n.trace_id IN (` + sqlTraceIDsInScope + `)`

// sqlTraceIDsInScope are the ids of the traces of queues in the scope prefix $1.
const sqlTraceIDsInScope = `SELECT st.id FROM queen.message_traces st
    JOIN queen.partitions sp ON sp.id = st.partition_id JOIN queen.queues sq ON sq.id = sp.queue_id
    WHERE starts_with(sq.name::text, $1::text)`

// sqlTraceNameList aggregates every name of the scope prefix $1 (one pass over
// message_trace_names joined to its traces), most recently seen first, and pages the
// aggregated rows.
const sqlTraceNameList = `
SELECT n.trace_name, count(*), count(DISTINCT t.message_id), max(coalesce(t.created_at, now()))
FROM queen.message_trace_names n
JOIN queen.message_traces t ON t.id = n.trace_id
WHERE $1::text = '' OR n.trace_id IN (` + sqlTraceIDsInScope + `)
GROUP BY n.trace_name
ORDER BY 4 DESC, n.trace_name
LIMIT $2 OFFSET $3`

// TraceNameList returns one page of the distinct names of the scope's traces, most
// recently seen first, and the number of distinct names.
func (s *Store) TraceNameList(ctx context.Context, sc queue.Scope, page queue.Page) ([]queue.TraceNameStat, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, sqlTraceNameCount, sc.Prefix()).Scan(&total); err != nil {
		return nil, 0, interpretError(err)
	}
	if total <= int64(page.Offset) {
		return nil, total, nil
	}
	rows, err := s.pool.Query(ctx, sqlTraceNameList, sc.Prefix(), page.Limit, page.Offset)
	if err != nil {
		return nil, 0, interpretError(err)
	}
	names, err := collectRows(rows, func(row pgx.Rows) (queue.TraceNameStat, error) {
		var st queue.TraceNameStat
		var last time.Time
		err := row.Scan(&st.Name, &st.Traces, &st.Messages, &last)
		st.LastSeen = last.UTC()
		return st, err
	})
	return names, total, err
}

// collectRows scans every row with scan and closes rows; errors go through interpretError.
func collectRows[T any](rows pgx.Rows, scan func(pgx.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, interpretError(err)
		}
		out = append(out, v)
	}
	return out, interpretError(rows.Err())
}
