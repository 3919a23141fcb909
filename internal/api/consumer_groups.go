package api

import "encoding/json"

// ConsumerGroupSummary is one element of the top-level array answered by GET
// /api/v1/consumer-groups: one consumer group (queue mode included) on one queue.
type ConsumerGroupSummary struct {
	// Name is the consumer group ("__QUEUE_MODE__" for queue mode).
	Name string `json:"name"`
	// Topics is [QueueName].
	Topics []string `json:"topics"`
	// QueueName is the queue.
	QueueName string `json:"queueName"`
	// Members counts the group's partition cursors on the queue, not its clients.
	Members int `json:"members"`
	// PartitionsWithLag counts the partitions with unconsumed messages.
	PartitionsWithLag int `json:"partitionsWithLag"`
	// TotalLag is the number of unconsumed messages, leased ones included, over every
	// partition of the queue (upstream always sends null).
	TotalLag int64 `json:"totalLag"`
	// InFlight counts the leased messages not yet acknowledged. Queen only.
	InFlight int64 `json:"inFlight"`
	// MaxTimeLag is the age in seconds of the oldest unconsumed message.
	MaxTimeLag int64 `json:"maxTimeLag"`
	// State is "Lagging", "Stable" or "Dead".
	State string `json:"state"`
	// SubscriptionMode is "new" or "timestamp"; null without a subscription.
	SubscriptionMode *string `json:"subscriptionMode"`
	// SubscriptionTimestamp is where partitions without a cursor start; null without
	// a subscription.
	SubscriptionTimestamp *string `json:"subscriptionTimestamp"`
	// SubscriptionCreatedAt is when the group subscribed; null without a subscription.
	SubscriptionCreatedAt *string `json:"subscriptionCreatedAt"`
	// Conflation is the group's stored conflation policy (last-value delivery) on the
	// queue; false when it has none.
	Conflation bool `json:"conflation"`
}

// LaggingPartition is one element of the top-level array answered by GET
// /api/v1/consumer-groups/lagging. Its keys are snake_case, as upstream's.
type LaggingPartition struct {
	ConsumerGroup string `json:"consumer_group"`
	QueueName     string `json:"queue_name"`
	PartitionName string `json:"partition_name"`
	PartitionID   string `json:"partition_id"`
	// WorkerID is the lease id on the cursor; null when none.
	WorkerID *string `json:"worker_id"`
	// OffsetLag is the number of unconsumed messages.
	OffsetLag int64 `json:"offset_lag"`
	// TimeLagSeconds is the age in seconds of the oldest unconsumed message.
	TimeLagSeconds int64 `json:"time_lag_seconds"`
	// LagHours is TimeLagSeconds in hours, rounded to two decimals.
	LagHours float64 `json:"lag_hours"`
	// OldestUnconsumedAt is the creation time of the oldest unconsumed message.
	OldestUnconsumedAt string `json:"oldest_unconsumed_at"`
	// LastConsumedAt is the last time the group consumed from the partition; null
	// when never.
	LastConsumedAt *string `json:"last_consumed_at"`
}

// ConsumerGroupDetail is the answer of GET /api/v1/consumer-groups/{group}: the
// group's cursors keyed by queue name.
type ConsumerGroupDetail map[string]ConsumerGroupQueue

// ConsumerGroupQueue is one queue of a [ConsumerGroupDetail].
type ConsumerGroupQueue struct {
	// Partitions renders [] when empty (a subscription without a cursor yet).
	Partitions []ConsumerGroupPartition `json:"partitions"`
	// Conflation is the group's stored conflation policy on the queue, as in
	// [ConsumerGroupSummary].
	Conflation bool `json:"conflation"`
}

// MarshalJSON renders a nil Partitions as [].
func (q ConsumerGroupQueue) MarshalJSON() ([]byte, error) {
	type plain ConsumerGroupQueue
	if q.Partitions == nil {
		q.Partitions = []ConsumerGroupPartition{}
	}
	return json.Marshal(plain(q))
}

