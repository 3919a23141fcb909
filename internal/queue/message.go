package queue

import (
	"encoding/json"
	"time"
)

// Push statuses reported per item.
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
	StatusBuffered  = "buffered"
	StatusFailed    = "failed"
)

// PushItem is one message to append. Payload is raw JSON ("null" when absent).
// TransactionID is filled by the broker when the client sent none; ProducerSub is
// stamped by the server, never taken from the client.
type PushItem struct {
	Queue         string
	Partition     string
	Payload       json.RawMessage
	TransactionID string
	TraceID       string
	ProducerSub   string
	MessageID     string
	Encrypted     bool
}

// PushResult is the outcome of one PushItem, in request order.
type PushResult struct {
	Index         int
	Status        string
	TransactionID string
	MessageID     string
	PartitionID   string
	TraceID       string
	Queue         string
	Partition     string
	Error         string
}

// PopRequest asks for up to Batch messages of one queue. An empty Partition means a
// wildcard pop over every partition, claiming up to Partitions of them. With no Queue,
// Namespace and/or Task select the queues instead (highest priority first), among the
// queues of Scope (Queue and ConsumerGroup are stored names, already scoped).
type PopRequest struct {
	Queue            string
	Namespace        string
	Task             string
	Scope            Scope
	Partition        string
	ConsumerGroup    string
	Batch            int
	Partitions       int
	Wait             bool
	Timeout          time.Duration
	AutoAck          bool
	SubscriptionMode string
	SubscriptionFrom string
}

// Message is one delivered message.
type Message struct {
	ID            string
	TransactionID string
	TraceID       string
	Payload       json.RawMessage
	ProducerSub   string
	CreatedAt     time.Time
	PartitionID   string
	Partition     string
	Queue         string
	RetryCount    int
}

// PopResult is what one pop delivered. LeaseID is empty for autoAck pops and when
// nothing was delivered.
type PopResult struct {
	Queue             string
	ConsumerGroup     string
	LeaseID           string
	PartitionsClaimed int
	Messages          []Message
}
