package store

import (
	"encoding/json"
	"time"
)

// The rows of the analytics tables (queue_activity, worker_activity,
// queue_parked_activity, system_activity, retention_history) as this package writes
// and reads them. They are sums over buckets, not answers: internal/analytics adds
// them up per view and renders them as the api wire types.

// ActivityCounts are operation counters over some span (a minute, a bucket of the
// dashboard series, a process lifetime), per queue or per broker process. Every field
// adds up across spans and processes except LagMaxMs, which is a maximum.
type ActivityCounts struct {
	// PushRequests counts /push requests (per queue: requests with an item for it).
	PushRequests int64
	// PushMessages counts items stored as new messages (duplicates excluded).
	PushMessages int64
	// PopRequests counts pop requests; PopEmpty those that delivered nothing.
	PopRequests int64
	PopEmpty    int64
	// PopMessages counts delivered messages.
	PopMessages int64
	// AckRequests counts ack and ack/batch requests; AckMessages their items.
	AckRequests int64
	AckMessages int64
	// AckSuccess counts acks that completed their message; AckFailed counts every
	// other ack item: negative acks (failed, dlq, retry) and refused ones.
	AckSuccess int64
	AckFailed  int64
	// AutoAcked counts messages delivered by autoAck pops (consumed without an ack).
	AutoAcked int64
	// Transactions counts /transaction requests.
	Transactions int64
	// DLQ counts messages moved to the dead-letter queue.
	DLQ int64
	// DBErrors counts requests that failed in the database.
	DBErrors int64
	// LagCount, LagSumMs and LagMaxMs describe pop lag: delivery time minus the
	// message's createdAt, one sample per delivered message.
	LagCount int64
	LagSumMs int64
	LagMaxMs int64
}

// Add accumulates o into c.
func (c *ActivityCounts) Add(o ActivityCounts) {
	c.PushRequests += o.PushRequests
	c.PushMessages += o.PushMessages
	c.PopRequests += o.PopRequests
	c.PopEmpty += o.PopEmpty
	c.PopMessages += o.PopMessages
	c.AckRequests += o.AckRequests
	c.AckMessages += o.AckMessages
	c.AckSuccess += o.AckSuccess
	c.AckFailed += o.AckFailed
	c.AutoAcked += o.AutoAcked
	c.Transactions += o.Transactions
	c.DLQ += o.DLQ
	c.DBErrors += o.DBErrors
	c.LagCount += o.LagCount
	c.LagSumMs += o.LagSumMs
	c.LagMaxMs = max(c.LagMaxMs, o.LagMaxMs)
}

// IsZero reports whether nothing was counted.
func (c ActivityCounts) IsZero() bool { return c == ActivityCounts{} }

// AvgLagMs is the mean pop lag in milliseconds (0 without samples).
func (c ActivityCounts) AvgLagMs() float64 { return ratio(float64(c.LagSumMs), c.LagCount) }

// Processed counts messages whose processing finished: completed acks plus messages
// delivered by autoAck pops.
func (c ActivityCounts) Processed() int64 { return c.AckSuccess + c.AutoAcked }

// Requests counts every request of the span.
func (c ActivityCounts) Requests() int64 {
	return c.PushRequests + c.PopRequests + c.AckRequests + c.Transactions
}

// WorkerGauges are the sampled process gauges of worker_activity, stored as sums over
// Samples so that they add up across flushes and buckets.
type WorkerGauges struct {
	Samples int64
	// EventLoopLag is how late the 1 Hz sampler ran (Go scheduling delay), in ms.
	EventLoopLagSumMs float64
	EventLoopLagMaxMs float64
	// FreeSlots are database connections this process could still take (pool size
	// minus connections in use); FreeSlotsMin is -1 when no sample exists.
	FreeSlotsSum int64
	FreeSlotsMin int64
	// DBConnections is the pool size.
	DBConnections int64
	// Parked are parked long-polls.
	ParkedSum int64
	ParkedMax int64
}

