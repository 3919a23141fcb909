package queue

import (
	"encoding/json"
	"time"
)

// Limits of the stream routes, refused with a validation error naming the field.
const (
	// MaxStreamStateOps caps the state ops of one cycle.
	MaxStreamStateOps = 10000
	// MaxStreamStateKeys caps the keys one state read may name.
	MaxStreamStateKeys = 10000
	// MaxStreamKeyBytes caps a state key (bytes of UTF-8). Keys are part of the state
	// table's primary key, whose index entries PostgreSQL limits to about 2.7 kB.
	MaxStreamKeyBytes = 1024
	// MaxStreamValueBytes caps a state value (bytes of its JSON text).
	MaxStreamValueBytes = 1 << 20
	// MaxStreamConfigHashLength caps a query's config hash (characters).
	MaxStreamConfigHashLength = 1024
	// MaxStreamStateRows caps the rows one state read answers; a read that matches
	// more is refused (narrow it with keys or a key prefix) rather than truncated.
	MaxStreamStateRows = 100000
	// StreamAckDefaultError is the DLQ error text of a failed cycle that gave none.
	StreamAckDefaultError = "Streaming cycle reported failure"
)

// State op types of a cycle.
const (
	StateOpUpsert = "upsert"
	StateOpDelete = "delete"
)

// StreamRegistration registers or resumes the stream query Name.
type StreamRegistration struct {
	Name        string
	SourceQueue string
	SinkQueue   string // "" means none
	ConfigHash  string
	Reset       bool
}

// StreamRegistered is the outcome of a [StreamRegistration]. Mismatch reports a
// different stored config hash (StoredHash) that was not reset: nothing changed.
type StreamRegistered struct {
	QueryID    string
	Name       string
	ConfigHash string
	Fresh      bool
	Reset      bool
	Mismatch   bool
	StoredHash string
}

// StateOp is one state change of a cycle: an upsert of Key to Value, or a delete.
type StateOp struct {
	Type  string
	Key   string
	Value json.RawMessage
}

// StreamAck is the source ack of a cycle. Count is what total_messages_consumed
// grows by.
type StreamAck struct {
	TransactionID string
	LeaseID       string
	Status        string
	Count         int64
	Error         string
}

// StreamCycle is one atomic step of a stream query on one source partition: state
// ops, sink pushes and the source ack, applied together or not at all.
type StreamCycle struct {
	QueryID       string
	PartitionID   string
	ConsumerGroup string
	StateOps      []StateOp
	Push          []PushItem
	Ack           *StreamAck
	ReleaseLease  bool
}

// StreamAckResult is the outcome of a cycle's ack. DeadLettered counts the messages
// a failed ack moved to the DLQ.
type StreamAckResult struct {
	Success       bool
	Count         int64
	LeaseReleased bool
	DLQ           bool
	DeadLettered  int64
}

// StreamCycleResult is the outcome of a cycle. When Success is false nothing was
// applied and Error says why.
type StreamCycleResult struct {
	Success         bool
	Error           string
	QueryID         string
	PartitionID     string
	SourceQueue     string
	StateOpsApplied int
	Push            []PushResult
	Ack             *StreamAckResult
}

// StateFilter selects state rows of one shard. Empty Keys means every key; an empty
// Prefix means no prefix filter; RipeAtOrBefore, when set, keeps rows whose
// value.windowEnd is a number at most it (epoch milliseconds).
type StateFilter struct {
	QueryID        string
	PartitionID    string
	Keys           []string
	Prefix         string
	RipeAtOrBefore *float64
}

// StateRow is one stored state entry.
type StateRow struct {
	Key       string
	Value     json.RawMessage
	UpdatedAt time.Time
}

// StreamQuery describes a registered query for operators, with its state footprint.
type StreamQuery struct {
	ID          string
	Name        string
	SourceQueue string
	SinkQueue   string
	ConfigHash  string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Shards counts the source partitions with state or cycles; StateRows the state
	// rows; Cycles the cycles committed since the query was registered or last reset.
	Shards      int64
	StateRows   int64
	Cycles      int64
	LastCycleAt *time.Time
}

// StreamShard is one (query, source partition) pair of a query. Partition and
// Queue are empty when the partition no longer exists (its state outlives it).
type StreamShard struct {
	PartitionID string
	Partition   string
	Queue       string
	StateRows   int64
	Cycles      int64
	LastCycleAt *time.Time
	LastStateAt *time.Time
	StateBytes  int64
}

// StreamQueryDetail is one query with one page of its shards (busiest first).
type StreamQueryDetail struct {
	Query  StreamQuery
	Shards []StreamShard
	Page   Page
}

// StreamRemoval reports what a reset or delete of a query removed.
type StreamRemoval struct {
	QueryID   string
	Name      string
	StateRows int64
	Shards    int64
}
