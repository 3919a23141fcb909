package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Ack applies acknowledgements of one consumer group (empty = queue mode) in one
// transaction and returns one result per ack, in request order. Statuses are
// normalised as Queen 1.x does (NormalizeAckStatus). Items whose partition id is not a
// UUID, or whose transaction id is too long to exist, are answered without SQL as
// unresolvable; so are, in a tenant scope, items whose partition is another tenant's
// (group is the stored name, already scoped).
func (b *Broker) Ack(ctx context.Context, sc queue.Scope, group string, acks []queue.Ack) ([]queue.AckResult, error) {
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
		if !queue.IsUUID(a.PartitionID) || queue.TransactionIDTooLong(a.TransactionID) {
			results[i].Error = queue.AckUnresolvable
			continue
		}
		a.Status = NormalizeAckStatus(a.Status)
		send = append(send, a)
		sendIdx = append(sendIdx, i)
	}
	if !sc.IsGlobal() && len(send) > 0 {
		var err error
		if send, sendIdx, err = b.acksInScope(ctx, sc, send, sendIdx, results); err != nil {
			return nil, err
		}
	}
	if len(send) == 0 {
		b.analytics.RecordAck(time.Now(), acks, results)
		return results, nil
	}
	var got []queue.AckResult
	var err error
	var claimed string // the partition the ack's claim ahead leased again, if any
	lease := send[0].LeaseID
	req, known, ahead := b.ahead.lookup(lease)
	known = known && req.ConsumerGroup == group // names are stored names: scoped already
	// A pop of the group parked here takes the next batch as soon as it is there: claim
	// ahead only when every consumer of this broker is busy.
	if _, popsPaused := b.Paused(); known && ahead && !popsPaused && !b.isClosing() &&
		!b.waiters.idleFor(req.Queue, group) {
		got, claimed, err = b.ackClaimingAhead(ctx, group, send, req)
	} else {
		got, err = b.store.MessageAckBatch(ctx, group, send)
	}
	if known && err == nil && releasedLease(got) {
		b.ahead.released(lease, req, time.Now())
	}
	if err != nil {
		b.analytics.RecordDBError(time.Now(), err)
		return nil, err
	}
	for j, r := range got {
		r.Index = sendIdx[j]
		if r.Error == queue.AckUnresolvable {
			// As the ones answered above without a query: nothing was found (the store
			// answers false for every item without a lease outcome).
			r.LeaseReleased = nil
		}
		results[sendIdx[j]] = r
		if r.PartitionPending && (claimed == "" || r.QueueName != req.Queue || r.PartitionName != claimed) {
			// The lease ended with messages left, or maybe left: a pop of the group
			// parked takes them now instead of at its re-check (no push will wake one
			// for them). Not when the ack's own claim leased the partition again: no
			// pop could take it (giving that batch back wakes one).
			b.wakeFreed(r.QueueName, group, r.PartitionName)
		}
	}
	b.analytics.RecordAck(time.Now(), acks, results)
	return results, nil
}

// releasedLease reports whether an ack's results say it released its lease.
func releasedLease(got []queue.AckResult) bool {
	for _, r := range got {
		if r.LeaseReleased != nil && *r.LeaseReleased {
			return true
		}
	}
	return false
}

// wakeFreed wakes, after an ack that ended a lease on partition of queueName with
// messages left there (or maybe left), one pop of group parked on this replica that can
// take the partition, and the pops parked on the queue on the other replicas (through
// PostgreSQL, as a push does).
func (b *Broker) wakeFreed(queueName, group, partition string) {
	b.waiters.notifyGroup(queueName, group, partition)
	b.wakeup.announce(queueName)
}

