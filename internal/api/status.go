package api

import (
	"encoding/json"
	"time"
)

// This file holds the wire types of the status, stats-refresh and maintenance routes
// (see docs/api.md), and the helpers the analytics and resource-summary shapes share
// with them. No client asserts on these shapes beyond the top-level keys; the
// dashboard reads them. Every list renders [] when empty.

// TimeLayoutSeconds is the bucket timestamp of the analytics series, without a
// fraction (2026-04-26T10:59:00Z).
const TimeLayoutSeconds = "2006-01-02T15:04:05Z"

// FormatSeconds renders t in UTC as [TimeLayoutSeconds].
func FormatSeconds(t time.Time) string { return t.UTC().Format(TimeLayoutSeconds) }

// nonNil returns s, or an empty slice for nil, so lists render as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// TimeRange is the effective window of a view: from is the start of its first
// bucket, to the requested end.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// MaintenanceStatus is the answer of GET /api/v1/system/maintenance. While push
// maintenance is on, pushes go to the broker's disk spool (answered "buffered") and
// are replayed when it is turned off; BufferedMessages is what the spool of the
// answering broker still holds.
type MaintenanceStatus struct {
	MaintenanceMode    bool        `json:"maintenanceMode"`
	PopMaintenanceMode bool        `json:"popMaintenanceMode"`
	BufferedMessages   int64       `json:"bufferedMessages"`
	BufferHealthy      bool        `json:"bufferHealthy"`
	BufferStats        BufferStats `json:"bufferStats"`
}

// BufferStats describes the answering broker's spool (upstream's file buffer).
type BufferStats struct {
	// PendingCount is the records waiting to be replayed; FailedCount the records
	// quarantined in dead-letter files (refused by the database).
	PendingCount int64       `json:"pendingCount"`
	FailedCount  int64       `json:"failedCount"`
	DBHealthy    bool        `json:"dbHealthy"`
	FailedFiles  FailedFiles `json:"failedFiles"`
	// queen additions: pending bytes, age of the oldest pending record, corrupt
	// regions skipped since start, and the last write error while writes fail.
	PendingBytes            int64   `json:"pendingBytes"`
	OldestPendingAgeSeconds float64 `json:"oldestPendingAgeSeconds"`
	CorruptRegions          int64   `json:"corruptRegions"`
	LastError               string  `json:"lastError,omitempty"`
}

// FailedFiles describes the spool's dead/ directory: quarantine files and damaged
// segments kept for inspection.
type FailedFiles struct {
	Count         int64   `json:"count"`
	TotalBytes    int64   `json:"totalBytes"`
	TotalMB       float64 `json:"totalMB"`
	FailoverCount int64   `json:"failoverCount"`
	QoS0Count     int     `json:"qos0Count"`
}

// MaintenanceToggle is the answer of POST /api/v1/system/maintenance.
type MaintenanceToggle struct {
	MaintenanceMode  bool   `json:"maintenanceMode"`
	BufferedMessages int64  `json:"bufferedMessages"`
	BufferHealthy    bool   `json:"bufferHealthy"`
	Message          string `json:"message"`
}

// PopMaintenance is the answer of GET and POST /api/v1/system/maintenance/pop.
type PopMaintenance struct {
	PopMaintenanceMode bool   `json:"popMaintenanceMode"`
	Message            string `json:"message"`
}

// BufferStatus is the answer of GET /api/v1/status/buffers: the answering broker's
// spool. Pending and Failed are upstream's keys (records to replay, records
// quarantined); the rest are queen's.
type BufferStatus struct {
	Pending   int64  `json:"pending"`
	Failed    int64  `json:"failed"`
	DBHealthy bool   `json:"dbHealthy"`
	Worker    int    `json:"worker"`
	Note      string `json:"note,omitempty"`
	// PendingBytes and Segments: the spool's size and files; OldestPendingAgeSeconds:
	// how long the oldest pending record has waited (0 when none).
	PendingBytes            int64   `json:"pendingBytes"`
	Segments                int     `json:"segments"`
	OldestPendingAgeSeconds float64 `json:"oldestPendingAgeSeconds"`
	// CorruptRegions and CorruptBytes: torn or damaged ranges skipped (and reported)
	// since the broker started, including those found at start-up.
	CorruptRegions int64 `json:"corruptRegions"`
	CorruptBytes   int64 `json:"corruptBytes"`
	// Healthy is false while spool writes fail (pushes that need it get 503);
	// LastError says why.
	Healthy   bool   `json:"healthy"`
	LastError string `json:"lastError,omitempty"`
	// Appended and Replayed count records since the broker started.
	Appended uint64 `json:"appended"`
	Replayed uint64 `json:"replayed"`
}

