package queue

import "time"

// Counters are message counts from the queue-mode cursor's point of view, as the
// queue routes report them: pending and processing are after the cursor (processing
// = inside a live lease), completed are behind it, dead-lettered are in the DLQ.
type Counters struct {
	Total      int64
	Pending    int64
	Processing int64
	Completed  int64
	Failed     int64
	DeadLetter int64
}

// Add accumulates o into c.
func (c *Counters) Add(o Counters) {
	c.Total += o.Total
	c.Pending += o.Pending
	c.Processing += o.Processing
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.DeadLetter += o.DeadLetter
}

// PartitionInfo describes one partition with its counters.
type PartitionInfo struct {
	ID            string
	Name          string
	CreatedAt     time.Time
	Counters      Counters
	OldestMessage *time.Time
	NewestMessage *time.Time
}

// QueueInfo describes one queue for the resource views.
type QueueInfo struct {
	Queue
	// Enforced says which of the stored ttl and retryDelay queen applies.
	Enforced       Enforced
	CreatedAt      time.Time
	PartitionCount int
	Partitions     []PartitionInfo
	Totals         Counters
}

// PartitionDepth is one partition's backlog for the depth view: the messages after
// the cursor, and how many a live lease holds (may exceed Pending; callers cap it).
type PartitionDepth struct {
	Partition string
	Pending   int64
	InFlight  int64
}
