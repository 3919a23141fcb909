package queue

import "fmt"

// DLQKey names the dead-letter entries of one message: those of one consumer group
// when AnyGroup is false (ConsumerGroup "" matches an entry recorded without a group),
// or every entry of the message when AnyGroup is true.
type DLQKey struct {
	PartitionID   string
	TransactionID string
	ConsumerGroup string
	AnyGroup      bool
}

// DLQSelection chooses the dead-letter entries a requeue or purge works on: the
// entries named by Keys, or, when Keys is nil, those matching Filter (its Page is
// unused) up to Limit messages (requeue) or entries (purge), oldest failure first.
// Filter.Scope limits Keys too: a key outside it names no entry.
type DLQSelection struct {
	Keys   []DLQKey
	Filter DLQFilter
	Limit  int
}

// RequeueItem is one dead-lettered message about to be pushed again: the push of its
// stored payload (Encrypted when that payload is sealed) to its own partition, with
// its trace id and producer kept. Seal is true when the payload is plaintext and the
// queue has encryptionEnabled, so it must be sealed as a push would seal it.
type RequeueItem struct {
	PushItem
	// PartitionID and OriginalTransactionID identify the dead-lettered message.
	PartitionID           string
	OriginalTransactionID string
	Seal                  bool
}

// Requeued is one message pushed again by a requeue.
type Requeued struct {
	PartitionID      string
	TransactionID    string
	NewTransactionID string
	NewMessageID     string
	Queue            string
}

// RequeueResult is the outcome of a committed requeue: the messages pushed again (in
// partition order), the number of dead-letter entries removed, and, for a filter,
// whether matching entries were left for another call.
type RequeueResult struct {
	Messages []Requeued
	Entries  int64
	More     bool
}

// DLQKeyNotFoundError reports the first requeue key that names no dead-letter entry;
// nothing was requeued. It matches ErrNotFound, and its message, written from the
// key the client sent, is safe to show.
type DLQKeyNotFoundError struct {
	Index int
	Key   DLQKey
}

func (e *DLQKeyNotFoundError) Error() string {
	if e.Key.AnyGroup {
		return fmt.Sprintf("items[%d]: message %q in partition %s has no dead-letter entry",
			e.Index, e.Key.TransactionID, e.Key.PartitionID)
	}
	return fmt.Sprintf("items[%d]: message %q in partition %s has no dead-letter entry for consumer group %q",
		e.Index, e.Key.TransactionID, e.Key.PartitionID, e.Key.ConsumerGroup)
}

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *DLQKeyNotFoundError) Unwrap() error { return ErrNotFound }
