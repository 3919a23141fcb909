package api

import "encoding/json"

// DLQRequeueRequest is the body of POST /api/v1/dlq/requeue: either Items (1 …
// 1000) or a Filter that names at least a queue.
type DLQRequeueRequest struct {
	Items  []DLQRequeueItem  `json:"items,omitempty"`
	Filter *DLQRequeueFilter `json:"filter,omitempty"`
}

// DLQRequeueItem names the dead-letter entries of one message: the entry of
// ConsumerGroup ("" for an entry recorded without a group), or every entry of the
// message when ConsumerGroup is absent or null.
type DLQRequeueItem struct {
	PartitionID   string  `json:"partitionId"`
	TransactionID string  `json:"transactionId"`
	ConsumerGroup *string `json:"consumerGroup,omitempty"`
}

// DLQRequeueFilter selects dead-letter entries as GET /api/v1/dlq does: Queue is
// required, the others are optional exact matches, From and To bound the failure
// time (RFC 3339 or a date, both inclusive).
type DLQRequeueFilter struct {
	Queue         string `json:"queue"`
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	Partition     string `json:"partition,omitempty"`
	From          string `json:"from,omitempty"`
	To            string `json:"to,omitempty"`
}

// DLQRequeueResponse is the answer of POST /api/v1/dlq/requeue and of POST
// /api/v1/messages/{partitionId}/{transactionId}/retry: the messages pushed again,
// in partition order.
type DLQRequeueResponse struct {
	// Requeued is the number of messages pushed again (len(Items)).
	Requeued int `json:"requeued"`
	// Entries is the number of dead-letter entries removed (a message dead-lettered
	// by several groups has one per group).
	Entries int64 `json:"entries"`
	// More is true when a filter matched more messages than one call takes.
	More bool `json:"more"`
	// Items renders [] when empty.
	Items []DLQRequeued `json:"items"`
}

// MarshalJSON renders nil Items as [].
func (r DLQRequeueResponse) MarshalJSON() ([]byte, error) {
	type plain DLQRequeueResponse
	r.Items = nonNil(r.Items)
	return json.Marshal(plain(r))
}

// DLQRequeued is one message pushed again: its partition, its old transaction id,
// and the transaction id and message id of the new message.
type DLQRequeued struct {
	PartitionID      string `json:"partitionId"`
	TransactionID    string `json:"transactionId"`
	NewTransactionID string `json:"newTransactionId"`
	NewMessageID     string `json:"newMessageId"`
	Queue            string `json:"queue"`
}

// DLQPurgeResponse is the answer of DELETE /api/v1/dlq: the entries deleted, and
// whether matching entries are left (one call deletes at most 10 000).
type DLQPurgeResponse struct {
	Deleted int64 `json:"deleted"`
	More    bool  `json:"more"`
}
