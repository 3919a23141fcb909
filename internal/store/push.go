package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// pgxQuerier is what the shared query helpers need: the pool and a pgx.Tx both
// satisfy it, so the same code runs standalone and inside /transaction.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const sqlMessageInsertBatch = `SELECT o_idx, o_status, coalesce(o_message_id::text, ''), o_partition_id::text
FROM queen.push_q1($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[])`

// MessageInsertBatch appends items (already validated, with message and transaction
// ids assigned) in one transaction and returns one result per item in input order:
// queued, or duplicate carrying the stored message id.
func (s *Store) MessageInsertBatch(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	return messageInsertBatch(ctx, s.pool, items)
}

func messageInsertBatch(ctx context.Context, q pgxQuerier, items []queue.PushItem) ([]queue.PushResult, error) {
	n := len(items)
	queues := make([]string, n)
	partitions := make([]string, n)
	txids := make([]string, n)
	ids := make([]string, n)
	payloads := make([]string, n)
	traces := make([]*string, n)
	subs := make([]*string, n)
	encrypted := make([]bool, n)
	for i := range items {
		it := &items[i]
		queues[i], partitions[i], txids[i], ids[i] = it.Queue, it.Partition, it.TransactionID, it.MessageID
		payloads[i] = string(it.Payload)
		if it.TraceID != "" {
			traces[i] = &it.TraceID
		}
		if it.ProducerSub != "" {
			subs[i] = &it.ProducerSub
		}
		encrypted[i] = it.Encrypted
	}
	rows, err := q.Query(ctx, sqlMessageInsertBatch, queues, partitions, txids, ids, payloads, traces, subs, encrypted)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	results := make([]queue.PushResult, n)
	seen := 0
	for rows.Next() {
		var idx int
		var status, msgID, partID string
		if err := rows.Scan(&idx, &status, &msgID, &partID); err != nil {
			return nil, interpretError(err)
		}
		if idx < 0 || idx >= n {
			return nil, fmt.Errorf("store: push returned item index %d of %d", idx, n)
		}
		it := &items[idx]
		results[idx] = queue.PushResult{
			Index: idx, Status: status, TransactionID: it.TransactionID, MessageID: msgID,
			PartitionID: partID, TraceID: it.TraceID, Queue: it.Queue, Partition: it.Partition,
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if seen != n {
		return nil, fmt.Errorf("store: push returned %d results for %d items", seen, n)
	}
	return results, nil
}
