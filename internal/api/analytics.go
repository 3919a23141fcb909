package api

import "encoding/json"

// This file holds the wire types of the analytics routes (/api/v1/analytics/*, see
// docs/api.md), which internal/analytics fills from the store's rows. No client
// asserts on these shapes beyond the top-level keys; the dashboard reads them. Every
// list renders [] when empty.

// Stat summarises samples of one process gauge.
type Stat struct {
	Avg  float64 `json:"avg"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Last float64 `json:"last"`
}

// SystemMetrics is the answer of GET /api/v1/analytics/system-metrics.
type SystemMetrics struct {
	TimeRange     TimeRange       `json:"timeRange"`
	Replicas      []SystemReplica `json:"replicas"`
	ReplicaCount  int             `json:"replicaCount"`
	BucketMinutes int             `json:"bucketMinutes"`
	BucketSeconds int             `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	PointCount    int             `json:"pointCount"`
}

// MarshalJSON renders nil Replicas as [].
func (m SystemMetrics) MarshalJSON() ([]byte, error) {
	type plain SystemMetrics
	m.Replicas = nonNil(m.Replicas)
	return json.Marshal(plain(m))
}

// SystemReplica is one broker process's series, oldest bucket first.
type SystemReplica struct {
	Hostname   string        `json:"hostname"`
	WorkerID   string        `json:"workerId"`
	TimeSeries []SystemPoint `json:"timeSeries"`
}

// SystemPoint is one bucket of a [SystemReplica]. Metrics groups gauges as
// group → key → [Stat]: cpu (user_us, system_us: CPU µs per second), memory
// (rss_bytes, virtual_bytes, heap_bytes, go_total_bytes), database (pool_size,
// pool_open, pool_idle, pool_active), runtime (goroutines, gc_cycles, gc_cpu_us,
// scheduler_delay_ms) and longpoll (parked).
type SystemPoint struct {
	Timestamp   string                     `json:"timestamp"`
	SampleCount int64                      `json:"sampleCount"`
	Metrics     map[string]map[string]Stat `json:"metrics"`
}

// WorkerMetrics is the answer of GET /api/v1/analytics/worker-metrics.
type WorkerMetrics struct {
	TimeRange     TimeRange      `json:"timeRange"`
	BucketMinutes int            `json:"bucketMinutes"`
	BucketSeconds int            `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	PointCount    int            `json:"pointCount"`
	TimeSeries    []WorkerPoint  `json:"timeSeries"` // newest first
	Workers       []WorkerStatus `json:"workers"`
	Queues        []QueueLag     `json:"queues"`
	Summary       WorkerSummary  `json:"summary"`
}

// MarshalJSON renders nil lists as [].
func (m WorkerMetrics) MarshalJSON() ([]byte, error) {
	type plain WorkerMetrics
	m.TimeSeries, m.Workers, m.Queues = nonNil(m.TimeSeries), nonNil(m.Workers), nonNil(m.Queues)
	return json.Marshal(plain(m))
}

// WorkerPoint is one bucket of [WorkerMetrics.TimeSeries], summed over processes.
type WorkerPoint struct {
	Timestamp         string  `json:"timestamp"`
	PushMessages      int64   `json:"pushMessages"`
	PopMessages       int64   `json:"popMessages"`
	AckMessages       int64   `json:"ackMessages"`
	PushRequests      int64   `json:"pushRequests"`
	PopRequests       int64   `json:"popRequests"`
	AckRequests       int64   `json:"ackRequests"`
	JobsDone          int64   `json:"jobsDone"`
	PushPerSecond     float64 `json:"pushPerSecond"`
	PopPerSecond      float64 `json:"popPerSecond"`
	AckPerSecond      float64 `json:"ackPerSecond"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	AvgFreeSlots      float64 `json:"avgFreeSlots"`
	MinFreeSlots      *int64  `json:"minFreeSlots"`
	DBConnections     int64   `json:"dbConnections"`
	AvgJobQueueSize   float64 `json:"avgJobQueueSize"`
	MaxJobQueueSize   int64   `json:"maxJobQueueSize"`
	BackoffSize       float64 `json:"backoffSize"`
	AvgLagMs          float64 `json:"avgLagMs"`
	MaxLagMs          int64   `json:"maxLagMs"`
	LagCount          int64   `json:"lagCount"`
	DBErrors          int64   `json:"dbErrors"`
	AckSuccess        int64   `json:"ackSuccess"`
	AckFailed         int64   `json:"ackFailed"`
	DLQCount          int64   `json:"dlqCount"`
}

// QueueLag is one queue's pop lag over the window.
type QueueLag struct {
	QueueName string  `json:"queueName"`
	PopCount  int64   `json:"popCount"`
	AvgLagMs  float64 `json:"avgLagMs"`
	MaxLagMs  int64   `json:"maxLagMs"`
}

