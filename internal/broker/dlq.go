package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Bounds of the dead-letter requeue and purge.
const (
	// MaxRequeueItems caps one requeue: the items of a request, and the messages a
	// filter takes per call (the answer's more flag says whether entries are left).
	MaxRequeueItems = 1000
	// MaxDLQPurge caps the dead-letter entries one purge deletes.
	MaxDLQPurge = 10000
)

// errRequeuePaused refuses a requeue while pushes are paused: a
// requeue writes the database in the same transaction as it drops the dead-letter
// entries, so it cannot go to the spool as a push would.
var errRequeuePaused = &queue.UnavailableError{
	Message: "push maintenance mode is on; requeue dead letters when it is off",
}

// DLQRequeue pushes the dead-lettered messages sel names again, each to its own
// partition under a fresh transaction id and message id (after every message stored
// there before), and deletes their dead-letter entries, all in one transaction; it
// wakes the long-polls of the queues after the commit.
//
// With sel.Keys (1 … MaxRequeueItems), each key must name at least one entry, or
// the call fails with a *queue.DLQKeyNotFoundError and nothing changes; a message
// named several times is pushed once. Otherwise sel.Filter must name a queue, and up
// to MaxRequeueItems messages are taken, oldest failure first. Payloads go as stored
// (a sealed payload stays sealed); a plaintext payload of a queue that now has
// encryptionEnabled is sealed, as a push would seal it. The trace id and producer
// of each message are kept.
func (b *Broker) DLQRequeue(ctx context.Context, sel queue.DLQSelection) (queue.RequeueResult, error) {
	if err := checkRequeue(&sel); err != nil {
		return queue.RequeueResult{}, err
	}
	if push, _ := b.pauseFlags(ctx); push {
		return queue.RequeueResult{}, errRequeuePaused
	}
	res, err := b.store.DLQRequeue(ctx, sel, b.prepareRequeue)
	now := time.Now()
	if err != nil {
		b.analytics.RecordDBError(now, err)
		return queue.RequeueResult{}, err
	}
	if len(res.Messages) == 0 {
		return res, nil
	}
	results := make([]queue.PushResult, len(res.Messages))
	for i, m := range res.Messages {
		results[i] = queue.PushResult{Index: i, Status: queue.StatusQueued, Queue: m.Queue,
			TransactionID: m.NewTransactionID, MessageID: m.NewMessageID, PartitionID: m.PartitionID}
	}
	b.analytics.RecordPush(now, results)
	last := ""
	for _, m := range res.Messages {
		if m.Queue != last {
			b.waiters.notify(m.Queue)
			b.wakeup.announce(m.Queue)
			last = m.Queue
		}
	}
	return res, nil
}

// DLQPurge deletes the dead-letter entries matching f (queue required; its Page is
// unused), at most MaxDLQPurge per call, oldest failure first, in one transaction;
// more says whether matching entries are left. The messages themselves stay (the
// group's cursor is already past them; retention removes them).
func (b *Broker) DLQPurge(ctx context.Context, f queue.DLQFilter) (deleted int64, more bool, err error) {
	if err := checkDLQFilter(f, ""); err != nil {
		return 0, false, err
	}
	deleted, more, err = b.store.DLQPurge(ctx, f, MaxDLQPurge)
	if err != nil {
		b.analytics.RecordDBError(time.Now(), err)
	}
	return deleted, more, err
}

// prepareRequeue gives each item (in partition order) a new message id and a new
// transaction id, so the ids increase in item order as push_q2 expects, and seals
// the plaintext payloads of queues with encryptionEnabled.
func (b *Broker) prepareRequeue(items []queue.RequeueItem) error {
	for i := range items {
		it := &items[i]
		it.MessageID = b.ids.New()
		it.TransactionID = b.ids.New()
		if !it.Seal {
			continue
		}
		if b.sealedAlready(it.Payload) {
			it.Encrypted = true // stored sealed under a row that did not say so
			continue
		}
		sealed, err := b.seal(it.Queue, it.Payload)
		if err != nil {
			return err
		}
		it.Payload, it.Encrypted = sealed, true
	}
	return nil
}

