package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Ack applies acknowledgements of one consumer group (empty = queue mode) in one
// transaction and returns one result per ack, in request order. Items with an
// unknown status or a partition id that is not a UUID are answered without SQL
// (success false), exactly like an unknown message.
func (b *Broker) Ack(ctx context.Context, group string, acks []queue.Ack) ([]queue.AckResult, error) {
	if len(acks) > b.cfg.MaxAckItems {
		return nil, queue.Invalid("acknowledgments", "at most %d acknowledgments per request (got %d)", b.cfg.MaxAckItems, len(acks))
	}
	if group == "" {
		group = queue.QueueModeGroup
	} else if err := queue.CheckName("consumerGroup", group); err != nil {
		return nil, err
	}
	results := make([]queue.AckResult, len(acks))
	var send []queue.Ack
	var sendIdx []int
	for i, a := range acks {
		results[i] = queue.AckResult{Index: i, TransactionID: a.TransactionID}
		status := strings.ToLower(a.Status)
		if status == "" {
			status = queue.AckCompleted
		}
		switch {
		case !isAckStatus(status):
			continue // success false, error null (upstream)
		case !queue.IsUUID(a.PartitionID) || len(a.TransactionID) > queue.MaxTransactionIDLength:
			results[i].Error = "Message not found"
			continue
		}
		a.Status = status
		send = append(send, a)
		sendIdx = append(sendIdx, i)
	}
	if len(send) == 0 {
		b.analytics.RecordAck(time.Now(), acks, results)
		return results, nil
	}
	got, err := b.store.MessageAckBatch(ctx, group, send)
	if err != nil {
		b.analytics.RecordDBError(time.Now(), err)
		return nil, err
	}
	for j, r := range got {
		r.Index = sendIdx[j]
		results[sendIdx[j]] = r
	}
	b.analytics.RecordAck(time.Now(), acks, results)
	return results, nil
}

func isAckStatus(s string) bool {
	switch s {
	case queue.AckCompleted, queue.AckSuccess, queue.AckFailed, queue.AckDLQ, queue.AckRetry:
		return true
	}
	return false
}

// ExtendLease extends the lease leaseID by seconds (default 60).
func (b *Broker) ExtendLease(ctx context.Context, leaseID string, seconds int) (queue.LeaseExtension, error) {
	if seconds == 0 {
		seconds = 60
	}
	if seconds < 0 || seconds > 7*24*3600 {
		return queue.LeaseExtension{}, queue.Invalid("seconds", "seconds must be between 1 and %d", 7*24*3600)
	}
	if leaseID == "" || len(leaseID) > queue.MaxNameLength {
		return queue.LeaseExtension{LeaseID: leaseID, Error: "Lease not found"}, nil
	}
	return b.store.LeaseExtend(ctx, leaseID, seconds)
}

// Transaction runs acks and pushes atomically: all of them take effect or none.
func (b *Broker) Transaction(ctx context.Context, ops []queue.TxOp) (queue.TxResult, error) {
	if len(ops) == 0 {
		return queue.TxResult{}, queue.Invalid("operations", "operations array cannot be empty")
	}
	total := 0
	for i := range ops {
		op := &ops[i]
		field := fmt.Sprintf("operations[%d]", i)
		switch op.Type {
		case "push":
			if len(op.Push) == 0 {
				return queue.TxResult{}, queue.Invalid(field+".items", "%s.items must be a non-empty array", field)
			}
			if err := b.preparePush(op.Push, field+".items"); err != nil {
				return queue.TxResult{}, err
			}
			total += len(op.Push)
		case "ack":
			a := &op.Ack
			if a.ConsumerGroup == "" {
				a.ConsumerGroup = queue.QueueModeGroup
			} else if err := queue.CheckName(field+".consumerGroup", a.ConsumerGroup); err != nil {
				return queue.TxResult{}, err
			}
			if !queue.IsUUID(a.PartitionID) {
				// Upstream rolls such a transaction back and answers success:false;
				// no SQL is needed to know the message does not exist.
				return queue.TxResult{TransactionID: b.ids.New(), Error: "ACK operation failed: Message not found",
					Results: []queue.TxOpResult{{Index: total, Type: "ack", TransactionID: a.TransactionID, Error: "Message not found"}}}, nil
			}
			total++
		default:
			return queue.TxResult{}, queue.Invalid(field+".type", "%s.type must be \"ack\" or \"push\" (got %q)", field, op.Type)
		}
	}
	if total > b.cfg.MaxPushItems {
		return queue.TxResult{}, queue.Invalid("operations", "at most %d operations and items per transaction (got %d)", b.cfg.MaxPushItems, total)
	}
	for i := range ops {
		if ops[i].Type == "push" {
			if err := b.sealPayloads(ctx, ops[i].Push); err != nil {
				return queue.TxResult{}, err
			}
		}
	}
	res, err := b.store.TransactionRun(ctx, ops)
	b.analytics.RecordTransaction(time.Now(), ops, res, err)
	res.TransactionID = b.ids.New()
	if err != nil {
		return res, err
	}
	if res.Success {
		for _, op := range ops {
			if op.Type == "push" {
				b.wakeQueues(op.Push)
			}
		}
	}
	return res, nil
}
