package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// TransactionRun executes ops atomically: all locks are taken first
// in one sorted order, then the operations run in array order; the first failing
// operation rolls everything back. A push whose (partition, transactionId) already
// exists fails the transaction, as upstream does. Per-operation failures come back in
// the result (Success false); only infrastructure failures are returned as errors.
func (s *Store) TransactionRun(ctx context.Context, ops []queue.TxOp) (queue.TxResult, error) {
	var res queue.TxResult
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	if err := transactionPrepare(ctx, tx, ops); err != nil {
		return res, err
	}
	index := 0
	for _, op := range ops {
		switch op.Type {
		case "ack":
			r := queue.TxOpResult{Index: index, Type: "ack", TransactionID: op.Ack.TransactionID}
			index++
			var errText string
			err := tx.QueryRow(ctx, `SELECT o_success, coalesce(o_error, ''), o_dlq FROM queen.tx_ack_q1($1, $2, $3, $4, $5, $6)`,
				op.Ack.TransactionID, op.Ack.PartitionID, op.Ack.ConsumerGroup, op.Ack.Status, op.Ack.LeaseID, op.Ack.Error,
			).Scan(&r.Success, &errText, &r.DLQ)
			if err != nil {
				return res, interpretError(err)
			}
			r.Error = errText
			res.Results = append(res.Results, r)
			if !r.Success {
				res.Error = "ACK operation failed: " + errText
				return res, nil
			}
		case "push":
			pushed, err := messageInsertBatch(ctx, tx, op.Push, newPushArgs(op.Push))
			if err != nil {
				return res, err
			}
			for _, p := range pushed {
				r := queue.TxOpResult{Index: index, Type: "push", Success: p.Status == queue.StatusQueued,
					TransactionID: p.TransactionID, MessageID: p.MessageID, PartitionID: p.PartitionID, QueueName: p.Queue}
				index++
				res.Results = append(res.Results, r)
				if !r.Success {
					r.Error = fmt.Sprintf("duplicate transactionId %q in partition %q of queue %q", p.TransactionID, p.Partition, p.Queue)
					if p.Status == "full" {
						r.Error = fmt.Sprintf("queue %q is full: maxSize reached", p.Queue)
					}
					res.Results[len(res.Results)-1] = r
					res.Error = "PUSH operation failed: " + r.Error
					return res, nil
				}
			}
		default:
			return res, fmt.Errorf("store: transaction op type %q", op.Type)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, interpretError(err)
	}
	res.Success = true
	return res, nil
}

func transactionPrepare(ctx context.Context, tx pgx.Tx, ops []queue.TxOp) error {
	var pushQueues, pushPartitions, ackPIDs, ackGroups []string
	for _, op := range ops {
		switch op.Type {
		case "push":
			for _, it := range op.Push {
				pushQueues = append(pushQueues, it.Queue)
				pushPartitions = append(pushPartitions, it.Partition)
			}
		case "ack":
			ackPIDs = append(ackPIDs, op.Ack.PartitionID)
			ackGroups = append(ackGroups, op.Ack.ConsumerGroup)
		}
	}
	_, err := tx.Exec(ctx, `SELECT queen.tx_prepare_q1($1::text[], $2::text[], $3::text[], $4::text[])`,
		pushQueues, pushPartitions, ackPIDs, ackGroups)
	return interpretError(err)
}
