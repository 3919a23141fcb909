package api

// Results of a dead-letter move (POST /api/v1/messages/{p}/{t}/retry and POST
// /api/v1/dlq/{id}/replay).
const (
	// DLQMoveMoved: the message was pushed again and the entry deleted.
	DLQMoveMoved = "moved"
	// DLQMoveDuplicate: the move was already made; nothing written, the entry kept.
	DLQMoveDuplicate = "duplicate"
	// DLQMoveMaintenance: push maintenance is on; nothing written.
	DLQMoveMaintenance = "maintenance"
	// DLQMoveGone: no such entry (replay's 404).
	DLQMoveGone = "gone"
	// DLQMoveFailed: the move failed (500).
	DLQMoveFailed = "failed"
)

// DLQMoveResponse is the 200, 503 and 500 answer of a dead-letter move. On 200 every
// field but Error and Message is set; a 503 or 500 sets Success false, Result,
// DLQRowRemoved and Error.
type DLQMoveResponse struct {
	// Success is true on 200.
	Success bool `json:"success"`
	// Result is one of the DLQMove* constants.
	Result string `json:"result,omitempty"`
	// Queue and Partition are the destination.
	Queue string `json:"queue,omitempty"`
	// Partition: see Queue.
	Partition string `json:"partition,omitempty"`
	// ConsumerGroup is the group that dead-lettered the message ("" for none).
	ConsumerGroup *string `json:"consumerGroup,omitempty"`
	// DLQID is the dead-letter entry's id.
	DLQID string `json:"dlqId,omitempty"`
	// OriginalTransactionID is the dead-lettered message's transaction id.
	OriginalTransactionID string `json:"originalTransactionId,omitempty"`
	// ReplayedAs is the push of the moved message.
	ReplayedAs *DLQReplayedAs `json:"replayedAs,omitempty"`
	// DLQRowRemoved says whether the entry is gone: false when refused or
	// duplicate, null when the outcome is unknown (500 after a lost connection).
	DLQRowRemoved *bool `json:"dlqRowRemoved"`
	// Error and Message explain a failure.
	Error string `json:"error,omitempty"`
	// Message: see Error.
	Message string `json:"message,omitempty"`
}

// DLQReplayedAs is the push result of a moved message, in the push answer's
// spelling.
type DLQReplayedAs struct {
	// Index is always 0.
	Index int `json:"index"`
	// MessageID is the new message's id, the all-zero UUID for a duplicate.
	MessageID string `json:"message_id"`
	// TransactionID is "dlq:<dlqId>".
	TransactionID string `json:"transaction_id"`
	// QueueName is the destination queue.
	QueueName string `json:"queueName"`
	// Status is "queued" or "duplicate".
	Status string `json:"status"`
}

// DLQMoveNotFound is the 404 answer of a dead-letter move: a retry echoes its
// address, a replay its dlqId with result "gone".
type DLQMoveNotFound struct {
	// Success is always false.
	Success bool `json:"success"`
	// Result is DLQMoveGone on a replay, absent on a retry.
	Result string `json:"result,omitempty"`
	// PartitionID and TransactionID echo a retry's address.
	PartitionID string `json:"partitionId,omitempty"`
	// TransactionID: see PartitionID.
	TransactionID string `json:"transactionId,omitempty"`
	// DLQID echoes a replay's id.
	DLQID string `json:"dlqId,omitempty"`
	// Error is "Message not found".
	Error string `json:"error"`
	// Message explains it.
	Message string `json:"message"`
}