// acksInScope keeps the acks whose partition is in the scope; the others are answered
// in results as unresolvable (as an unknown message: nothing of the other tenant shows).
func (b *Broker) acksInScope(ctx context.Context, sc queue.Scope, send []queue.Ack, sendIdx []int,
	results []queue.AckResult) ([]queue.Ack, []int, error) {
	pids := make([]string, len(send))
	for i, a := range send {
		pids[i] = a.PartitionID
	}
	owned, err := b.store.PartitionsInScope(ctx, sc, pids)
	if err != nil {
		return nil, nil, err
	}
	keep, keepIdx := send[:0], sendIdx[:0]
	for i, a := range send {
		if owned[strings.ToLower(a.PartitionID)] {
			keep, keepIdx = append(keep, a), append(keepIdx, sendIdx[i])
			continue
		}
		results[sendIdx[i]].Error = queue.AckUnresolvable
	}
	return keep, keepIdx, nil
}

// NormalizeAckStatus maps a client's ack status to completed, failed, retry or dlq as
// Queen 1.x does, case-sensitively: absent (""), completed, success, acked and ok are
// completed; retry and dlq are themselves; anything else (nack, FAILED, ...) is failed.
// The HTTP decoders read an explicit empty status as failed before it gets here.
func NormalizeAckStatus(status string) string {
	switch status {
	case "", queue.AckCompleted, queue.AckSuccess, "acked", "ok":
		return queue.AckCompleted
	case queue.AckRetry, queue.AckDLQ:
		return status
	}
	return queue.AckFailed
}

// ExtendLease extends the lease leaseID by seconds (default 60). In a tenant scope a
// lease held on another tenant's partitions is answered as not found.
func (b *Broker) ExtendLease(ctx context.Context, sc queue.Scope, leaseID string, seconds int) (queue.LeaseExtension, error) {
	if seconds == 0 {
		seconds = 60
	}
	if seconds < 0 || seconds > 7*24*3600 {
		return queue.LeaseExtension{}, queue.Invalid("seconds", "seconds must be between 0 (the default, 60) and %d", 7*24*3600)
	}
	if leaseID == "" || len(leaseID) > queue.MaxNameLength {
		return queue.LeaseExtension{LeaseID: leaseID, Error: "Lease not found"}, nil
	}
	if !sc.IsGlobal() {
		ok, err := b.store.LeaseInScope(ctx, sc, leaseID)
		if err != nil {
			return queue.LeaseExtension{}, err
		}
		if !ok {
			return queue.LeaseExtension{LeaseID: leaseID, Error: "Lease not found"}, nil
		}
	}
	return b.store.LeaseExtend(ctx, leaseID, seconds)
}

// Transaction runs acks and pushes atomically: all of them take effect or none. In a
// tenant scope (names already scoped) an ack of another tenant's partition rolls the
// transaction back like an unknown message.
func (b *Broker) Transaction(ctx context.Context, sc queue.Scope, ops []queue.TxOp) (queue.TxResult, error) {
	res, _, err := b.TransactionRiders(ctx, sc, ops, TxRiders{})
	return res, err
}

// TxRiders are the top-level riders of a transaction: validated KV ops, and timer ops
// completed by PrepareTimerOps.
type TxRiders struct {
	KV     []queue.KVOp
	Timers []TimerOp
}

// TransactionRiders is Transaction with riders, applied in the same database
// transaction before the pushes and acks: the KV ops in sc's KV rows, then the timer
// ops (their results, in op order, come back when it commits). ops may be empty when
// a rider is not. A required KV op whose precondition fails rolls everything back
// (the answer's KVFailed); a committed timer rider wakes the firing loop.
func (b *Broker) TransactionRiders(ctx context.Context, sc queue.Scope, ops []queue.TxOp, riders TxRiders) (queue.TxResult, []TimerResult, error) {
	res, timers, err := b.transactionRiders(ctx, sc, ops, riders)
	if err == nil && res.Success && len(riders.Timers) > 0 {
		b.TimersChanged()
	}
	return res, timers, err
}

