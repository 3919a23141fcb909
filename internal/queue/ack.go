package queue

import "time"

// Ack statuses.
const (
	AckCompleted = "completed"
	AckSuccess   = "success"
	AckFailed    = "failed"
	AckDLQ       = "dlq"
	AckRetry     = "retry"
)

// Ack acknowledges the message (PartitionID, TransactionID) for ConsumerGroup.
type Ack struct {
	TransactionID string
	PartitionID   string
	LeaseID       string
	Status        string
	ConsumerGroup string
	Error         string
}

// AckResult is the outcome of one Ack. Error is empty on success, except for an
// unknown status, which fails with no error text (upstream behaviour).
type AckResult struct {
	Index         int
	TransactionID string
	Success       bool
	Error         string
	QueueName     string
	PartitionName string
	LeaseReleased *bool
	DLQ           bool
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
}

// TxResult is the outcome of a transaction. On failure everything was rolled back
// and Results holds the operations that ran before the failing one.
type TxResult struct {
	TransactionID string
	Success       bool
	Error         string
	Results       []TxOpResult
}
