package api

import "encoding/json"

// Push result statuses (the "status" key of a [PushResult]). Clients key off the status
// only: the CLI counts queued and buffered as success.
const (
	// PushStatusQueued means the message was stored.
	PushStatusQueued = "queued"
	// PushStatusDuplicate means (partition, transactionId) already existed; the result
	// carries the id of the stored (winning) message.
	PushStatusDuplicate = "duplicate"
	// PushStatusBuffered means the item went to the local spool (push maintenance or a
	// database outage) and will be written later.
	PushStatusBuffered = "buffered"
	// PushStatusFailed means the item could not even be buffered.
	PushStatusFailed = "failed"
)

// PushRequest is the body of POST /api/v1/push. Items must be a JSON array, so send
// an empty slice rather than nil when there is nothing to push.
type PushRequest struct {
	// Items are pushed in order; the response has one result per item.
	Items []PushItem `json:"items"`
}

// PushItem is one message of a [PushRequest], and of a push operation inside a
// [TransactionRequest].
type PushItem struct {
	// Queue is required; the queue is created on first use.
	Queue string `json:"queue"`
	// Partition defaults to [DefaultPartition] when empty.
	Partition string `json:"partition,omitempty"`
	// Payload is stored verbatim and may be any JSON value. A nil Payload is not sent,
	// which the server stores as null on /push and as {} inside a transaction; send
	// json.RawMessage("null") for an explicit null.
	Payload json.RawMessage `json:"payload,omitempty"`
	// TransactionID is the dedup key within the partition; empty lets the server
	// generate one.
	TransactionID string `json:"transactionId,omitempty"`
	// TraceID must be a UUID when set.
	TraceID string `json:"traceId,omitempty"`
}

// PushResult is one element of the top-level array answered by POST /api/v1/push, in
// request order. Which keys it renders depends on Status (see MarshalJSON); the struct
// tags describe every key that can appear and are used for decoding.
type PushResult struct {
	// Index is the item's position in the request.
	Index int `json:"index"`
	// TransactionID is the item's transaction id (client-sent or generated).
	TransactionID string `json:"transaction_id,omitempty"`
	// TransactionIDCamel is the camelCase alias of TransactionID that the upstream Go
	// client reads; buffered and failed results carry only this one, and only when the
	// client sent an id.
	TransactionIDCamel string `json:"transactionId,omitempty"`
	// Status is one of the PushStatus constants.
	Status string `json:"status"`
	// MessageID is the stored message id (queued) or the winner's id (duplicate).
	MessageID string `json:"message_id,omitempty"`
	// PartitionID is the partition's UUID (queued only).
	PartitionID string `json:"partition_id,omitempty"`
	// TraceID is the item's trace id; queued results render it, as null when nil.
	TraceID *string `json:"trace_id,omitempty"`
	// QueueName is the queue of queued and duplicate results.
	QueueName string `json:"queueName,omitempty"`
	// Queue is the queue of buffered and failed results.
	Queue string `json:"queue,omitempty"`
	// Partition is the partition name of buffered and failed results.
	Partition string `json:"partition,omitempty"`
	// Error explains a failed result.
	Error string `json:"error,omitempty"`
}

// MarshalJSON renders exactly upstream's keys for r.Status, in upstream's order, plus
// the additive index and transactionId alias:
//
//	queued:    index, transaction_id, [transactionId], status, message_id, partition_id, trace_id, queueName
//	duplicate: index, transaction_id, [transactionId], status, message_id, queueName
//	buffered:  index, status, queue, partition, [transactionId]
//	failed:    index, status, queue, partition, [transactionId], error
//
// Keys in brackets appear only when non-empty. Any other status renders every
// non-empty field.
func (r PushResult) MarshalJSON() ([]byte, error) {
	switch r.Status {
	case PushStatusQueued:
		return json.Marshal(struct {
			Index              int     `json:"index"`
			TransactionID      string  `json:"transaction_id"`
			TransactionIDCamel string  `json:"transactionId,omitempty"`
			Status             string  `json:"status"`
			MessageID          string  `json:"message_id"`
			PartitionID        string  `json:"partition_id"`
			TraceID            *string `json:"trace_id"`
			QueueName          string  `json:"queueName"`
		}{r.Index, r.TransactionID, r.TransactionIDCamel, r.Status, r.MessageID, r.PartitionID, r.TraceID, r.QueueName})
	case PushStatusDuplicate:
		return json.Marshal(struct {
			Index              int    `json:"index"`
			TransactionID      string `json:"transaction_id"`
			TransactionIDCamel string `json:"transactionId,omitempty"`
			Status             string `json:"status"`
			MessageID          string `json:"message_id"`
			QueueName          string `json:"queueName"`
		}{r.Index, r.TransactionID, r.TransactionIDCamel, r.Status, r.MessageID, r.QueueName})
	case PushStatusBuffered, PushStatusFailed:
		return json.Marshal(struct {
			Index              int    `json:"index"`
			Status             string `json:"status"`
			Queue              string `json:"queue"`
			Partition          string `json:"partition"`
			TransactionIDCamel string `json:"transactionId,omitempty"`
			Error              string `json:"error,omitempty"`
		}{r.Index, r.Status, r.Queue, r.Partition, r.TransactionIDCamel, r.Error})
	}
	type plain PushResult // drops this method
	return json.Marshal(plain(r))
}

// QueuedResult builds the result of a stored message. traceID may be nil.
func QueuedResult(index int, transactionID, messageID, partitionID string, traceID *string, queue string) PushResult {
	return PushResult{
		Index: index, TransactionID: transactionID, TransactionIDCamel: transactionID,
		Status: PushStatusQueued, MessageID: messageID, PartitionID: partitionID,
		TraceID: traceID, QueueName: queue,
	}
}

// DuplicateResult builds the result of an item whose (partition, transactionId) already
// existed; messageID is the id of the stored message.
func DuplicateResult(index int, transactionID, messageID, queue string) PushResult {
	return PushResult{
		Index: index, TransactionID: transactionID, TransactionIDCamel: transactionID,
		Status: PushStatusDuplicate, MessageID: messageID, QueueName: queue,
	}
}

// BufferedResult builds the result of an item written to the spool. transactionID is the
// id the client sent, or "".
func BufferedResult(index int, queue, partition, transactionID string) PushResult {
	return PushResult{
		Index: index, Status: PushStatusBuffered, Queue: queue, Partition: partition,
		TransactionIDCamel: transactionID,
	}
}

// FailedResult builds the result of an item that could not be stored nor buffered.
func FailedResult(index int, queue, partition, transactionID, errMsg string) PushResult {
	return PushResult{
		Index: index, Status: PushStatusFailed, Queue: queue, Partition: partition,
		TransactionIDCamel: transactionID, Error: errMsg,
	}
}

// ID returns the result's transaction id whichever key carried it.
func (r PushResult) ID() string {
	if r.TransactionID != "" {
		return r.TransactionID
	}
	return r.TransactionIDCamel
}
