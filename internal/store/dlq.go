package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlDLQLockKeys locks, in id order, the dead-letter rows named by the keys ($1
// partition ids, $2 transaction ids, $3 groups, $4 "any group" flags) in the
// queues of the scope prefix $5 ("" = every queue), returning each row with the
// 1-based index of the key that named it. A row deleted by a concurrent requeue or
// purge while this waits is skipped, so its key comes back empty, as does a key
// outside the scope.
const sqlDLQLockKeys = `
SELECT k.ord::int, d.id::text, d.message_id::text
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::boolean[]) WITH ORDINALITY AS k(pid, txid, grp, any_grp, ord)
JOIN queen.messages m ON m.partition_id = k.pid AND m.transaction_id COLLATE "C" = k.txid
JOIN queen.dead_letter_queue d ON d.message_id = m.id
 AND (k.any_grp OR coalesce(d.consumer_group, '') = k.grp)
WHERE $5::text = '' OR EXISTS (
    SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = k.pid AND starts_with(q.name::text, $5::text))
ORDER BY d.id
FOR UPDATE OF d`

// sqlDLQLockFilter locks, in id order, the matching dead-letter rows (sqlDLQFilter,
// $1 … $6) of at most $7 messages, those whose first matching failure is oldest.
// All matching rows of a chosen message are taken, so no message is pushed again
// once per call for rows a limit split. Rows another transaction holds are skipped.
const sqlDLQLockFilter = `
WITH pick AS (
    SELECT d.message_id` + sqlDLQFilter + `
    GROUP BY d.message_id
    ORDER BY min(d.failed_at), d.message_id
    LIMIT $7
)
SELECT 0, d.id::text, d.message_id::text` + sqlDLQFilter + `
  AND d.message_id IN (SELECT pick.message_id FROM pick)
ORDER BY d.id
FOR UPDATE OF d SKIP LOCKED`

// sqlDLQMessages reads the messages to push again, in partition order: by
// partition, then (created_at, id), so messages requeued together keep their order.
// A message pushed again keeps its trace context.
const sqlDLQMessages = `
SELECT m.id::text, m.transaction_id, m.partition_id::text, q.name::text, p.name::text, m.payload,
       coalesce(m.is_encrypted, false), coalesce(m.trace_id::text, ''), coalesce(m.producer_sub, ''),
       coalesce(q.encryption_enabled, false), coalesce(m.traceparent, ''), coalesce(m.tracestate, '')
FROM queen.messages m
JOIN queen.partitions p ON p.id = m.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE m.id = ANY ($1::uuid[])
ORDER BY m.partition_id, m.created_at, m.id`

const sqlDLQDeleteRows = `DELETE FROM queen.dead_letter_queue WHERE id = ANY ($1::uuid[])`

// sqlDLQAnyLeft reports whether a dead-letter row matches the filter ($1 … $6).
const sqlDLQAnyLeft = `SELECT EXISTS (SELECT 1` + sqlDLQFilter + `)`

// sqlDLQPurge deletes the matching dead-letter rows ($1 … $6) of at most $7
// entries, oldest failure first, skipping rows another transaction holds.
const sqlDLQPurge = `
WITH victim AS (
    SELECT d.id` + sqlDLQFilter + `
    ORDER BY d.failed_at, d.id
    LIMIT $7
    FOR UPDATE OF d SKIP LOCKED
)
DELETE FROM queen.dead_letter_queue x USING victim WHERE x.id = victim.id`

// DLQRequeue pushes the dead-lettered messages that sel names again, each to its
// own partition through queen.push_q2 (the push path: ordering under the partition
// lock, partition_lookup and the ready rows), and deletes their dead-letter rows,
// all in one transaction. prepare gets the items in partition order before the
// insert and must give each its new message id and transaction id (ids increasing
// in item order, as a push assigns them) and seal the payloads marked Seal.
//
// With keys, every key must name at least one entry: the first that does not fails
// the call with a *queue.DLQKeyNotFoundError and nothing changes. A full queue fails
// it with a *queue.ConflictError. With a filter, up to sel.Limit messages are taken
// and More says whether matching entries are left.
func (s *Store) DLQRequeue(ctx context.Context, sel queue.DLQSelection,
	prepare func([]queue.RequeueItem) error,
) (queue.RequeueResult, error) {
	var res queue.RequeueResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		rowIDs, messageIDs, err := dlqLock(ctx, tx, sel)
		if err != nil {
			return err
		}
		if len(rowIDs) == 0 {
			// Only a filter can match nothing; its rows may all be held elsewhere.
			return tx.QueryRow(ctx, sqlDLQAnyLeft, dlqFilterArgs(sel.Filter)...).Scan(&res.More)
		}
		items, err := dlqRequeueItems(ctx, tx, messageIDs)
		if err != nil {
			return err
		}
		if err := prepare(items); err != nil {
			return err
		}
		if res.Messages, err = dlqPush(ctx, tx, items); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, sqlDLQDeleteRows, rowIDs)
		if err != nil {
			return interpretError(err)
		}
		res.Entries = tag.RowsAffected()
		if sel.Keys == nil {
			return tx.QueryRow(ctx, sqlDLQAnyLeft, dlqFilterArgs(sel.Filter)...).Scan(&res.More)
		}
		return nil
	})
	if err != nil {
		return queue.RequeueResult{}, interpretError(err)
	}
	return res, nil
}

