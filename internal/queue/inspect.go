package queue

import (
	"encoding/json"
	"time"
)

// Message states reported by the message admin APIs.
const (
	MessagePending    = "pending"
	MessageProcessing = "processing"
	MessageCompleted  = "completed"
	MessageDeadLetter = "dead_letter"
)

// Consumption modes of a partition, or of the partitions a listing covers: queue mode
// only, named (bus) groups only, both, or nobody has consumed yet.
const (
	ModeQueue  = "queue"
	ModeBus    = "bus"
	ModeHybrid = "hybrid"
	ModeNone   = "none"
)

// ConsumptionMode names the mode of partitions with a queue-mode cursor (or not) and
// busGroups named-group cursors.
func ConsumptionMode(hasQueueMode bool, busGroups int) string {
	switch {
	case hasQueueMode && busGroups > 0:
		return ModeHybrid
	case hasQueueMode:
		return ModeQueue
	case busGroups > 0:
		return ModeBus
	}
	return ModeNone
}

// IsMessageStatus reports whether s is one of the Message* states.
func IsMessageStatus(s string) bool {
	switch s {
	case MessagePending, MessageProcessing, MessageCompleted, MessageDeadLetter:
		return true
	}
	return false
}

// Page selects a slice of an ordered listing.
type Page struct {
	Limit  int
	Offset int
}

// MessageFilter selects messages for the admin listing: exact-match filters (empty =
// any), the creation window [From, To) and one page, newest first.
type MessageFilter struct {
	// Scope limits the listing to its queues; Queue is a stored name, already scoped.
	Scope     Scope
	Queue     string
	Partition string
	Namespace string
	Task      string
	Status    string
	From      time.Time
	To        time.Time
	Page      Page
}

// MessageState is a message's computed status with the cursor
// facts it was derived from.
type MessageState struct {
	// Status is the overall state (one of the Message* constants).
	Status string
	// QueueStatus is the state a queue-mode consumer sees: dead_letter when queue mode
	// dead-lettered it, else from the queue-mode cursor and lease.
	QueueStatus string
	// ConsumedBy counts the consumer groups (queue mode included) whose cursor is at or
	// past the message; TotalGroups counts the groups with a cursor on the partition.
	ConsumedBy  int
	TotalGroups int
	// HasQueueMode reports a queue-mode cursor on the partition; BusGroups counts its
	// named-group cursors and BusConsumed those at or past the message.
	HasQueueMode bool
	BusGroups    int
	BusConsumed  int
	// LeaseExpiresAt is the live queue-mode lease's expiry when Status is processing.
	LeaseExpiresAt *time.Time
}

// MessageInfo describes one stored message without its payload. TraceID and
// ProducerSub are "" when unset.
type MessageInfo struct {
	ID            string
	TransactionID string
	PartitionID   string
	Partition     string
	Queue         string
	Namespace     string
	Task          string
	TraceID       string
	ProducerSub   string
	Priority      int
	CreatedAt     time.Time
	State         MessageState
}

// MessageList is one page of the admin message listing.
type MessageList struct {
	Messages []MessageInfo
	// Total counts every message matching the filter, across pages.
	Total int64
	// HasQueueMode and BusGroups summarise the cursors of the partitions the filter
	// covers (BusGroups counts distinct named groups).
	HasQueueMode bool
	BusGroups    int
}

// MessageDetail is one message with its payload, queue settings, latest DLQ entry
// and per-group consumption.
type MessageDetail struct {
	MessageInfo
	Payload     json.RawMessage
	IsEncrypted bool
	// DLQError and DLQRetryCount come from the message's latest DLQ entry; nil when it
	// has none (DLQError is also nil when that entry has no error text).
	DLQError      *string
	DLQRetryCount *int
	LeaseTime     int
	RetryLimit    int
	RetryDelay    int
	TTL           int
	Groups        []GroupConsumption
}

// GroupConsumption says whether one consumer group's cursor is at or past a message;
// LeaseExpiresAt is set while the group holds a live lease on the partition.
type GroupConsumption struct {
	Name           string
	Consumed       bool
	LeaseExpiresAt *time.Time
}

// DLQFilter selects dead-letter entries: exact-match filters (empty = any), failure
// time bounds (zero = unbounded, both inclusive) and one page, newest failure first.
type DLQFilter struct {
	// Scope limits the entries to its queues; Queue and ConsumerGroup are stored
	// names, already scoped.
	Scope         Scope
	Queue         string
	ConsumerGroup string
	Partition     string
	From          time.Time
	To            time.Time
	Page          Page
}

// DLQEntry is one dead-letter row with its message. ProducerSub is "" when unset.
type DLQEntry struct {
	// DLQID is the dead-letter row's own id (what a replay names).
	DLQID         string
	MessageID     string
	TransactionID string
	PartitionID   string
	Queue         string
	Partition     string
	ConsumerGroup string
	ErrorMessage  *string
	RetryCount    int
	Payload       json.RawMessage
	ProducerSub   string
	CreatedAt     time.Time
	FailedAt      time.Time
}

// TraceEvent is a trace to record on the message (PartitionID, TransactionID).
type TraceEvent struct {
	PartitionID   string
	TransactionID string
	ConsumerGroup string
	EventType     string
	Data          json.RawMessage
	Names         []string
}

// Trace is one recorded trace event. Queue, Partition and MessagePayload are filled
// by the by-name listing only.
type Trace struct {
	ID             string
	PartitionID    string
	TransactionID  string
	ConsumerGroup  string
	EventType      string
	WorkerID       string
	Data           json.RawMessage
	CreatedAt      time.Time
	Names          []string
	Queue          string
	Partition      string
	MessagePayload json.RawMessage
}

// TraceNameStat summarises one trace name.
type TraceNameStat struct {
	Name     string
	Traces   int64
	Messages int64
	LastSeen time.Time
}
