package api

// Ack statuses (the "status" of an ack).
const (
	// AckStatusCompleted moves the cursor to the message (the default).
	AckStatusCompleted = "completed"
	// AckStatusSuccess is a synonym of AckStatusCompleted.
	AckStatusSuccess = "success"
	// AckStatusFailed counts a retry or, past the queue's retryLimit, moves the message to
	// the DLQ.
	AckStatusFailed = "failed"
	// AckStatusDLQ moves the message straight to the DLQ.
	AckStatusDLQ = "dlq"
	// AckStatusRetry releases the lease without counting a retry.
	AckStatusRetry = "retry"
)

// AckRequest is the body of POST /api/v1/ack. Optional fields are sent only when set,
// as the upstream Go client does.
type AckRequest struct {
	// TransactionID identifies the message within its partition; required.
	TransactionID string `json:"transactionId"`
	// PartitionID is the partition UUID from the pop; required.
	PartitionID string `json:"partitionId"`
	// LeaseID, when set, must be the live lease of (partition, group).
	LeaseID string `json:"leaseId,omitempty"`
	// Status is one of the AckStatus constants; empty means completed.
	Status string `json:"status,omitempty"`
	// ConsumerGroup defaults to [QueueModeGroup].
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// Error is stored as the DLQ error text.
	Error string `json:"error,omitempty"`
}

// AckBatchRequest is the body of POST /api/v1/ack/batch.
type AckBatchRequest struct {
	// ConsumerGroup applies to every item (default [QueueModeGroup]); there is no
	// per-item group.
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// Acknowledgments are processed with the rules of a single ack; the response keeps
	// their order.
	Acknowledgments []AckItem `json:"acknowledgments"`
}

// AckItem is one element of [AckBatchRequest.Acknowledgments].
type AckItem struct {
	// TransactionID identifies the message within its partition; required.
	TransactionID string `json:"transactionId"`
	// PartitionID is the partition UUID from the pop; required.
	PartitionID string `json:"partitionId"`
	// LeaseID, when set, must be the live lease of (partition, group).
	LeaseID string `json:"leaseId,omitempty"`
	// Status is one of the AckStatus constants; empty means completed.
	Status string `json:"status,omitempty"`
	// Error is stored as the DLQ error text.
	Error string `json:"error,omitempty"`
}

// AckResult is the per-item outcome of an ack. POST /api/v1/ack answers a one-element
// array of it and POST /api/v1/ack/batch an array in request order, always with HTTP
// 200: a failed ack is Success false with Error set. Every key but conflated is always
// rendered; nil pointers render as null.
type AckResult struct {
	// Index is the item's position in the request.
	Index int `json:"index"`
	// TransactionID echoes the acked transaction id.
	TransactionID string `json:"transactionId"`
	// Success reports whether the ack took effect.
	Success bool `json:"success"`
	// Error is null on success, else e.g. "Invalid or expired lease" or
	// "unresolvable: ..." (the message resolves nowhere).
	Error *string `json:"error"`
	// QueueName is the message's queue; null when the message was not found.
	QueueName *string `json:"queueName"`
	// PartitionName is the message's partition name; null when not found.
	PartitionName *string `json:"partitionName"`
	// LeaseReleased reports whether the ack released the lease; null when not found.
	LeaseReleased *bool `json:"leaseReleased"`
	// DLQ reports whether the message went to the dead-letter queue.
	DLQ bool `json:"dlq"`
	// Noop reports a completed ack at or below the committed cursor: success, and
	// nothing changed. Always rendered (false on every other item).
	Noop bool `json:"noop"`
	// Conflated is present only on a completion by a consumer group whose conflation
	// policy is on (last-value delivery): the messages the ack skipped, from the
	// cursor to the acked one.
	Conflated *int `json:"conflated,omitempty"`
}
