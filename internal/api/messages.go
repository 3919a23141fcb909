package api

import "encoding/json"

// Message statuses of the message admin routes.
const (
	// MessageStatusPending is a message no cursor has passed and no live lease covers.
	MessageStatusPending = "pending"
	// MessageStatusProcessing is a message after the queue-mode cursor while the
	// queue-mode lease on its partition is live.
	MessageStatusProcessing = "processing"
	// MessageStatusCompleted is a message the relevant cursors have passed.
	MessageStatusCompleted = "completed"
	// MessageStatusDeadLetter is a message with a DLQ entry.
	MessageStatusDeadLetter = "dead_letter"
)

// Pagination echoes the page a listing answered (additive on the message listing).
type Pagination struct {
	// Limit is the effective page size (the default when the request gave none).
	Limit int `json:"limit"`
	// Offset is the number of rows skipped.
	Offset int `json:"offset"`
}

// MessageList is the answer of GET /api/v1/messages: newest first, no payloads.
// Total, Pagination, Limit, Offset and HasMore are additive (upstream has none of
// them). Total and the page come from one snapshot, so a client pages by asking
// offset + len(Messages) while HasMore is true; messages pushed between two requests
// shift the later pages, unless the request's window ends before the current minute.
type MessageList struct {
	// Messages renders [] when empty.
	Messages []MessageSummary `json:"messages"`
	// Mode summarises the cursors of the partitions the filters cover.
	Mode MessageListMode `json:"mode"`
	// Total counts every message matching the filters, across pages.
	Total int64 `json:"total"`
	// Pagination echoes the page (the same values as Limit and Offset).
	Pagination Pagination `json:"pagination"`
	// Limit is the effective page size (the default when the request gave none).
	Limit int `json:"limit"`
	// Offset is the number of matching messages skipped before this page.
	Offset int `json:"offset"`
	// HasMore reports that matching messages are left after this page:
	// Offset + len(Messages) < Total. It is false on an empty page past the end.
	HasMore bool `json:"hasMore"`
}

// MarshalJSON renders a nil Messages as [].
func (l MessageList) MarshalJSON() ([]byte, error) {
	type plain MessageList
	if l.Messages == nil {
		l.Messages = []MessageSummary{}
	}
	return json.Marshal(plain(l))
}

// MessageSummary is one message of a [MessageList].
type MessageSummary struct {
	// ID is the message UUID.
	ID string `json:"id"`
	// TransactionID is the message's idempotency key in its partition.
	TransactionID string `json:"transactionId"`
	// PartitionID is the partition UUID.
	PartitionID string `json:"partitionId"`
	// QueuePath is "queue/partition".
	QueuePath string `json:"queuePath"`
	// Queue is the queue name.
	Queue string `json:"queue"`
	// Partition is the partition name.
	Partition string `json:"partition"`
	// Namespace is the queue's namespace, "" when none.
	Namespace string `json:"namespace"`
	// Task is the queue's task, "" when none.
	Task string `json:"task"`
	// Status is one of the MessageStatus constants.
	Status string `json:"status"`
	// QueueStatus is the status seen by queue mode alone: dead_letter when queue mode
	// dead-lettered the message, else from the queue-mode cursor and lease.
	QueueStatus string `json:"queueStatus"`
	// BusStatus counts the consumer groups that consumed the message.
	BusStatus BusStatus `json:"busStatus"`
	// TraceID is the producer's trace id; null when none.
	TraceID *string `json:"traceId"`
	// ProducerSub is the producer's JWT subject; null when none.
	ProducerSub *string `json:"producerSub"`
	// QueuePriority is the queue's priority option.
	QueuePriority int `json:"queuePriority"`
	// CreatedAt has three fractional digits.
	CreatedAt string `json:"createdAt"`
	// LeaseExpiresAt is the queue-mode lease's expiry while Status is processing, else
	// null.
	LeaseExpiresAt *string `json:"leaseExpiresAt"`
}

// BusStatus counts consumer groups (queue mode included) with a cursor on the
// message's partition, and those whose cursor is at or past the message.
type BusStatus struct {
	// ConsumedBy counts the groups that consumed the message.
	ConsumedBy int `json:"consumedBy"`
	// TotalGroups counts the groups with a cursor on the partition.
	TotalGroups int `json:"totalGroups"`
}