func (b *Broker) transactionRiders(ctx context.Context, sc queue.Scope, ops []queue.TxOp, riders TxRiders) (queue.TxResult, []TimerResult, error) {
	if len(ops) == 0 && len(riders.KV) == 0 && len(riders.Timers) == 0 {
		return queue.TxResult{}, nil, queue.Invalid("operations", "operations array cannot be empty")
	}
	total := 0
	var ackIdx []int // the result index of each ack, in operation order
	for i := range ops {
		op := &ops[i]
		field := fmt.Sprintf("operations[%d]", i)
		switch op.Type {
		case "push":
			if len(op.Push) == 0 {
				return queue.TxResult{}, nil, queue.Invalid(field+".items", "%s.items must be a non-empty array", field)
			}
			if err := b.preparePush(op.Push, field+".items"); err != nil {
				return queue.TxResult{}, nil, err
			}
			total += len(op.Push)
		case "ack":
			a := &op.Ack
			a.Status = NormalizeAckStatus(a.Status)
			if a.ConsumerGroup == "" {
				a.ConsumerGroup = queue.QueueModeGroup
			} else if err := queue.CheckName(field+".consumerGroup", a.ConsumerGroup); err != nil {
				return queue.TxResult{}, nil, err
			}
			// Upstream rolls such a transaction back at this ack and answers
			// success:false with the results before it; no SQL is needed to know
			// the message does not exist.
			op.Unresolvable = !queue.IsUUID(a.PartitionID) || queue.TransactionIDTooLong(a.TransactionID)
			ackIdx = append(ackIdx, total)
			total++
		default:
			return queue.TxResult{}, nil, queue.Invalid(field+".type", "%s.type must be \"ack\" or \"push\" (got %q)", field, op.Type)
		}
	}
	if total > b.cfg.MaxPushItems {
		return queue.TxResult{}, nil, queue.Invalid("operations", "at most %d operations and items per transaction (got %d)", b.cfg.MaxPushItems, total)
	}
	if !sc.IsGlobal() && len(ackIdx) > 0 {
		if err := b.txAcksInScope(ctx, sc, ops); err != nil {
			return queue.TxResult{}, nil, err
		}
	}
	for i := range ops {
		if ops[i].Type == "push" {
			if err := b.sealPayloads(ctx, ops[i].Push); err != nil {
				return queue.TxResult{}, nil, err
			}
		}
	}
	res, timers, err := b.store.TransactionRun(ctx, ops, store.TxRiders{
		KV: queue.KVRider{Tenant: sc.Tenant, Now: time.Now(), Ops: riders.KV}, Timers: riders.Timers})
	b.analytics.RecordTransaction(time.Now(), ops, res, err)
	res.TransactionID = b.ids.New()
	if err != nil {
		return res, nil, err
	}
	if res.Success {
		b.wakeTransaction(ops, ackIdx, res.Results)
	}
	return res, timers, nil
}

// wakeTransaction wakes, after a committed transaction, the long-polls of the queues
// it pushed to, and for every ack that ended a lease one parked pop of the ack's group
// that can take its partition (what is left there would otherwise wait for the pop's
// re-check). ackIdx is the result index of each ack, in operation order.
func (b *Broker) wakeTransaction(ops []queue.TxOp, ackIdx []int, results []queue.TxOpResult) {
	acks := 0
	for _, op := range ops {
		switch op.Type {
		case "push":
			b.wakeQueues(op.Push)
		case "ack":
			if i := ackIdx[acks]; i < len(results) && results[i].FreedPartition != "" {
				b.wakeFreed(results[i].FreedQueue, op.Ack.ConsumerGroup, results[i].FreedPartition)
			}
			acks++
		}
	}
}

// txAcksInScope marks every ack of ops that names a partition outside the scope
// as unresolvable: to the caller, another tenant's message does not exist.
func (b *Broker) txAcksInScope(ctx context.Context, sc queue.Scope, ops []queue.TxOp) error {
	var pids []string
	for _, op := range ops {
		if op.Type == "ack" && !op.Unresolvable {
			pids = append(pids, op.Ack.PartitionID)
		}
	}
	owned, err := b.store.PartitionsInScope(ctx, sc, pids)
	if err != nil {
		return err
	}
	for i := range ops {
		if ops[i].Type == "ack" && !owned[strings.ToLower(ops[i].Ack.PartitionID)] {
			ops[i].Unresolvable = true
		}
	}
	return nil
}