// Add accumulates o into g.
func (g *WorkerGauges) Add(o WorkerGauges) {
	if o.Samples == 0 {
		return
	}
	if g.Samples == 0 {
		g.FreeSlotsMin = o.FreeSlotsMin
	} else {
		g.FreeSlotsMin = min(g.FreeSlotsMin, o.FreeSlotsMin)
	}
	g.Samples += o.Samples
	g.EventLoopLagSumMs += o.EventLoopLagSumMs
	g.EventLoopLagMaxMs = max(g.EventLoopLagMaxMs, o.EventLoopLagMaxMs)
	g.FreeSlotsSum += o.FreeSlotsSum
	g.DBConnections = max(g.DBConnections, o.DBConnections)
	g.ParkedSum += o.ParkedSum
	g.ParkedMax = max(g.ParkedMax, o.ParkedMax)
}

// AvgEventLoopLagMs is the mean sampler delay (0 without samples).
func (g WorkerGauges) AvgEventLoopLagMs() float64 { return ratio(g.EventLoopLagSumMs, g.Samples) }

// AvgFreeSlots is the mean number of free connection slots (0 without samples).
func (g WorkerGauges) AvgFreeSlots() float64 { return ratio(float64(g.FreeSlotsSum), g.Samples) }

// AvgParked is the mean number of parked long-polls (0 without samples).
func (g WorkerGauges) AvgParked() float64 { return ratio(float64(g.ParkedSum), g.Samples) }

func ratio(sum float64, n int64) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// QueueActivity is one row of queue_activity: a queue's activity in one bucket,
// summed over the cluster.
type QueueActivity struct {
	Bucket time.Time
	Queue  string
	ActivityCounts
	// Parked is the average number of parked long-polls over the bucket.
	Parked float64
	// PartitionsCreated and PartitionsDeleted count partition changes in the bucket
	// (deletions by the partition-cleanup job); PartitionCount is the queue's
	// partition count at the bucket's last flush.
	PartitionsCreated int64
	PartitionsDeleted int64
	PartitionCount    int64
}

// WorkerActivity is one row of worker_activity: one broker process in one bucket.
type WorkerActivity struct {
	Bucket   time.Time
	Hostname string
	WorkerID string
	PID      int
	ActivityCounts
	WorkerGauges
	// LastSeen is when the row was last written.
	LastSeen time.Time
}

// ParkedReplica is one row of queue_parked_activity: the average number of long-polls
// parked on a queue at one replica over a bucket.
type ParkedReplica struct {
	Bucket   time.Time
	Queue    string
	Hostname string
	WorkerID string
	Parked   float64
	Max      int64
}

// SystemActivity is one row of system_activity: one process's aggregate for a
// minute. Metrics is the stored JSON object (group → key → {avg,min,max,last});
// this package stores and returns it as it is.
type SystemActivity struct {
	Bucket   time.Time
	Hostname string
	WorkerID string
	PID      int
	Samples  int64
	Metrics  json.RawMessage
}

// ActivityFlush is what one flush of a broker's activity recorder writes: closed (or,
// on demand, current) buckets of counters, added to what is stored; the process's
// system aggregates, which replace what is stored.
type ActivityFlush struct {
	Hostname string
	WorkerID string
	PID      int
	// Width is the width of the rows' buckets (0 = a minute): the partitions created
	// in a bucket are counted over it.
	Width   time.Duration
	Queues  []QueueActivity
	Workers []WorkerActivity
	Parked  []ParkedReplica
	System  []SystemActivity
}

// IsEmpty reports whether the flush writes nothing.
func (f ActivityFlush) IsEmpty() bool {
	return len(f.Queues) == 0 && len(f.Workers) == 0 && len(f.Parked) == 0 && len(f.System) == 0
}

// SeriesFilter selects the rows of an analytics or status read: the window
// [From, To), the bucket width, exact-match filters (empty = any) and the scope.
// Each read documents which of the filters it applies; Queue is a stored name.
type SeriesFilter struct {
	From      time.Time
	To        time.Time
	Bucket    time.Duration
	Queue     string
	Namespace string
	Task      string
	Hostname  string
	WorkerID  string
	// Prefix is the scope's prefix (queue.Scope.Prefix): reads by queue keep only
	// the queues whose stored names start with it; "" keeps every queue.
	Prefix string
}

// RetentionBucket sums retention_history over one bucket.
type RetentionBucket struct {
	Bucket                 time.Time
	RetentionMsgs          int64
	CompletedRetentionMsgs int64
	EvictionMsgs           int64
	EventCount             int64
}

// CountBucket is a message count in one bucket.
type CountBucket struct {
	Bucket time.Time
	Count  int64
}