// checkRequeue validates a requeue selection and sets the filter's limit.
func checkRequeue(sel *queue.DLQSelection) error {
	if sel.Keys == nil {
		sel.Limit = MaxRequeueItems
		return checkDLQFilter(sel.Filter, "filter.")
	}
	if len(sel.Keys) == 0 || len(sel.Keys) > MaxRequeueItems {
		return queue.Invalid("items", "items must hold 1 to %d entries (got %d)", MaxRequeueItems, len(sel.Keys))
	}
	for i, k := range sel.Keys {
		at := fmt.Sprintf("items[%d]", i)
		if !queue.IsUUID(k.PartitionID) {
			return queue.Invalid(at+".partitionId", "%s.partitionId must be a UUID", at)
		}
		if k.TransactionID == "" {
			return queue.Invalid(at+".transactionId", "%s.transactionId is required", at)
		}
		if err := checkText(at+".transactionId", k.TransactionID, queue.MaxTransactionIDLength); err != nil {
			return err
		}
		if err := checkText(at+".consumerGroup", k.ConsumerGroup, queue.MaxNameLength); err != nil {
			return err
		}
	}
	return nil
}

// checkDLQFilter validates the filter of a requeue or purge: queue is required, so
// no call empties every queue's dead letters by accident. prefix starts the field
// names ("filter." in a requeue body, "" for query parameters).
func checkDLQFilter(f queue.DLQFilter, prefix string) error {
	if f.Queue == "" {
		return queue.Invalid(prefix+"queue", "%squeue is required: name the queue whose dead letters to select", prefix)
	}
	for _, v := range []struct{ field, value string }{
		{"queue", f.Queue}, {"consumerGroup", f.ConsumerGroup}, {"partition", f.Partition},
	} {
		if err := checkText(prefix+v.field, v.value, queue.MaxNameLength); err != nil {
			return err
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
		return queue.Invalid(prefix+"from", "%sfrom must not be after %sto", prefix, prefix)
	}
	return nil
}

// errMovePaused refuses a dead-letter move while pushes are paused, as a requeue.
var errMovePaused = &queue.UnavailableError{
	Message: "push maintenance mode is on; move dead letters when it is off",
}

// DLQMove moves one dead-letter entry back into a queue (see [queue.DLQMove]): its
// payload is pushed as stored (sealed when the destination has encryptionEnabled and
// the payload is plaintext) under the transaction id "dlq:<entry id>", and the entry is
// deleted, in one transaction. queue.ErrNotFound when m names no entry (an id that is
// not a UUID included); a *queue.UnavailableError while push maintenance is on.
func (b *Broker) DLQMove(ctx context.Context, m queue.DLQMove) (queue.DLQMoveResult, error) {
	if m.DLQID != "" && !queue.IsUUID(m.DLQID) ||
		m.DLQID == "" && !isMessageKey(m.PartitionID, m.TransactionID) {
		return queue.DLQMoveResult{}, fmt.Errorf("%w: dead-letter entry", queue.ErrNotFound)
	}
	if m.Queue != "" {
		if err := queue.CheckName("queue", m.Queue); err != nil {
			return queue.DLQMoveResult{}, err
		}
	}
	if err := checkText("partition", m.Partition, queue.MaxNameLength); err != nil {
		return queue.DLQMoveResult{}, err
	}
	if push, _ := b.pauseFlags(ctx); push {
		return queue.DLQMoveResult{}, errMovePaused
	}
	res, err := b.store.DLQMove(ctx, m, b.prepareMove)
	now := time.Now()
	if err != nil {
		b.analytics.RecordDBError(now, err)
		return res, err
	}
	if res.Status != queue.StatusQueued {
		return res, nil
	}
	b.analytics.RecordPush(now, []queue.PushResult{{Status: queue.StatusQueued, Queue: res.Queue,
		TransactionID: res.TransactionID, MessageID: res.MessageID, PartitionID: res.PartitionID}})
	b.waiters.notify(res.Queue)
	b.wakeup.announce(res.Queue)
	return res, nil
}

// prepareMove gives a moved item a new message id and seals its payload when marked.
func (b *Broker) prepareMove(it *queue.RequeueItem) error {
	it.MessageID = b.ids.New()
	if !it.Seal {
		return nil
	}
	if b.sealedAlready(it.Payload) {
		it.Encrypted = true // stored sealed under a row that did not say so
		return nil
	}
	sealed, err := b.seal(it.Queue, it.Payload)
	if err != nil {
		return err
	}
	it.Payload, it.Encrypted = sealed, true
	return nil
}

// sealedAlready reports a payload that is an envelope this broker's key opens, as the
// readers tell one (whatever the row's is_encrypted says): copied as stored, it is
// never sealed a second time.
func (b *Broker) sealedAlready(p []byte) bool {
	return b.cfg.Sealer != nil && b.cfg.Sealer.Opens(p)
}
