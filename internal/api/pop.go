package api

import (
	"encoding/json"
	"time"
)

const (
	// DefaultPartition is the partition used when a push names none, and the one
	// configure creates.
	DefaultPartition = "Default"
	// QueueModeGroup is the implicit shared consumer group ("queue mode"), used when a
	// pop or ack names no consumer group. Any other name is a bus group with its own
	// cursor per partition.
	QueueModeGroup = "__QUEUE_MODE__"
)

// Subscription modes and origins a pop may send. Only [SubscriptionModeNew]
// and [SubscriptionFromNow] change anything; the other values mean "from the beginning".
const (
	// SubscriptionModeNew makes a brand-new named group skip existing history.
	SubscriptionModeNew = "new"
	// SubscriptionModeAll reads the history (the default).
	SubscriptionModeAll = "all"
	// SubscriptionFromNow is the subscriptionFrom value equivalent to SubscriptionModeNew.
	SubscriptionFromNow = "now"
)

// Timestamp layouts used on the wire (always UTC with a literal Z).
const (
	// TimeLayoutMillis is the layout of most timestamps: three fractional digits.
	TimeLayoutMillis = "2006-01-02T15:04:05.000Z"
	// TimeLayoutMicros is the layout of pop message createdAt: six fractional digits.
	TimeLayoutMicros = "2006-01-02T15:04:05.000000Z"
)

// FormatMillis formats t in UTC with three fractional digits, e.g.
// 2026-04-26T11:05:28.267Z, the form of most timestamps (lease expiresAt included).
func FormatMillis(t time.Time) string { return t.UTC().Format(TimeLayoutMillis) }

// FormatMicros formats t in UTC with six fractional digits, e.g.
// 2026-04-26T10:59:28.267966Z, the form of pop message createdAt.
func FormatMicros(t time.Time) string { return t.UTC().Format(TimeLayoutMicros) }

// PopResponse is the 200 answer of the pop routes (GET /api/v1/pop/queue/{queue},
// .../partition/{partition} and GET /api/v1/pop). An empty pop is answered 204 with no
// body instead, unless it echoes conflation (Conflation or ConflationConflict set): then
// it is this answer with empty Messages. Upstream also sends 200 with an empty Messages
// list (sometimes with Success false and Error set), which clients read as "no
// messages" too.
type PopResponse struct {
	// Success is true for a normal answer.
	Success bool `json:"success"`
	// Error is set by upstream's empty-pop variants (no_available_partition, ...) and DB
	// failures; never set together with messages.
	Error string `json:"error,omitempty"`
	// Queue is the queue the messages come from.
	Queue string `json:"queue"`
	// Partition is the name of the first claimed partition.
	Partition string `json:"partition"`
	// PartitionID is the UUID of the first claimed partition; use each message's own
	// PartitionID, which is authoritative in multi-partition pops.
	PartitionID string `json:"partitionId"`
	// LeaseID is shared by all claimed partitions; "" with autoAck.
	LeaseID string `json:"leaseId"`
	// ConsumerGroup echoes the group ([QueueModeGroup] when none was given).
	ConsumerGroup string `json:"consumerGroup"`
	// PartitionsClaimed is the number of partitions this pop claimed.
	PartitionsClaimed int `json:"partitionsClaimed"`
	// Messages are ordered by (createdAt, id) within a partition, partitions in claim
	// order. Renders [] when empty.
	Messages []Message `json:"messages"`
	// Autopilot is present when the broker's autopilot controller chose the pop's
	// batch and/or partitions (a pop with autopilot=true that left them out).
	Autopilot *PopAutopilot `json:"autopilot,omitempty"`
	// Paused is set on the answer of a conflating pop while pops are paused.
	Paused bool `json:"paused,omitempty"`
	// Conflation is set when the consumer group's conflation policy (last-value
	// delivery) was applied: each message is the newest of its partition, and its ack
	// moves the cursor past the ones before it.
	Conflation bool `json:"conflation,omitempty"`
	// ConflationConflict is set when the pop asked for conflation otherwise than the
	// group's stored policy, which was applied all the same.
	ConflationConflict bool `json:"conflationConflict,omitempty"`
}

// PopAutopilot is the knobs the autopilot controller used for a pop.
type PopAutopilot struct {
	// Partitions is the claim width W (1…64).
	Partitions int `json:"partitions"`
	// Batch is the batch size used.
	Batch int `json:"batch"`
	// WaitMs is the advised sleep, in milliseconds, before the next poll when that
	// poll is empty and does not wait; 0 advises none.
	WaitMs int `json:"waitMs"`
}

// MarshalJSON renders a nil Messages as [] (clients iterate it).
func (p PopResponse) MarshalJSON() ([]byte, error) {
	type plain PopResponse
	if p.Messages == nil {
		p.Messages = []Message{}
	}
	return json.Marshal(plain(p))
}

// Message is one delivered message of a [PopResponse]. The ack key is
// (PartitionID, TransactionID).
type Message struct {
	// ID is the message's UUID.
	ID string `json:"id"`
	// TransactionID is the client or server assigned transaction id.
	TransactionID string `json:"transactionId"`
	// TraceID renders null when the message has none.
	TraceID *string `json:"traceId"`
	// Data is the payload, decrypted; any JSON value.
	Data json.RawMessage `json:"data"`
	// ProducerSub is the JWT subject of the producer; null when unauthenticated.
	ProducerSub *string `json:"producerSub"`
	// CreatedAt has six fractional digits, UTC ([FormatMicros]).
	CreatedAt string `json:"createdAt"`
	// PartitionID is the message's partition UUID.
	PartitionID string `json:"partitionId"`
	// Partition is the partition name.
	Partition string `json:"partition"`
	// LeaseID is the pop's lease id; "" with autoAck.
	LeaseID string `json:"leaseId"`
	// ConsumerGroup echoes the pop's group.
	ConsumerGroup string `json:"consumerGroup"`
	// Queue is the queue name (additive; absent upstream).
	Queue string `json:"queue"`
	// RetryCount is the number of failed deliveries so far (additive; absent upstream).
	RetryCount int `json:"retryCount"`
	// Traceparent and Tracestate are the W3C trace context the message was pushed
	// under (docs/tracing.md); absent when it had none (additive; absent upstream).
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}