// Consumption modes of [MessageListMode.Type] and [MessageMode.Type].
const (
	// ModeQueue is queue mode only.
	ModeQueue = "queue"
	// ModeBus is named consumer groups only.
	ModeBus = "bus"
	// ModeHybrid is both.
	ModeHybrid = "hybrid"
	// ModeNone is no cursor at all yet.
	ModeNone = "none"
)

// MessageListMode summarises the cursors of the partitions a listing covers.
type MessageListMode struct {
	// HasQueueMode reports a queue-mode cursor on any of them.
	HasQueueMode bool `json:"hasQueueMode"`
	// BusGroupsCount counts the distinct named consumer groups.
	BusGroupsCount int `json:"busGroupsCount"`
	// Type is one of ModeQueue, ModeBus, ModeHybrid, ModeNone.
	Type string `json:"type"`
}

// MessageDetail is the answer of GET /api/v1/messages/{partitionId}/{transactionId}.
// An unknown message is a 404 with {"error":"Message not found"}.
type MessageDetail struct {
	// ID is the message UUID.
	ID string `json:"id"`
	// TransactionID is the message's idempotency key in its partition.
	TransactionID string `json:"transactionId"`
	// PartitionID is the partition UUID.
	PartitionID string `json:"partitionId"`
	// QueuePath is "queue/partition".
	QueuePath string `json:"queuePath"`
	// Queue is the queue name.
	Queue string `json:"queue"`
	// Partition is the partition name.
	Partition string `json:"partition"`
	// Namespace is the queue's namespace, "" when none.
	Namespace string `json:"namespace"`
	// Task is the queue's task, "" when none.
	Task string `json:"task"`
	// Status is one of the MessageStatus constants.
	Status string `json:"status"`
	// Payload is the message payload, decrypted when a key is configured (the key is
	// "payload" here, "data" on pop and DLQ).
	Payload json.RawMessage `json:"payload"`
	// IsEncrypted reports whether the payload is stored encrypted.
	IsEncrypted bool `json:"isEncrypted"`
	// TraceID is the producer's trace id; null when none.
	TraceID *string `json:"traceId"`
	// ProducerSub is the producer's JWT subject; null when none.
	ProducerSub *string `json:"producerSub"`
	// CreatedAt has three fractional digits.
	CreatedAt string `json:"createdAt"`
	// ErrorMessage is the error text of the latest DLQ entry; null when none.
	ErrorMessage *string `json:"errorMessage"`
	// RetryCount is the retry count of the latest DLQ entry; null when none.
	RetryCount *int `json:"retryCount"`
	// LeaseExpiresAt is the queue-mode lease's expiry while Status is processing.
	LeaseExpiresAt *string `json:"leaseExpiresAt"`
	// QueueConfig holds the queue's delivery options.
	QueueConfig MessageQueueConfig `json:"queueConfig"`
	// Mode summarises the cursors of the message's partition.
	Mode MessageMode `json:"mode"`
	// ConsumerGroups lists every group with a cursor on the partition, queue mode
	// first; renders [] when empty.
	ConsumerGroups []MessageConsumerGroup `json:"consumerGroups"`
}

// MarshalJSON renders a nil ConsumerGroups as [] and a nil Payload as null.
func (d MessageDetail) MarshalJSON() ([]byte, error) {
	type plain MessageDetail
	if d.ConsumerGroups == nil {
		d.ConsumerGroups = []MessageConsumerGroup{}
	}
	if d.Payload == nil {
		d.Payload = json.RawMessage("null")
	}
	return json.Marshal(plain(d))
}

// MessageQueueConfig is the queue configuration shown with a [MessageDetail].
type MessageQueueConfig struct {
	// LeaseTime is in seconds.
	LeaseTime int `json:"leaseTime"`
	// RetryLimit is the number of retries before dead-lettering.
	RetryLimit int `json:"retryLimit"`
	// RetryDelay is in milliseconds.
	RetryDelay int `json:"retryDelay"`
	// TTL is in seconds.
	TTL int `json:"ttl"`
	// Priority is the queue priority.
	Priority int `json:"priority"`
}

