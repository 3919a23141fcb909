package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// sqlDLQLockNewest locks the newest dead-letter row of the message ($1 partition id,
// $2 transaction id) in the queues of the scope prefix $3 ("" = every queue).
const sqlDLQLockNewest = `
SELECT d.id::text, d.message_id::text, coalesce(d.consumer_group, '')
FROM queen.messages m
JOIN queen.dead_letter_queue d ON d.message_id = m.id
JOIN queen.partitions p ON p.id = m.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE m.partition_id = $1::uuid AND m.transaction_id COLLATE "C" = $2
  AND ($3::text = '' OR starts_with(q.name::text, $3::text))
ORDER BY d.failed_at DESC NULLS LAST, d.id DESC
LIMIT 1
FOR UPDATE OF d`

// sqlDLQLockID locks the dead-letter row $1 of a queue of the scope prefix $2. $1
// may also be a dead-lettered message's id (the id GET /api/v1/dlq lists): then its
// newest row is taken.
const sqlDLQLockID = `
SELECT d.id::text, d.message_id::text, coalesce(d.consumer_group, '')
FROM queen.dead_letter_queue d
JOIN queen.messages m ON m.id = d.message_id
JOIN queen.partitions p ON p.id = m.partition_id
JOIN queen.queues q ON q.id = p.queue_id
WHERE (d.id = $1::uuid OR d.message_id = $1::uuid)
  AND ($2::text = '' OR starts_with(q.name::text, $2::text))
ORDER BY d.id = $1::uuid DESC, d.failed_at DESC NULLS LAST, d.id DESC
LIMIT 1
FOR UPDATE OF d`

// sqlQueueEncrypted reads a queue's encryption flag (no row: the queue is new).
const sqlQueueEncrypted = `SELECT coalesce(encryption_enabled, false) FROM queen.queues WHERE name = $1`

// DLQMove moves one dead-letter entry back into a queue in one transaction: it locks
// the entry, pushes its message's stored payload through the push path (to the end
// of the original partition, or of m's redirect, created if missing) under the
// transaction id DLQMovePrefix + entry id, and deletes the entry. prepare gets the
// item before the insert and must give it a message id and seal it when Seal is set.
// A message already stored under that transaction id is a StatusDuplicate result:
// nothing written, the entry kept. queue.ErrNotFound when m names no entry of the
// scope; a full destination is a *queue.ConflictError and nothing changes.
func (s *Store) DLQMove(ctx context.Context, m queue.DLQMove, prepare func(*queue.RequeueItem) error) (queue.DLQMoveResult, error) {
	var res queue.DLQMoveResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var row pgx.Row
		if m.DLQID != "" {
			row = tx.QueryRow(ctx, sqlDLQLockID, m.DLQID, m.Scope.Prefix())
		} else {
			row = tx.QueryRow(ctx, sqlDLQLockNewest, m.PartitionID, m.TransactionID, m.Scope.Prefix())
		}
		var messageID string
		if err := row.Scan(&res.DLQID, &messageID, &res.ConsumerGroup); err != nil {
			return err
		}
		items, err := dlqRequeueItems(ctx, tx, []string{messageID})
		if err != nil {
			return err
		}
		it := &items[0]
		res.OriginalTransactionID = it.OriginalTransactionID
		if m.Queue != "" || m.Partition != "" {
			if m.Queue != "" && m.Queue != it.Queue {
				encrypted := false
				if err := tx.QueryRow(ctx, sqlQueueEncrypted, m.Queue).Scan(&encrypted); err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				it.Queue, it.Seal = m.Queue, encrypted && !it.Encrypted
			}
			if m.Partition != "" {
				it.Partition = m.Partition
			}
		}
		it.TransactionID = queue.DLQMovePrefix + res.DLQID
		if err := prepare(it); err != nil {
			return err
		}
		results, err := messageInsertBatch(ctx, tx, []queue.PushItem{it.PushItem}, newPushArgs([]queue.PushItem{it.PushItem}))
		if err != nil {
			return err
		}
		r := results[0]
		res.Queue, res.Partition, res.Status, res.TransactionID = it.Queue, it.Partition, r.Status, it.TransactionID
		res.PartitionID = r.PartitionID
		switch r.Status {
		case queue.StatusQueued:
			res.MessageID = r.MessageID
		case queue.StatusDuplicate:
			return nil
		case "full":
			return queue.Conflict("queue %q is full: maxSize reached; nothing was moved", it.Queue)
		default:
			return fmt.Errorf("store: dlq move push answered %q", r.Status)
		}
		_, err = tx.Exec(ctx, sqlDLQDeleteRows, []string{res.DLQID})
		return err
	})
	if err != nil {
		return queue.DLQMoveResult{}, interpretError(err)
	}
	return res, nil
}
