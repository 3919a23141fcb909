package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/queue"
)

// Push validates items, assigns message ids (and transaction ids the client left
// out), appends them in one transaction and wakes long-polls of the touched queues
// after the commit. Results are in request order. While pushes are paused (see
// pause.go), or when PostgreSQL is unreachable, the items go to the spool instead and are
// answered "buffered" (see spool.go); with no spool such a push fails (503).
func (b *Broker) Push(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	if len(items) == 0 {
		return []queue.PushResult{}, nil
	}
	if err := b.preparePush(items, "items"); err != nil {
		return nil, err
	}
	if b.spoolFirst() {
		why := "PostgreSQL is unreachable"
		if b.store.CommitsStalled() {
			why = "PostgreSQL holds commits for a synchronous standby"
		}
		return b.spoolPush(ctx, items, why)
	}
	if push, _ := b.pauseFlags(ctx); push {
		if b.spooler.sp == nil {
			return nil, errPushPaused
		}
		return b.spoolPush(ctx, items, "push maintenance mode is on")
	}
	if behind, err := b.spoolHolds(ctx, items); err != nil {
		return nil, err
	} else if behind {
		return b.spoolPush(ctx, items, "earlier pushes to the partition are still in the spool")
	}
	// insert seals a copy: the spool must get the plaintext (replay encrypts again).
	results, err := b.insert(ctx, items)
	if err != nil && b.canSpool(err) {
		b.markDatabaseDown()
		return b.spoolPush(ctx, items, "PostgreSQL is unreachable")
	}
	return results, err
}

// insert is the database part of a push (also used by the spool drainer): encrypt,
// insert in one transaction, count, report full queues, wake long-polls.
func (b *Broker) insert(ctx context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	stored, err := b.sealedCopy(ctx, items)
	if err != nil {
		b.analytics.RecordDBError(time.Now(), err)
		return nil, err
	}
	results, err := b.pushes.push(ctx, stored)
	if err != nil {
		b.analytics.RecordDBError(time.Now(), err)
		return nil, err
	}
	if b.spooler.dbDown.Load() {
		b.spooler.dbDown.Store(false) // reached: DatabaseReachable
	}
	b.analytics.RecordPush(time.Now(), results)
	for i := range results {
		if results[i].Status == statusFull {
			results[i].Status = queue.StatusFailed
			results[i].Error = fmt.Sprintf("queue %q is full: maxSize reached", results[i].Queue)
		}
	}
	b.wakeQueues(items)
	return results, nil
}

// statusFull is the store's status for an item refused because its queue reached
// maxSize; it is reported to clients as failed with an explanation.
const statusFull = "full"

// sealedCopy returns items with the payloads bound for queues with encryptionEnabled
// sealed: items itself when there are none, else a copy (items keeps the plaintext).
func (b *Broker) sealedCopy(ctx context.Context, items []queue.PushItem) ([]queue.PushItem, error) {
	enc, err := b.encryptedQueues(ctx, queueNames(items))
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(items, func(it queue.PushItem) bool { return enc[it.Queue] }) {
		return items, nil
	}
	items = slices.Clone(items)
	return items, b.sealIn(enc, items)
}

// queueNames lists the queues of items, without repeating a name that follows itself.
func queueNames(items []queue.PushItem) []string {
	names := make([]string, 0, 1)
	for _, it := range items {
		if len(names) == 0 || names[len(names)-1] != it.Queue {
			names = append(names, it.Queue)
		}
	}
	return names
}

// sealPayloads encrypts, in place, the payloads of items bound for queues with
// encryptionEnabled. Such a queue without a configured key is refused rather than
// written in plaintext.
func (b *Broker) sealPayloads(ctx context.Context, items []queue.PushItem) error {
	enc, err := b.encryptedQueues(ctx, queueNames(items))
	if err != nil {
		return err
	}
	return b.sealIn(enc, items)
}

