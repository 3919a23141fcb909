package api

import "encoding/json"

// Transaction operation types (the "type" of a [TxOperation] and [TxResult]).
const (
	// TxOpPush pushes Items (or the flat single-item form).
	TxOpPush = "push"
	// TxOpAck acks one message.
	TxOpAck = "ack"
)

// TransactionRequest is the body of POST /api/v1/transaction: operations that commit or
// roll back together.
type TransactionRequest struct {
	// Operations must be non-empty.
	Operations []TxOperation `json:"operations"`
	// RequiredLeases is sent by every client and ignored by the server.
	RequiredLeases []string `json:"requiredLeases,omitempty"`
}

// TxOperation is one operation of a [TransactionRequest]. A push uses Items; an ack uses
// TransactionID, PartitionID and the optional Status, ConsumerGroup, LeaseID and Error.
// The server also accepts a flat push ({type:"push",queue,partition,payload|data,...}).
type TxOperation struct {
	// Type is [TxOpPush] or [TxOpAck].
	Type string `json:"type"`
	// Items are the messages of a push; a missing payload defaults to {} here.
	Items []PushItem `json:"items,omitempty"`
	// TransactionID is the acked message (ack), or the item's id in the flat push form.
	TransactionID string `json:"transactionId,omitempty"`
	// PartitionID is the acked message's partition UUID.
	PartitionID string `json:"partitionId,omitempty"`
	// Status is completed/success (advance) or failed/dlq (to the DLQ, no retry logic).
	Status string `json:"status,omitempty"`
	// ConsumerGroup defaults to [QueueModeGroup].
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// LeaseID is validated only when present.
	LeaseID string `json:"leaseId,omitempty"`
	// Error is stored as the DLQ error text.
	Error string `json:"error,omitempty"`
	// Queue is the flat push form's queue.
	Queue string `json:"queue,omitempty"`
	// Partition is the flat push form's partition.
	Partition string `json:"partition,omitempty"`
	// Payload is the flat push form's payload.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Data is accepted as a synonym of Payload in the flat push form.
	Data json.RawMessage `json:"data,omitempty"`
	// TraceID is the flat push form's trace id.
	TraceID string `json:"traceId,omitempty"`
}

// TransactionResponse is the answer of POST /api/v1/transaction, always HTTP 200:
// failure is Success false with Error set and the results gathered before it.
type TransactionResponse struct {
	// TransactionID is generated for this call.
	TransactionID string `json:"transactionId"`
	// Success reports whether everything committed.
	Success bool `json:"success"`
	// Error explains a failure, e.g. "ACK operation failed: Invalid or expired lease".
	Error string `json:"error,omitempty"`
	// Reason is the stable id of a failure's cause (e.g. "ack_rejected"); absent on
	// success.
	Reason string `json:"reason,omitempty"`
	// Results has one entry per ack and one per pushed item (flattened), in order.
	// Renders [] when empty.
	Results []TxResult `json:"results"`
}

// MarshalJSON renders a nil Results as [].
func (r TransactionResponse) MarshalJSON() ([]byte, error) {
	type plain TransactionResponse
	if r.Results == nil {
		r.Results = []TxResult{}
	}
	return json.Marshal(plain(r))
}

// TxResult is one entry of [TransactionResponse.Results]. Its keys depend on Type (see
// MarshalJSON); the tags list every key for decoding.
type TxResult struct {
	// Index is the result's position.
	Index int `json:"index"`
	// Type is [TxOpAck] or [TxOpPush].
	Type string `json:"type"`
	// Success reports whether the operation succeeded.
	Success bool `json:"success"`
	// TransactionID is the acked message's id (ack) or the pushed item's id (push).
	TransactionID string `json:"transactionId"`
	// Error is rendered (null when nil) on ack results.
	Error *string `json:"error,omitempty"`
	// DLQ reports an ack that moved the message to the DLQ.
	DLQ bool `json:"dlq,omitempty"`
	// MessageID is the pushed message's id.
	MessageID string `json:"messageId,omitempty"`
	// PartitionID is the pushed message's partition UUID.
	PartitionID string `json:"partitionId,omitempty"`
	// QueueName is the pushed message's queue.
	QueueName string `json:"queueName,omitempty"`
}

// MarshalJSON renders upstream's keys of a transaction result for r.Type:
//
//	ack:  index, type, success, transactionId, error (null when nil), dlq
//	push: index, type, success, transactionId, messageId, partitionId, queueName
//
// Any other type renders every non-empty field.
func (r TxResult) MarshalJSON() ([]byte, error) {
	switch r.Type {
	case TxOpAck:
		return json.Marshal(struct {
			Index         int     `json:"index"`
			Type          string  `json:"type"`
			Success       bool    `json:"success"`
			TransactionID string  `json:"transactionId"`
			Error         *string `json:"error"`
			DLQ           bool    `json:"dlq"`
		}{r.Index, r.Type, r.Success, r.TransactionID, r.Error, r.DLQ})
	case TxOpPush:
		return json.Marshal(struct {
			Index         int    `json:"index"`
			Type          string `json:"type"`
			Success       bool   `json:"success"`
			TransactionID string `json:"transactionId"`
			MessageID     string `json:"messageId"`
			PartitionID   string `json:"partitionId"`
			QueueName     string `json:"queueName"`
		}{r.Index, r.Type, r.Success, r.TransactionID, r.MessageID, r.PartitionID, r.QueueName})
	}
	type plain TxResult
	return json.Marshal(plain(r))
}