// WorkerSummary totals [WorkerMetrics] over the window.
type WorkerSummary struct {
	TotalPushMessages int64 `json:"totalPushMessages"`
	TotalPopMessages  int64 `json:"totalPopMessages"`
	TotalAckMessages  int64 `json:"totalAckMessages"`
	TotalPushRequests int64 `json:"totalPushRequests"`
	TotalPopRequests  int64 `json:"totalPopRequests"`
	TotalAckRequests  int64 `json:"totalAckRequests"`
	TotalDBErrors     int64 `json:"totalDbErrors"`
	TotalAckFailed    int64 `json:"totalAckFailed"`
	TotalDLQ          int64 `json:"totalDlq"`
	// PendingMessages counts messages created in the window not yet consumed by the
	// queue-mode consumer.
	PendingMessages int64 `json:"pendingMessages"`
}

// QueueLagBucket is one element of GET /api/v1/analytics/queue-lag (a top-level
// array, newest first).
type QueueLagBucket struct {
	QueueName  string  `json:"queueName"`
	PopCount   int64   `json:"popCount"`
	AvgLagMs   float64 `json:"avgLagMs"`
	MaxLagMs   int64   `json:"maxLagMs"`
	BucketTime string  `json:"bucketTime"`
}

// QueueOps is the answer of GET /api/v1/analytics/queue-ops.
type QueueOps struct {
	TimeRange     TimeRange       `json:"timeRange"`
	BucketMinutes int             `json:"bucketMinutes"`
	BucketSeconds int             `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	Series        []QueueOpsPoint `json:"series"`        // newest first
	Queues        []string        `json:"queues"`
}

// MarshalJSON renders nil lists as [].
func (o QueueOps) MarshalJSON() ([]byte, error) {
	type plain QueueOps
	o.Series, o.Queues = nonNil(o.Series), nonNil(o.Queues)
	return json.Marshal(plain(o))
}

// QueueOpsPoint is one queue in one bucket. PartitionsCreated counts the queue's
// partitions created in the bucket and PartitionsDeleted those the partition-cleanup
// job deleted; ParkedCount is the bucket's average.
type QueueOpsPoint struct {
	Bucket            string  `json:"bucket"`
	QueueName         string  `json:"queueName"`
	PushRequests      int64   `json:"pushRequests"`
	PushMessages      int64   `json:"pushMessages"`
	PopMessages       int64   `json:"popMessages"`
	PopEmpty          int64   `json:"popEmpty"`
	AckRequests       int64   `json:"ackRequests"`
	AckSuccess        int64   `json:"ackSuccess"`
	AckFailed         int64   `json:"ackFailed"`
	Transactions      int64   `json:"transactions"`
	PartitionsCreated int64   `json:"partitionsCreated"`
	PartitionsDeleted int64   `json:"partitionsDeleted"`
	PartitionCount    int64   `json:"partitionCount"`
	AvgLagMs          float64 `json:"avgLagMs"`
	MaxLagMs          int64   `json:"maxLagMs"`
	PushPerSecond     float64 `json:"pushPerSecond"`
	PopPerSecond      float64 `json:"popPerSecond"`
	AckPerSecond      float64 `json:"ackPerSecond"`
	EmptyPerSecond    float64 `json:"emptyPerSecond"`
	ParkedCount       float64 `json:"parkedCount"`
}

// ParkedReplicas is the answer of GET /api/v1/analytics/queue-parked-replicas.
type ParkedReplicas struct {
	TimeRange     TimeRange     `json:"timeRange"`
	BucketMinutes int           `json:"bucketMinutes"`
	BucketSeconds int           `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	Series        []ParkedPoint `json:"series"`        // newest first
	Replicas      []ReplicaID   `json:"replicas"`
}

// MarshalJSON renders nil lists as [].
func (p ParkedReplicas) MarshalJSON() ([]byte, error) {
	type plain ParkedReplicas
	p.Series, p.Replicas = nonNil(p.Series), nonNil(p.Replicas)
	return json.Marshal(plain(p))
}

// ParkedPoint is the average number of long-polls parked on a queue at one replica
// over a bucket.
type ParkedPoint struct {
	Bucket      string  `json:"bucket"`
	QueueName   string  `json:"queueName"`
	Hostname    string  `json:"hostname"`
	WorkerID    string  `json:"workerId"`
	ParkedCount float64 `json:"parkedCount"`
}

// ReplicaID names one broker process.
type ReplicaID struct {
	Hostname string `json:"hostname"`
	WorkerID string `json:"workerId"`
}

// Retention is the answer of GET /api/v1/analytics/retention.
type Retention struct {
	TimeRange     TimeRange        `json:"timeRange"`
	BucketMinutes int              `json:"bucketMinutes"`
	BucketSeconds int              `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	Series        []RetentionPoint `json:"series"`        // newest first
	Totals        RetentionTotals  `json:"totals"`
}

// MarshalJSON renders nil Series as [].
func (r Retention) MarshalJSON() ([]byte, error) {
	type plain Retention
	r.Series = nonNil(r.Series)
	return json.Marshal(plain(r))
}

// RetentionTotals sums retention and eviction deletions.
type RetentionTotals struct {
	RetentionMsgs          int64 `json:"retentionMsgs"`
	CompletedRetentionMsgs int64 `json:"completedRetentionMsgs"`
	EvictionMsgs           int64 `json:"evictionMsgs"`
	TotalMsgs              int64 `json:"totalMsgs"`
	EventCount             int64 `json:"eventCount"`
}

// RetentionPoint is one bucket of [Retention.Series].
type RetentionPoint struct {
	Bucket string `json:"bucket"`
	RetentionTotals
}