// StatsRefresh is the answer of POST /api/v1/stats/refresh. queen computes the
// resource and status views live, so there is no statistics cache to recompute; the
// call flushes this broker's activity counters (the analytics tables) instead.
type StatsRefresh struct {
	Refreshed bool         `json:"refreshed"`
	Mode      string       `json:"mode"`
	Flushed   FlushedStats `json:"flushed"`
}

// FlushedStats counts what a stats refresh wrote.
type FlushedStats struct {
	Minutes    int `json:"minutes"`
	QueueRows  int `json:"queueRows"`
	WorkerRows int `json:"workerRows"`
	ParkedRows int `json:"parkedRows"`
	SystemRows int `json:"systemRows"`
}

// StatusResponse is the answer of GET /api/v1/status.
type StatusResponse struct {
	TimeRange     TimeRange         `json:"timeRange"`
	BucketMinutes int               `json:"bucketMinutes"`
	BucketSeconds int               `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	PointCount    int               `json:"pointCount"`
	Throughput    []ThroughputPoint `json:"throughput"` // newest first
	// Queues lists the queues with messages created in the window.
	Queues          []StatusQueue  `json:"queues"`
	Messages        StatusMessages `json:"messages"`
	Leases          StatusLeases   `json:"leases"`
	DeadLetterQueue StatusDLQ      `json:"deadLetterQueue"`
	Workers         []WorkerStatus `json:"workers"`
	Errors          StatusErrors   `json:"errors"`
	// StatsAge is seconds since this broker last flushed its counters (-1: never).
	StatsAge int64 `json:"statsAge"`
	// ConsumerGroups is how far each consumer of the view's queues is behind now, by
	// queue then group (not windowed). Queen only.
	ConsumerGroups []ConsumerGroupLag `json:"consumerGroups"`
}

// MarshalJSON renders nil lists as [].
func (s StatusResponse) MarshalJSON() ([]byte, error) {
	type plain StatusResponse
	s.Throughput, s.Queues, s.Workers = nonNil(s.Throughput), nonNil(s.Queues), nonNil(s.Workers)
	s.ConsumerGroups = nonNil(s.ConsumerGroups)
	s.DeadLetterQueue.TopErrors = nonNil(s.DeadLetterQueue.TopErrors)
	return json.Marshal(plain(s))
}

// ThroughputPoint is one bucket of [StatusResponse.Throughput]. Message counts and
// lag are those of the view's queues; event-loop lag, free slots, database errors,
// CPU, memory and pool figures are those of every broker process (summed).
type ThroughputPoint struct {
	Timestamp          string  `json:"timestamp"`
	Ingested           int64   `json:"ingested"`
	Processed          int64   `json:"processed"`
	PopMessages        int64   `json:"popMessages"`
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
	PopPerSecond       float64 `json:"popPerSecond"`
	AvgLagMs           float64 `json:"avgLagMs"`
	MaxLagMs           int64   `json:"maxLagMs"`
	AvgEventLoopLagMs  float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs  float64 `json:"maxEventLoopLagMs"`
	// MinFreeSlots is null for a bucket without samples.
	MinFreeSlots    *int64  `json:"minFreeSlots"`
	DBErrors        int64   `json:"dbErrors"`
	AckFailed       int64   `json:"ackFailed"`
	DLQCount        int64   `json:"dlqCount"`
	QueenCPUUserPct float64 `json:"queenCpuUserPct"`
	QueenCPUSysPct  float64 `json:"queenCpuSysPct"`
	QueenRSSMB      float64 `json:"queenRssMb"`
	DBPoolActive    float64 `json:"dbPoolActive"`
	DBPoolIdle      float64 `json:"dbPoolIdle"`
	DBPoolSize      float64 `json:"dbPoolSize"`
}

// StatusQueue is one queue of [StatusResponse.Queues].
type StatusQueue struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Task          string `json:"task"`
	Partitions    int64  `json:"partitions"`
	TotalConsumed int64  `json:"totalConsumed"`
}

// StatusMessages counts the messages created in the window, plus request counts.
type StatusMessages struct {
	Total           int64           `json:"total"`
	Pending         int64           `json:"pending"`
	Processing      int64           `json:"processing"`
	Completed       int64           `json:"completed"`
	Failed          int64           `json:"failed"`
	DeadLetter      int64           `json:"deadLetter"`
	Requests        RequestCounts   `json:"requests"`
	BatchEfficiency BatchEfficiency `json:"batchEfficiency"`
}

// RequestCounts counts push, pop and ack requests.
type RequestCounts struct {
	Push int64 `json:"push"`
	Pop  int64 `json:"pop"`
	Ack  int64 `json:"ack"`
}

// BatchEfficiency is messages per request (0 without requests).
type BatchEfficiency struct {
	Push float64 `json:"push"`
	Pop  float64 `json:"pop"`
	Ack  float64 `json:"ack"`
}

// StatusLeases describes live queue leases.
type StatusLeases struct {
	Active               int64 `json:"active"`
	PartitionsWithLeases int64 `json:"partitionsWithLeases"`
	TotalBatchSize       int64 `json:"totalBatchSize"`
	TotalAcked           int64 `json:"totalAcked"`
}

// StatusDLQ describes the dead-letter entries that failed in the window.
type StatusDLQ struct {
	TotalMessages      int64        `json:"totalMessages"`
	AffectedPartitions int64        `json:"affectedPartitions"`
	TopErrors          []ErrorCount `json:"topErrors"`
}

// ErrorCount is one dead-letter error message with its number of entries.
type ErrorCount struct {
	Error string `json:"error"`
	Count int64  `json:"count"`
}

// StatusErrors sums the window's failures.
type StatusErrors struct {
	DBErrors    int64 `json:"dbErrors"`
	AckFailed   int64 `json:"ackFailed"`
	DLQMessages int64 `json:"dlqMessages"`
}

// WorkerStatus summarises one broker process over a window. queen has no job queue:
// requests wait for a pool connection instead, so JobQueueSize is always 0;
// BackoffSize is the average number of parked long-polls.
type WorkerStatus struct {
	Hostname          string  `json:"hostname"`
	WorkerID          string  `json:"workerId"`
	AvgEventLoopLagMs float64 `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs float64 `json:"maxEventLoopLagMs"`
	FreeSlots         float64 `json:"freeSlots"`
	DBConnections     int64   `json:"dbConnections"`
	JobQueueSize      int64   `json:"jobQueueSize"`
	BackoffSize       float64 `json:"backoffSize"`
	MessagesProcessed int64   `json:"messagesProcessed"`
	LastSeen          string  `json:"lastSeen"`
}

