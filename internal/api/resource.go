package api

import "encoding/json"

// QueueList is the answer of GET /api/v1/resources/queues (newest queue first).
type QueueList struct {
	// Queues renders [] when empty.
	Queues []QueueSummary `json:"queues"`
}

// MarshalJSON renders a nil Queues as [].
func (l QueueList) MarshalJSON() ([]byte, error) {
	type plain QueueList
	if l.Queues == nil {
		l.Queues = []QueueSummary{}
	}
	return json.Marshal(plain(l))
}

// QueueSummary is one queue of a [QueueList].
type QueueSummary struct {
	// ID is the queue's UUID.
	ID string `json:"id"`
	// Name is the queue name.
	Name string `json:"name"`
	// Namespace is "" when none.
	Namespace string `json:"namespace"`
	// Task is "" when none.
	Task string `json:"task"`
	// CreatedAt has three fractional digits ([FormatMillis]).
	CreatedAt string `json:"createdAt"`
	// Partitions is the number of partitions.
	Partitions int `json:"partitions"`
	// Messages counts the queue's messages.
	Messages QueueMessageCounts `json:"messages"`
}

// QueueMessageCounts is the message summary of a [QueueSummary].
type QueueMessageCounts struct {
	// Total counts all stored messages.
	Total int `json:"total"`
	// Pending counts messages not yet consumed.
	Pending int `json:"pending"`
	// Processing counts messages under a live lease.
	Processing int `json:"processing"`
	// Completed counts messages behind the queue-mode cursor (queen adds it).
	Completed int `json:"completed"`
}

// QueueDetail is the answer of GET /api/v1/resources/queues/{queue}. An unknown queue is
// a 404 with {"error":"Queue not found"}.
type QueueDetail struct {
	// ID is the queue's UUID.
	ID string `json:"id"`
	// Name is the queue name.
	Name string `json:"name"`
	// Namespace is "" when none.
	Namespace string `json:"namespace"`
	// Task is "" when none.
	Task string `json:"task"`
	// CreatedAt has three fractional digits.
	CreatedAt string `json:"createdAt"`
	// Partitions renders [] when empty.
	Partitions []PartitionDetail `json:"partitions"`
	// Totals sums the partition stats.
	Totals Counters `json:"totals"`
	// Options is the queue's stored option set, as in the configure echo. Queen only:
	// upstream's answer has no options (nil when talking to it).
	Options *QueueOptionsEcho `json:"options,omitempty"`
	// EnforcedOptions says whether queen applies the stored ttl, retryDelay and
	// maxSize. Queen only, nil from upstream.
	EnforcedOptions *EnforcedOptions `json:"enforcedOptions,omitempty"`
	// ConsumerGroups is how far each consumer of the queue is behind now, by group
	// (omitted when nobody consumes it). Queen only, nil from upstream; the partition
	// stats and totals above are queue mode's, as upstream's.
	ConsumerGroups []ConsumerGroupLag `json:"consumerGroups,omitempty"`
}

// EnforcedOptions reports, for the options upstream stores but never applies to live
// pushes and pops, whether queen applies the stored value. Queen applies them only when they
// were set through its own configure (and not changed since by another broker);
// otherwise they act as 0. A stored 0 is reported true: there is nothing to apply.
type EnforcedOptions struct {
	// TTL is whether older messages are withheld from pops.
	TTL bool `json:"ttl"`
	// RetryDelay is whether a failed batch waits before redelivery.
	RetryDelay bool `json:"retryDelay"`
	// MaxSize is whether pushes beyond the queue's capacity are refused.
	MaxSize bool `json:"maxSize"`
}

// MarshalJSON renders a nil Partitions as [].
func (d QueueDetail) MarshalJSON() ([]byte, error) {
	type plain QueueDetail
	d.Partitions = nonNil(d.Partitions)
	return json.Marshal(plain(d))
}

// PartitionDetail is one partition of a [QueueDetail].
type PartitionDetail struct {
	// ID is the partition's UUID.
	ID string `json:"id"`
	// Name is the partition name.
	Name string `json:"name"`
	// CreatedAt has three fractional digits.
	CreatedAt string `json:"createdAt"`
	// Stats counts the partition's messages.
	Stats Counters `json:"stats"`
	// OldestMessage is the creation time of the oldest message; null when empty.
	OldestMessage *string `json:"oldestMessage"`
	// NewestMessage is the creation time of the newest message; null when empty.
	NewestMessage *string `json:"newestMessage"`
}

// Counters are message counts by state.
type Counters struct {
	// Total counts all messages.
	Total int `json:"total"`
	// Pending counts messages not yet consumed.
	Pending int `json:"pending"`
	// Processing counts messages under a live lease.
	Processing int `json:"processing"`
	// Completed counts consumed messages.
	Completed int `json:"completed"`
	// Failed counts failed messages.
	Failed int `json:"failed"`
	// DeadLetter counts messages in the DLQ.
	DeadLetter int `json:"deadLetter"`
}

// QueueDeleteResponse is the answer of DELETE /api/v1/resources/queues/{queue}, 200
// whether or not the queue existed.
type QueueDeleteResponse struct {
	// Deleted is always true.
	Deleted bool `json:"deleted"`
	// Queue echoes the name.
	Queue string `json:"queue"`
	// Existed reports whether there was a queue to delete.
	Existed bool `json:"existed"`
}