// sealIn encrypts, in place, the payloads of items whose queue enc marks encrypted.
func (b *Broker) sealIn(enc map[string]bool, items []queue.PushItem) error {
	for i := range items {
		it := &items[i]
		if !enc[it.Queue] {
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

// seal encrypts payload for queueName, which has encryptionEnabled; without a key on
// this broker that is a conflict, never a plaintext message in an encrypted queue.
func (b *Broker) seal(queueName string, payload []byte) ([]byte, error) {
	if b.cfg.Sealer == nil {
		return nil, queue.Conflict("queue %q has encryptionEnabled but QUEEN_ENCRYPTION_KEY is not configured on this broker",
			queueName)
	}
	return b.cfg.Sealer.Seal(payload)
}

// preparePush validates and normalises items in place; field names the errors
// (e.g. items[3].queue).
func (b *Broker) preparePush(items []queue.PushItem, field string) error {
	if len(items) > b.cfg.MaxPushItems {
		return queue.Invalid(field, "%s: at most %d items per request (got %d)", field, b.cfg.MaxPushItems, len(items))
	}
	need := len(items)
	for i := range items {
		it := &items[i]
		if it.Partition == "" {
			it.Partition = queue.DefaultPartition
		}
		if len(it.Payload) == 0 {
			it.Payload = json.RawMessage("null")
		}
		if id, ok := queue.CanonicalUUID(it.TraceID); ok {
			it.TraceID = id // any form PostgreSQL's uuid takes, stored and answered canonical
		}
		if err := checkPushItem(it, ""); err != nil {
			// Only a failing item pays for its field name (items[3].queue).
			return checkPushItem(it, fmt.Sprintf("%s[%d]", field, i))
		}
		if it.TransactionID == "" {
			need++
		}
	}
	// Ids in item order, the message id before a generated transaction id, as one
	// batch from the generator.
	ids := b.ids.Append(make([]string, 0, need), need)
	for i := range items {
		it := &items[i]
		it.MessageID, ids = ids[0], ids[1:]
		if it.TransactionID == "" {
			it.TransactionID, ids = ids[0], ids[1:]
		}
	}
	return nil
}

// checkPushItem validates one normalised item; at prefixes the field names of errors.
func checkPushItem(it *queue.PushItem, at string) error {
	if err := queue.CheckName(at+".queue", it.Queue); err != nil {
		return err
	}
	if err := queue.CheckName(at+".partition", it.Partition); err != nil {
		return err
	}
	if queue.TransactionIDTooLong(it.TransactionID) {
		return queue.Invalid(at+".transactionId", "%s.transactionId must be at most %d characters", at, queue.MaxTransactionIDLength)
	}
	if strings.IndexByte(it.TransactionID, 0) >= 0 || !utf8.ValidString(it.TransactionID) {
		return queue.Invalid(at+".transactionId", "%s.transactionId must be valid UTF-8 without NUL characters", at)
	}
	if err := queue.CheckNoReplacement(at+".transactionId", it.TransactionID); err != nil {
		return err
	}
	if it.TraceID != "" && !queue.IsUUID(it.TraceID) {
		return queue.Invalid(at+".traceId", "%s.traceId must be a UUID", at)
	}
	return queue.CheckPayload(at+".payload", it.Payload)
}

// Wake wakes every pop parked on queueName, on this broker at once and on the other
// replicas through PostgreSQL (POST /internal/api/notify).
func (b *Broker) Wake(queueName string) {
	b.waiters.notify(queueName)
	b.wakeup.announce(queueName)
}

// wakeQueues wakes the long-polls of the queues items went to: on this replica the pops
// the partitions filled can serve (see waiters), on the others every pop of the queue,
// through NOTIFY. Call it only after the commit.
func (b *Broker) wakeQueues(items []queue.PushItem) {
	type filled struct{ queue, partition string }
	all := make([]filled, len(items))
	for i := range items {
		all[i] = filled{items[i].Queue, cmp.Or(items[i].Partition, queue.DefaultPartition)}
	}
	slices.SortFunc(all, func(x, y filled) int {
		return cmp.Or(strings.Compare(x.queue, y.queue), strings.Compare(x.partition, y.partition))
	})
	all = slices.Compact(all)
	var partitions []string
	for i, f := range all {
		partitions = append(partitions, f.partition)
		if i+1 == len(all) || all[i+1].queue != f.queue {
			b.waiters.notifyPartitions(f.queue, partitions)
			b.wakeup.announce(f.queue)
			partitions = partitions[:0]
		}
	}
}