// StatusQueueList is the answer of GET /api/v1/status/queues.
type StatusQueueList struct {
	Queues     []QueueSummary `json:"queues"`
	Pagination Pagination     `json:"pagination"`
}

// MarshalJSON renders nil Queues as [].
func (l StatusQueueList) MarshalJSON() ([]byte, error) {
	type plain StatusQueueList
	l.Queues = nonNil(l.Queues)
	return json.Marshal(plain(l))
}

// StatusQueueDetail is the answer of GET /api/v1/status/queues/{queue}.
type StatusQueueDetail struct {
	Queue StatusQueueInfo `json:"queue"`
	// Partitions lists the first partitions by name, at most partitionLimit (10 000).
	Partitions []StatusPartition `json:"partitions"`
	// PartitionCount counts every partition of the queue (queen only).
	PartitionCount int64 `json:"partitionCount"`
	// PartitionsTruncated is true when Partitions lists fewer than PartitionCount
	// (queen only).
	PartitionsTruncated bool `json:"partitionsTruncated"`
	// Totals sums every partition, listed or not.
	Totals StatusTotals `json:"totals"`
	// Options is the queue's whole stored option set, as in the configure echo.
	// Queen only (upstream's answer has only queue.config); nil from upstream.
	Options *QueueOptionsEcho `json:"options,omitempty"`
	// ConsumerGroups is how far each consumer of the queue is behind now, by group.
	// Queen only; the partitions and totals above are queue mode's, as upstream's.
	ConsumerGroups []ConsumerGroupLag `json:"consumerGroups"`
}

