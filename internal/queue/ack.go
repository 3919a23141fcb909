package queue

import (
	"fmt"
	"time"
)

// Ack statuses.
const (
	AckCompleted = "completed"
	AckSuccess   = "success"
	AckFailed    = "failed"
	AckDLQ       = "dlq"
	AckRetry     = "retry"
)

// AckUnresolvable is the error of an ack whose transaction id resolves nowhere (never
// pushed, purged, another tenant's partition) or, under a lease, beyond the leased
// batch: the wording Queen 1.x clients look for ("unresolvable").
const AckUnresolvable = "unresolvable: transaction not in the ack window (hash purged or never pushed); " +
	"if leased, the message redelivers"

// TxAckUnresolvable is the error of a transaction rolled back because one of its acks
// resolves nowhere (reason [TxReasonAckRejected]).
const TxAckUnresolvable = "QTXN ack references unknown transactionId; transaction rolled back"

// TxDuplicateText is the error of a transaction rolled back because one of its pushes
// repeated a transaction id already stored in its partition (the 1.x brokers' text).
func TxDuplicateText(queueName, partition string) string {
	return fmt.Sprintf("QDUP duplicate messages in queue %q partition %q; transaction rolled back", queueName, partition)
}

// TxReasonAckRejected is the reason of a transaction rolled back by one of its acks.
const TxReasonAckRejected = "ack_rejected"

// TxReasonRefused is the reason of a transaction rolled back because the database
// refused one of its pushes (a full queue): the Queen 1.x brokers' reason for a
// statement that failed.
const TxReasonRefused = "db_error"

// Ack acknowledges the message (PartitionID, TransactionID) for ConsumerGroup.
type Ack struct {
	TransactionID string
	PartitionID   string
	LeaseID       string
	Status        string
	ConsumerGroup string
	Error         string
}

// AckResult is the outcome of one Ack. Error is empty on success. Noop marks a
// completed ack at or below the committed cursor: it succeeded and changed nothing.
type AckResult struct {
	Index         int
	TransactionID string
	Success       bool
	Error         string
	QueueName     string
	PartitionName string
	LeaseReleased *bool
	DLQ           bool
	Noop          bool
	// Conflated is set on a completion by a consumer group whose conflation policy is
	// on: the messages it skipped, from the cursor to the acked one.
	Conflated *int
	// PartitionPending is set on the ack that released the lease when the partition
	// may hold messages after the group's cursor: a parked pop of the group can take
	// them now. The ack of a pop (the direct path) checks the partition's head; any
	// other ack that releases a lease sets it without looking. No answer carries it.
	PartitionPending bool
}

// LeaseExtension is the outcome of extending a lease.
type LeaseExtension struct {
	LeaseID   string
	Success   bool
	Error     string
	ExpiresAt time.Time
}

// TxOp is one operation of an atomic transaction: either an Ack or a Push.
type TxOp struct {
	Type string // "ack" or "push"
	Ack  Ack
	Push []PushItem
	// Unresolvable marks an ack known to name no message without asking the database
	// (a partition id that is no UUID, or one outside the caller's scope): the
	// transaction runs up to it and rolls back there, as for an unknown message.
	Unresolvable bool
}

// TxOpResult reports one operation of a transaction; push operations report one
// result per item, in flattened item order.
type TxOpResult struct {
	Index         int
	Type          string
	Success       bool
	TransactionID string
	Error         string
	DLQ           bool
	MessageID     string
	PartitionID   string
	QueueName     string
	// FreedQueue and FreedPartition name, on an ack, the partition whose lease the
	// ack ended, claimable by the op's group once the transaction commits (empty
	// otherwise). They are not part of the answer.
	FreedQueue, FreedPartition string
}

// TxResult is the outcome of a transaction. On failure everything was rolled back
// and Results holds the operations that ran before the failing one.
type TxResult struct {
	TransactionID string
	Success       bool
	Error         string
	// Reason is the stable id of a rollback's cause (e.g. [TxReasonAckRejected]);
	// empty when committed.
	Reason  string
	Results []TxOpResult
	// KV holds the kv rider's results (committed transactions only); KVFailed is the
	// rider's required op whose lost precondition rolled everything back.
	KV       []KVResult
	KVFailed *KVPrecondition
}
