package queue

// DLQMove selects one dead-letter entry to move back into a queue: the entry DLQID,
// or, when DLQID is empty, the newest entry of the message (PartitionID,
// TransactionID). Queue and Partition, when not empty, redirect the message there
// instead of to its original queue and partition. Scope limits the entries it can
// name and is the scope of the destination.
type DLQMove struct {
	DLQID         string
	PartitionID   string
	TransactionID string
	Queue         string
	Partition     string
	Scope         Scope
}

// DLQMoveResult is the outcome of a committed move. Status is StatusQueued (the
// message was pushed and the entry deleted) or StatusDuplicate (a message with
// TransactionID was already in the destination partition: nothing was written and the
// entry stays).
type DLQMoveResult struct {
	DLQID                 string
	ConsumerGroup         string
	OriginalTransactionID string
	Queue                 string
	Partition             string
	Status                string
	TransactionID         string
	MessageID             string
	PartitionID           string
}

// DLQMovePrefix starts the transaction id of a moved message, followed by the id of
// the dead-letter entry it came from, so moving one entry twice is deduplicated.
const DLQMovePrefix = "dlq:"