// ConsumerGroupLag is how far one consumer group (queue mode: "__QUEUE_MODE__") is
// behind on one queue, now: the numbers of the queen_consumer_group_* gauges.
type ConsumerGroupLag struct {
	Queue string `json:"queue"`
	Group string `json:"group"`
	// Lag counts the messages the group has not consumed yet, leased ones included,
	// over every partition of the queue.
	Lag int64 `json:"lag"`
	// Pending is Lag less InFlight: not consumed and not leased.
	Pending int64 `json:"pending"`
	// InFlight counts leased messages not yet acknowledged.
	InFlight int64 `json:"inFlight"`
	// LagSeconds is the age of the oldest message not consumed yet (0 when none).
	LagSeconds float64 `json:"lagSeconds"`
	// PartitionsWithLag counts the partitions with messages not consumed yet.
	PartitionsWithLag int `json:"partitionsWithLag"`
	// Conflation is the group's stored conflation policy on the queue (last-value
	// delivery: a pop gets the newest message of each partition); false when none.
	Conflation bool `json:"conflation"`
}

// MarshalJSON renders nil Partitions and ConsumerGroups as [].
func (d StatusQueueDetail) MarshalJSON() ([]byte, error) {
	type plain StatusQueueDetail
	d.Partitions, d.ConsumerGroups = nonNil(d.Partitions), nonNil(d.ConsumerGroups)
	return json.Marshal(plain(d))
}

// StatusQueueInfo is a queue with its main configuration.
type StatusQueueInfo struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Task      string            `json:"task"`
	Priority  int               `json:"priority"`
	CreatedAt string            `json:"createdAt"`
	Config    StatusQueueConfig `json:"config"`
}

// StatusQueueConfig is the part of a queue's options the status view shows.
type StatusQueueConfig struct {
	LeaseTime       int  `json:"leaseTime"`
	RetryLimit      int  `json:"retryLimit"`
	RetryDelay      int  `json:"retryDelay"`
	TTL             int  `json:"ttl"`
	MaxQueueSize    int  `json:"maxQueueSize"`
	DeadLetterQueue bool `json:"deadLetterQueue"` // always true: see QueueOptionsEcho.DeadLetterQueue
}

// StatusPartition is one partition of a [StatusQueueDetail]: Messages and Stats hold
// the same counters.
type StatusPartition struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	CreatedAt     string          `json:"createdAt"`
	Messages      Counters        `json:"messages"`
	Stats         Counters        `json:"stats"`
	Cursor        PartitionCursor `json:"cursor"`
	LastActivity  *string         `json:"lastActivity"`
	OldestMessage *string         `json:"oldestMessage"`
	NewestMessage *string         `json:"newestMessage"`
}

// PartitionCursor holds the queue-mode cursor's counters.
type PartitionCursor struct {
	TotalConsumed   int64 `json:"totalConsumed"`
	BatchesConsumed int64 `json:"batchesConsumed"`
}

// StatusTotals sums the partitions: the counters both nested and flat.
type StatusTotals struct {
	Messages Counters `json:"messages"`
	Counters
	// TotalConsumed sums the queue-mode cursors' consumed counters (queen only).
	TotalConsumed int64 `json:"totalConsumed"`
}

// QueueMessage is one element of GET /api/v1/status/queues/{queue}/messages (a
// top-level array, newest first); Status is the queue-mode consumer's view.
type QueueMessage struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	QueuePath     string `json:"queuePath"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Status        string `json:"status"`
	CreatedAt     string `json:"createdAt"`
}

// MessageAnalytics is the answer of GET /api/v1/status/analytics.
type MessageAnalytics struct {
	DataPoints []DataPoint `json:"dataPoints"` // oldest first, zero-filled
	Interval   string      `json:"interval"`
	From       string      `json:"from"`
	To         string      `json:"to"`
}

// MarshalJSON renders nil DataPoints as [].
func (a MessageAnalytics) MarshalJSON() ([]byte, error) {
	type plain MessageAnalytics
	a.DataPoints = nonNil(a.DataPoints)
	return json.Marshal(plain(a))
}

// DataPoint counts the messages created in one bucket.
type DataPoint struct {
	Timestamp string `json:"timestamp"`
	Messages  int64  `json:"messages"`
}

// Notified is the answer of POST /internal/api/notify.
type Notified struct {
	Status string `json:"status"` // "ok"
}

// SharedState is the answer of GET /api/v1/system/shared-state (and its internal
// aliases), the upstream broker's cluster-cache diagnostics: queen replicas share
// nothing but PostgreSQL, so Enabled is false and Reason says so, beside the answering
// broker's cached maintenance flags.
type SharedState struct {
	Enabled            bool   `json:"enabled"`
	Reason             string `json:"reason"`
	MaintenanceMode    bool   `json:"maintenance_mode"`
	PopMaintenanceMode bool   `json:"pop_maintenance_mode"`
}