// MessageMode summarises the cursors of one message's partition.
type MessageMode struct {
	// HasQueueMode reports a queue-mode cursor.
	HasQueueMode bool `json:"hasQueueMode"`
	// BusGroupsCount counts the named consumer groups.
	BusGroupsCount int `json:"busGroupsCount"`
	// ConsumedByGroups counts the named groups whose cursor is at or past the message.
	ConsumedByGroups int `json:"consumedByGroups"`
	// Type is one of ModeQueue, ModeBus, ModeHybrid, ModeNone.
	Type string `json:"type"`
}

// MessageConsumerGroup is one consumer group of a [MessageDetail].
type MessageConsumerGroup struct {
	// Name is the group name ([QueueModeGroup] for queue mode).
	Name string `json:"name"`
	// Consumed reports whether the group's cursor is at or past the message.
	Consumed bool `json:"consumed"`
	// LeaseExpiresAt is the group's live lease expiry on the partition; null when none.
	LeaseExpiresAt *string `json:"leaseExpiresAt"`
}

// MessageDeleteResponse is the answer of DELETE
// /api/v1/messages/{partitionId}/{transactionId}, 200 whether or not the message
// existed.
type MessageDeleteResponse struct {
	// Success reports whether a message was deleted.
	Success bool `json:"success"`
	// PartitionID echoes the path.
	PartitionID string `json:"partitionId"`
	// TransactionID echoes the path.
	TransactionID string `json:"transactionId"`
	// Message is MessageDeleted or MessageNotFound.
	Message string `json:"message"`
}

// Texts of [MessageDeleteResponse.Message].
const (
	// MessageDeleted is the text of a successful delete.
	MessageDeleted = "Message deleted successfully"
	// MessageNotFound is the text of a delete that found nothing.
	MessageNotFound = "Message not found"
)

// DLQList is the answer of GET /api/v1/dlq: newest failure first. Total is additive
// (upstream has none) and counts every matching entry across pages.
type DLQList struct {
	// Messages renders [] when empty.
	Messages []DLQMessage `json:"messages"`
	// Total counts the matching entries.
	Total int64 `json:"total"`
	// Pagination echoes the page.
	Pagination Pagination `json:"pagination"`
}

// MarshalJSON renders a nil Messages as [].
func (l DLQList) MarshalJSON() ([]byte, error) {
	type plain DLQList
	if l.Messages == nil {
		l.Messages = []DLQMessage{}
	}
	return json.Marshal(plain(l))
}

// DLQMessage is one dead-letter entry of a [DLQList].
type DLQMessage struct {
	// ID is the dead-lettered message's UUID.
	ID string `json:"id"`
	// TransactionID is the message's idempotency key in its partition.
	TransactionID string `json:"transactionId"`
	// PartitionID is the partition UUID.
	PartitionID string `json:"partitionId"`
	// Queue is the queue name.
	Queue string `json:"queue"`
	// QueueName repeats Queue (additive; queenctl reads either).
	QueueName string `json:"queueName"`
	// Partition is the partition name.
	Partition string `json:"partition"`
	// ConsumerGroup is the group that dead-lettered the message.
	ConsumerGroup string `json:"consumerGroup"`
	// ErrorMessage is the error text given at dead-lettering; null when none.
	ErrorMessage *string `json:"errorMessage"`
	// RetryCount is the retry counter at dead-lettering.
	RetryCount int `json:"retryCount"`
	// Data is the message payload, decrypted when a key is configured (upstream sends
	// it as stored).
	Data json.RawMessage `json:"data"`
	// ProducerSub is the producer's JWT subject; null when none.
	ProducerSub *string `json:"producerSub"`
	// CreatedAt is the message's creation time, three fractional digits.
	CreatedAt string `json:"createdAt"`
	// FailedAt is the dead-lettering time, three fractional digits.
	FailedAt string `json:"failedAt"`
	// DLQID is the dead-letter entry's own id, for POST /api/v1/dlq/{id}/replay
	// (additive; ID stays the message's id, as upstream 0.x sends it).
	DLQID string `json:"dlqId"`
}