// ConsumerGroupPartition is one partition cursor of a consumer group.
type ConsumerGroupPartition struct {
	// Partition is the partition name.
	Partition string `json:"partition"`
	// WorkerID is the lease id stored on the cursor; null when none.
	WorkerID *string `json:"workerId"`
	// LastConsumedAt is null when the group never consumed from the partition.
	LastConsumedAt *string `json:"lastConsumedAt"`
	// TotalConsumed counts the messages the group acknowledged on the partition.
	TotalConsumed int64 `json:"totalConsumed"`
	// OffsetLag is the exact number of unconsumed messages.
	OffsetLag int64 `json:"offsetLag"`
	// TimeLagSeconds is the age in seconds of the oldest unconsumed message (0 when
	// none).
	TimeLagSeconds int64 `json:"timeLagSeconds"`
	// LeaseActive reports a lease that has not expired.
	LeaseActive bool `json:"leaseActive"`
}

// ConsumerGroupDeleteResponse is the answer of DELETE /api/v1/consumer-groups/{group}.
type ConsumerGroupDeleteResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	// DeletedPartitions counts the cursors deleted.
	DeletedPartitions int `json:"deletedPartitions"`
	// MetadataDeleted echoes deleteMetadata: whether subscriptions were deleted too.
	MetadataDeleted bool `json:"metadataDeleted"`
}

// ConsumerGroupQueueDeleteResponse is the answer of DELETE
// /api/v1/consumer-groups/{group}/queues/{queue}.
type ConsumerGroupQueueDeleteResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	QueueName     string `json:"queueName"`
	// DeletedPartitions counts the cursors deleted.
	DeletedPartitions int `json:"deletedPartitions"`
	// MetadataDeleted echoes deleteMetadata.
	MetadataDeleted bool `json:"metadataDeleted"`
}

// SubscriptionUpdateRequest is the body of POST
// /api/v1/consumer-groups/{group}/subscription.
type SubscriptionUpdateRequest struct {
	// SubscriptionTimestamp is an RFC 3339 timestamp.
	SubscriptionTimestamp string `json:"subscriptionTimestamp"`
}

// SubscriptionUpdateResponse is the answer of POST
// /api/v1/consumer-groups/{group}/subscription.
type SubscriptionUpdateResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	// NewTimestamp is the stored timestamp (three fractional digits).
	NewTimestamp string `json:"newTimestamp"`
	// RowsUpdated counts the subscriptions (one per queue, or per partition for
	// partition-specific subscriptions) that were moved.
	RowsUpdated int `json:"rowsUpdated"`
}

// SeekRequest is the body of POST /api/v1/consumer-groups/{group}/queues/{queue}/seek:
// ToEnd true, or a Timestamp (RFC 3339).
type SeekRequest struct {
	ToEnd     bool   `json:"toEnd,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
}

// SeekResponse is the answer of POST /api/v1/consumer-groups/{group}/queues/{queue}/seek.
type SeekResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	QueueName     string `json:"queueName"`
	SeekToEnd     bool   `json:"seekToEnd"`
	// TargetTimestamp is the seek timestamp; null for a seek to the end.
	TargetTimestamp *string `json:"targetTimestamp"`
	// PartitionsUpdated counts the cursors written.
	PartitionsUpdated int `json:"partitionsUpdated"`
}

// PartitionSeekResponse is the answer of POST
// /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek.
type PartitionSeekResponse struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	QueueName     string `json:"queueName"`
	PartitionName string `json:"partitionName"`
	// Updated is false only for an empty partition the group never consumed.
	Updated bool `json:"updated"`
	// CursorMovedTo is the creation time of the message the cursor now points at;
	// null when the cursor is before everything.
	CursorMovedTo *string `json:"cursorMovedTo"`
}
