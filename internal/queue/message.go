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
	// Traceparent and Tracestate are the W3C trace context the message is stored
	// under ("" when none), returned with it on pop.
	Traceparent, Tracestate string
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
	// LeaseSeconds > 0 replaces the queue's leaseTime for every partition this pop
	// claims; 0 keeps each queue's own.
	LeaseSeconds int
	// Autopilot is the pop's autopilot parameter: the client left the knobs it did
	// not set (Batch 0, Partitions 0) to the broker.
	Autopilot bool
	// AutopilotBatch and AutopilotPartitions are set by the broker's normalisation
	// when its autopilot controller chose that knob.
	AutopilotBatch, AutopilotPartitions bool
	// Arrived is when the pop arrived (set by the broker; zero is the claim's own
	// time). A subscription "new" or "now" that the pop makes starts then, even when
	// the claim runs later, on a long-poll's wake-up.
	Arrived time.Time
	// PartitionsSet tells that the caller set Partitions (a conflating pop claims its
	// batch's worth of partitions otherwise).
	PartitionsSet bool
	// Conflation is the pop's conflation parameter, nil when absent. The consumer
	// group's stored policy decides the delivery; the first pop of a group on a queue
	// stores this (absent: no conflation).
	Conflation *bool
}

// MaxConflatePartitions bounds the partitions a pop of a conflating group claims, one
// message each.
const MaxConflatePartitions = 64

// Claim is what one claim of a pop found: its messages, and what it applied of the
// consumer group's conflation policy.
type Claim struct {
	Messages []Message
	// Conflation: the group's policy is conflation, and the messages are the newest of
	// their partitions (or the pop asked for conflation of a queue that does not
	// exist yet).
	Conflation bool
	// ConflationConflict: the pop asked for conflation otherwise than the group's
	// stored policy, which was applied.
	ConflationConflict bool
}

// PopAutopilot is the autopilot controller's answer on a pop whose knobs it chose:
// the claim width and batch it used and the advised sleep before the next empty
// non-waiting poll (0 = none).
type PopAutopilot struct {
	Partitions int
	Batch      int
	WaitMs     int
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
	// Traceparent and Tracestate are the W3C trace context the message was pushed
	// under ("" when none).
	Traceparent, Tracestate string
}

// PopResult is what one pop delivered. LeaseID is empty for autoAck pops and when
// nothing was delivered.
type PopResult struct {
	Queue             string
	ConsumerGroup     string
	LeaseID           string
	PartitionsClaimed int
	Messages          []Message
	// Autopilot is set when the broker's autopilot controller chose a knob.
	Autopilot *PopAutopilot
	// Conflation and ConflationConflict echo the consumer group's conflation policy
	// (see Claim); an answer with either is a 200 with a body even when empty.
	Conflation, ConflationConflict bool
	// Paused is set when pops are paused (pop maintenance): the answer is empty.
	Paused bool
}
