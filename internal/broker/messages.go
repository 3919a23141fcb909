package broker

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/queue"
)

// Limits and defaults of the message and DLQ admin routes.
const (
	// MaxListLimit caps the page size of every admin listing (DLQ, traces, status
	// queue messages) but the message listing, which has MaxMessageListLimit.
	MaxListLimit = 1000
	// MaxMessageListLimit caps the page size of the message listing. It is larger than
	// MaxListLimit because queenctl's listing and drain helpers ask for 10 000 rows at
	// once; the store bounds the work by partitions × (limit + offset) index rows.
	MaxMessageListLimit = 10000
	// DefaultMessageWindow is how far before to (default now) the message listing looks
	// without from.
	DefaultMessageWindow = time.Hour
)

// Messages lists one page (limit 1..MaxMessageListLimit) of the messages matching f,
// newest first, each with its computed status, with the total count of the matching
// messages taken from the same snapshot as the page. Zero From is now − 1 h, zero To
// is now; To is rounded up to the end of its minute and excluded.
func (b *Broker) Messages(ctx context.Context, f queue.MessageFilter) (queue.MessageList, error) {
	for _, v := range []struct{ field, value string }{
		{"queue", f.Queue}, {"partition", f.Partition}, {"ns", f.Namespace}, {"task", f.Task},
	} {
		if err := checkText(v.field, v.value, queue.MaxNameLength); err != nil {
			return queue.MessageList{}, err
		}
	}
	if f.Status != "" && !queue.IsMessageStatus(f.Status) {
		return queue.MessageList{}, queue.Invalid("status", "status must be one of %s", strings.Join(
			[]string{queue.MessagePending, queue.MessageProcessing, queue.MessageCompleted, queue.MessageDeadLetter}, ", "))
	}
	if f.To.IsZero() {
		f.To = time.Now()
	}
	if f.From.IsZero() { // the window before to
		f.From = f.To.Add(-DefaultMessageWindow)
	}
	f.To = f.To.Truncate(time.Minute).Add(time.Minute)
	if !f.From.Before(f.To) {
		return queue.MessageList{}, queue.Invalid("from", "from must be before to")
	}
	if err := checkPageLimit(f.Page, MaxMessageListLimit); err != nil {
		return queue.MessageList{}, err
	}
	return b.store.MessageList(ctx, f)
}

// Message returns one message of the scope with its decrypted payload, status, DLQ
// details and per-group consumption; queue.ErrNotFound when there is no such message
// (a partition id that is not a UUID, or another tenant's message, included).
func (b *Broker) Message(ctx context.Context, sc queue.Scope, partitionID, transactionID string) (queue.MessageDetail, error) {
	if !isMessageKey(partitionID, transactionID) {
		return queue.MessageDetail{}, fmt.Errorf("%w: message %q in partition %q", queue.ErrNotFound, transactionID, partitionID)
	}
	d, err := b.store.MessageGet(ctx, sc, partitionID, transactionID)
	if err != nil {
		return d, err
	}
	d.Payload = b.OpenPayload(d.Payload)
	return d, nil
}

// MessageDelete deletes one message of the scope with its DLQ entries and traces,
// leaving cursors alone; deleted is false when there was no such message in the scope.
func (b *Broker) MessageDelete(ctx context.Context, sc queue.Scope, partitionID, transactionID string) (deleted bool, err error) {
	if !isMessageKey(partitionID, transactionID) {
		return false, nil
	}
	return b.store.MessageDelete(ctx, sc, partitionID, transactionID)
}

// DLQ lists dead-letter entries matching f, newest failure first, with decrypted
// payloads (upstream returns them as stored), and the number of matching entries.
func (b *Broker) DLQ(ctx context.Context, f queue.DLQFilter) ([]queue.DLQEntry, int64, error) {
	for _, v := range []struct{ field, value string }{
		{"queue", f.Queue}, {"consumerGroup", f.ConsumerGroup}, {"partition", f.Partition},
	} {
		if err := checkText(v.field, v.value, queue.MaxNameLength); err != nil {
			return nil, 0, err
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
		return nil, 0, queue.Invalid("from", "from must not be after to")
	}
	if err := checkPage(f.Page); err != nil {
		return nil, 0, err
	}
	entries, total, err := b.store.DLQList(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	for i := range entries {
		entries[i].Payload = b.OpenPayload(entries[i].Payload)
	}
	return entries, total, nil
}

// checkPage checks a listing page: limit 1..MaxListLimit, offset not negative.
func checkPage(p queue.Page) error {
	return checkPageLimit(p, MaxListLimit)
}

// checkPageLimit checks a listing page: limit 1..maxLimit, offset not negative.
func checkPageLimit(p queue.Page, maxLimit int) error {
	if p.Limit < 1 || p.Limit > maxLimit {
		return queue.Invalid("limit", "limit must be between 1 and %d", maxLimit)
	}
	if p.Offset < 0 {
		return queue.Invalid("offset", "offset must not be negative")
	}
	return nil
}

// isMessageKey reports whether (partitionID, transactionID) can name a stored
// message; anything else is answered "not found" without SQL.
func isMessageKey(partitionID, transactionID string) bool {
	return queue.IsUUID(partitionID) && utf8.RuneCountInString(transactionID) <= queue.MaxTransactionIDLength &&
		utf8.ValidString(transactionID) && !strings.ContainsRune(transactionID, 0)
}
