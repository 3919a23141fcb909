package api

// QueueDepth is the answer of GET /api/v1/resources/queues/{queue}/depth: the
// queue's backlog against one consumer group's cursor, or the lowest cursor of any
// group when Group is nil.
type QueueDepth struct {
	// Queue is the queue name.
	Queue string `json:"queue"`
	// Group is the group asked for, null without one.
	Group *string `json:"group"`
	// Pending counts the messages after the cursor.
	Pending int64 `json:"pending"`
	// Processing counts the pending messages under a live lease.
	Processing int64 `json:"processing"`
	// Ready is Pending − Processing.
	Ready int64 `json:"ready"`
	// PartitionsPending counts the partitions with pending messages.
	PartitionsPending int `json:"partitionsPending"`
	// PartitionsReady counts the partitions with ready messages.
	PartitionsReady int `json:"partitionsReady"`
	// Conflation is the group's stored conflation policy (last-value delivery); false
	// without a group.
	Conflation bool `json:"conflation"`
	// EffectivePending is Pending (PartitionsPending for a conflating group).
	EffectivePending int64 `json:"effectivePending"`
	// EffectiveReady is Ready (PartitionsReady for a conflating group).
	EffectiveReady int64 `json:"effectiveReady"`
	// Partitions is the backlog per partition, by name.
	Partitions []PartitionDepth `json:"partitions"`
}

// PartitionDepth is one partition of a [QueueDepth].
type PartitionDepth struct {
	// Partition is the partition name.
	Partition string `json:"partition"`
	// Pending counts the messages after the cursor.
	Pending int64 `json:"pending"`
	// Processing counts those under a live lease.
	Processing int64 `json:"processing"`
	// Ready is Pending − Processing.
	Ready int64 `json:"ready"`
}