// dlqLock locks the selected dead-letter rows and returns their ids and the distinct
// ids of their messages. With keys, a key without a row is a *queue.DLQKeyNotFoundError.
func dlqLock(ctx context.Context, tx pgx.Tx, sel queue.DLQSelection) (rowIDs, messageIDs []string, err error) {
	var rows pgx.Rows
	if sel.Keys != nil {
		n := len(sel.Keys)
		pids, txids, groups, anyGroup := make([]string, n), make([]string, n), make([]string, n), make([]bool, n)
		for i, k := range sel.Keys {
			pids[i], txids[i], groups[i], anyGroup[i] = k.PartitionID, k.TransactionID, k.ConsumerGroup, k.AnyGroup
		}
		rows, err = tx.Query(ctx, sqlDLQLockKeys, pids, txids, groups, anyGroup, sel.Filter.Scope.Prefix())
	} else {
		rows, err = tx.Query(ctx, sqlDLQLockFilter, append(dlqFilterArgs(sel.Filter), sel.Limit)...)
	}
	if err != nil {
		return nil, nil, interpretError(err)
	}
	type locked struct {
		key          int
		row, message string
	}
	got, err := collectRows(rows, func(r pgx.Rows) (locked, error) {
		var l locked
		return l, r.Scan(&l.key, &l.row, &l.message)
	})
	if err != nil {
		return nil, nil, err
	}
	found := make([]bool, len(sel.Keys)+1)
	seenRow, seenMsg := make(map[string]bool, len(got)), make(map[string]bool, len(got))
	for _, l := range got {
		if l.key >= 1 && l.key < len(found) {
			found[l.key] = true
		}
		if !seenRow[l.row] {
			seenRow[l.row] = true
			rowIDs = append(rowIDs, l.row)
		}
		if !seenMsg[l.message] {
			seenMsg[l.message] = true
			messageIDs = append(messageIDs, l.message)
		}
	}
	for i := range sel.Keys {
		if !found[i+1] {
			return nil, nil, &queue.DLQKeyNotFoundError{Index: i, Key: sel.Keys[i]}
		}
	}
	return rowIDs, messageIDs, nil
}

// dlqRequeueItems reads the messages to push again, in partition order.
func dlqRequeueItems(ctx context.Context, tx pgx.Tx, messageIDs []string) ([]queue.RequeueItem, error) {
	rows, err := tx.Query(ctx, sqlDLQMessages, messageIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	items, err := collectRows(rows, func(r pgx.Rows) (queue.RequeueItem, error) {
		var it queue.RequeueItem
		var payload []byte
		var queueEncrypted bool
		err := r.Scan(&it.MessageID, &it.OriginalTransactionID, &it.PartitionID, &it.Queue, &it.Partition, &payload,
			&it.Encrypted, &it.TraceID, &it.ProducerSub, &queueEncrypted, &it.Traceparent, &it.Tracestate)
		it.Payload = json.RawMessage(payload)
		it.Seal = queueEncrypted && !it.Encrypted
		return it, err
	})
	if err != nil {
		return nil, err
	}
	if len(items) != len(messageIDs) {
		return nil, fmt.Errorf("store: requeue found %d of %d locked messages", len(items), len(messageIDs))
	}
	return items, nil
}

// dlqPush inserts the prepared items through the push path and fails the
// transaction unless every item was stored.
func dlqPush(ctx context.Context, tx pgx.Tx, items []queue.RequeueItem) ([]queue.Requeued, error) {
	push := make([]queue.PushItem, len(items))
	for i := range items {
		push[i] = items[i].PushItem
	}
	results, err := messageInsertBatch(ctx, tx, push, newPushArgs(push))
	if err != nil {
		return nil, err
	}
	out := make([]queue.Requeued, len(items))
	for i, r := range results {
		switch r.Status {
		case queue.StatusQueued:
		case "full":
			return nil, queue.Conflict("queue %q is full: maxSize reached; nothing was requeued", r.Queue)
		default:
			return nil, fmt.Errorf("store: requeue push of item %d answered %q", i, r.Status)
		}
		out[i] = queue.Requeued{
			PartitionID: items[i].PartitionID, TransactionID: items[i].OriginalTransactionID,
			NewTransactionID: r.TransactionID, NewMessageID: r.MessageID, Queue: r.Queue,
		}
	}
	return out, nil
}

// DLQPurge deletes, in one transaction, the dead-letter rows matching f (its Page
// unused) of at most limit entries, oldest failure first, and reports how many it
// deleted and whether matching entries are left. The messages stay.
func (s *Store) DLQPurge(ctx context.Context, f queue.DLQFilter, limit int) (deleted int64, more bool, err error) {
	args := dlqFilterArgs(f)
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sqlDLQPurge, append(args, limit)...)
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected()
		return tx.QueryRow(ctx, sqlDLQAnyLeft, args...).Scan(&more)
	})
	if err != nil {
		return 0, false, interpretError(err)
	}
	return deleted, more, nil
}

// dlqFilterArgs are the parameters $1 … $6 of sqlDLQFilter.
func dlqFilterArgs(f queue.DLQFilter) []any {
	return []any{f.Queue, f.ConsumerGroup, f.Partition, timeOrNil(f.From), timeOrNil(f.To), f.Scope.Prefix()}
}
