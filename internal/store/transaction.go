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
//
// The riders run first, in the global lock order every path follows: KV rows (the kv
// rider; a required KV op whose precondition fails rolls everything back and comes
// back in KVFailed), then timer rows (the timers rider, whose results come back
// apart, in op order, when the transaction commits), then queue and partition
// provisioning, push partitions, pushes and acks.
//
// Its row locks can deadlock with a pop or an ack of another replica (a pop locks a
// ready row, then the cursor row; the transaction's ack the other way); PostgreSQL
// then aborts one of them. An aborted transaction took no effect, so it runs again
// (retryRaced), riders included.
func (s *Store) TransactionRun(ctx context.Context, ops []queue.TxOp, riders TxRiders) (queue.TxResult, []TimerResult, error) {
	var (
		res    queue.TxResult
		timers []TimerResult
	)
	err := retryRaced(ctx, func() (err error) {
		res, timers, err = s.transactionRunOnce(ctx, ops, riders)
		return err
	})
	return res, timers, err
}

func (s *Store) transactionRunOnce(ctx context.Context, ops []queue.TxOp, riders TxRiders) (queue.TxResult, []TimerResult, error) {
	var res queue.TxResult
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, nil, interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	if kv := riders.KV; len(kv.Ops) > 0 {
		out, err := KVApplyTx(ctx, tx, kv.Tenant, kv.Now, kv.Ops)
		if err != nil {
			return res, nil, err
		}
		if out.Failed != nil {
			res.KVFailed = out.Failed
			return res, nil, nil
		}
		res.KV = out.Results
	}
	var timers []TimerResult
	if len(riders.Timers) > 0 {
		if timers, err = TimerApplyTx(ctx, tx, riders.Timers); err != nil {
			return res, nil, err
		}
	}
	res, err = transactionOps(ctx, tx, ops, res)
	if err != nil || !res.Success {
		return res, nil, err
	}
	return res, timers, nil
}

// TxRiders are the top-level riders of a transaction: KV ops, and timer ops already
// validated and completed (see broker.PrepareTimerOps).
type TxRiders struct {
	KV     queue.KVRider
	Timers []TimerOp
}

// transactionOps runs the operations of a transaction in tx after its riders and
// commits; res.Success says whether it did.
func transactionOps(ctx context.Context, tx pgx.Tx, ops []queue.TxOp, res queue.TxResult) (queue.TxResult, error) {
	if len(ops) > 0 {
		if err := transactionPrepare(ctx, tx, ops); err != nil {
			return res, err
		}
	}
	index := 0
	for _, op := range ops {
		switch op.Type {
		case "ack":
			r := queue.TxOpResult{Index: index, Type: "ack", TransactionID: op.Ack.TransactionID}
			index++
			if op.Unresolvable {
				r.Error = queue.AckUnresolvable
				res.Results = append(res.Results, r)
				res.Error, res.Reason = queue.TxAckUnresolvable, queue.TxReasonAckRejected
				return res, nil
			}
			var errText, qname, pname string
			var unresolved, freed bool
			err := tx.QueryRow(ctx, `SELECT o_success, coalesce(o_error, ''), o_dlq, o_unresolved, o_freed,
       coalesce(o_queue, ''), coalesce(o_partition, '')
  FROM queen.tx_ack_q3($1, $2, $3, $4, $5, $6)`,
				op.Ack.TransactionID, op.Ack.PartitionID, op.Ack.ConsumerGroup, op.Ack.Status, op.Ack.LeaseID, op.Ack.Error,
			).Scan(&r.Success, &errText, &r.DLQ, &unresolved, &freed, &qname, &pname)
			if err != nil {
				return res, interpretError(err)
			}
			r.Error = errText
			if freed {
				r.FreedQueue, r.FreedPartition = qname, pname
			}
			res.Results = append(res.Results, r)
			if !r.Success {
				res.Error, res.Reason = "ACK operation failed: "+errText, queue.TxReasonAckRejected
				if unresolved {
					res.Error = queue.TxAckUnresolvable
				}
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
					res.Reason = queue.TxReasonRefused
					if p.Status == queue.StatusDuplicate { // the 1.x rollback reason and text
						res.Reason = queue.StatusDuplicate
						res.Error = queue.TxDuplicateText(p.Queue, p.Partition)
					}
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
			if op.Unresolvable {
				continue
			}
			ackPIDs = append(ackPIDs, op.Ack.PartitionID)
			ackGroups = append(ackGroups, op.Ack.ConsumerGroup)
		}
	}
	_, err := tx.Exec(ctx, `SELECT queen.tx_prepare_q1($1::text[], $2::text[], $3::text[], $4::text[])`,
		pushQueues, pushPartitions, ackPIDs, ackGroups)
	return interpretError(err)
}
