package queue

import "time"

// GroupCounters are the live counters of a set of partitions (a queue, a namespace,
// a task, everything) from the queue-mode cursor's point of view.
type GroupCounters struct {
	// Key is the queue name, namespace or task the row groups by ("" for all).
	Key        string
	Queues     int64
	Partitions int64
	Counters   Counters
}

// PartitionStatus is one partition with its live counters and queue-mode cursor.
type PartitionStatus struct {
	PartitionInfo
	Queue           string
	QueueID         string
	Namespace       string
	Task            string
	TotalConsumed   int64
	BatchesConsumed int64
	LastActivity    *time.Time
}

// QueueStatus is a queue with its live counters, for the status listings.
type QueueStatus struct {
	ID            string
	Name          string
	Namespace     string
	Task          string
	CreatedAt     time.Time
	Partitions    int64
	Counters      Counters
	TotalConsumed int64
}

// Lag summarises one lag measure over the partitions with pending messages.
type Lag struct {
	Avg    float64
	Median float64
	Min    float64
	Max    float64
}

// Overview is the live cluster summary of /resources/overview.
type Overview struct {
	Queues     int64
	Partitions int64
	Namespaces int64
	Tasks      int64
	Counters   Counters
	// TimeLag is the age in seconds of the oldest pending message, per partition;
	// OffsetLag the number of pending messages, per partition with any.
	TimeLag   Lag
	OffsetLag Lag
}
