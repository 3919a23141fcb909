package api

import (
	"encoding/json"
	"time"
)

// The stream routes (/streams/v1/*) serve the SDKs' Stream runtime and the operator
// commands of queenctl. Unlike the rest of the API their keys are snake_case, except
// the push items and push results they embed and the ack's transactionId and leaseId.

// FormatStateTime formats the updated_at of a state row the way PostgreSQL renders a
// timestamptz in JSON in a UTC session: microseconds without trailing zeros and a
// +00:00 offset, e.g. 2026-04-26T10:00:00.123456+00:00.
func FormatStateTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.999999-07:00")
}

// StreamQueryRequest is the body of POST /streams/v1/queries: register or resume the
// query Name. Name, SourceQueue and ConfigHash are required.
type StreamQueryRequest struct {
	Name        string `json:"name"`
	SourceQueue string `json:"source_queue"`
	SinkQueue   string `json:"sink_queue,omitempty"`
	ConfigHash  string `json:"config_hash"`
	// Reset discards the query's state when ConfigHash differs from the stored one.
	Reset bool `json:"reset,omitempty"`
}

// StreamQueryResponse is the 200 answer of POST /streams/v1/queries. Fresh means the
// query was created; Reset that its state was discarded for a new config hash.
type StreamQueryResponse struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	Fresh      bool   `json:"fresh"`
	Reset      bool   `json:"reset"`
}

// StreamQueryMismatch is the 409 answer of POST /streams/v1/queries when the query is
// registered with another config hash and reset was not asked: nothing changed.
type StreamQueryMismatch struct {
	Success bool   `json:"success"`
	QueryID string `json:"query_id"`
	Name    string `json:"name"`
	Error   string `json:"error"`
	// ConfigHash is the stored hash (additive).
	ConfigHash string `json:"config_hash"`
}

// StreamStateOp is one state change of a cycle: {"type":"upsert","key","value"} or
// {"type":"delete","key"}.
type StreamStateOp struct {
	Type  string          `json:"type"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
}

// StreamAck is the source ack of a cycle. Status defaults to completed and Count to 1.
type StreamAck struct {
	TransactionID string `json:"transactionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	Status        string `json:"status,omitempty"`
	Count         *int64 `json:"count,omitempty"`
	Error         string `json:"error,omitempty"`
}

// StreamCycleRequest is the body of POST /streams/v1/cycle. ConsumerGroup defaults to
// [QueueModeGroup], ReleaseLease to true.
type StreamCycleRequest struct {
	QueryID       string          `json:"query_id"`
	PartitionID   string          `json:"partition_id"`
	ConsumerGroup string          `json:"consumer_group,omitempty"`
	StateOps      []StreamStateOp `json:"state_ops"`
	PushItems     []PushItem      `json:"push_items"`
	Ack           *StreamAck      `json:"ack"`
	ReleaseLease  *bool           `json:"release_lease,omitempty"`
}

// StreamAckResult is the outcome of a cycle's ack.
type StreamAckResult struct {
	Success       bool  `json:"success"`
	Count         int64 `json:"count"`
	LeaseReleased bool  `json:"lease_released"`
	DLQ           bool  `json:"dlq"`
	// DeadLettered counts the messages a failed ack moved to the DLQ (additive).
	DeadLettered int64 `json:"dead_lettered,omitempty"`
}

// StreamCycleResponse is the answer of POST /streams/v1/cycle, HTTP 200 whether the
// cycle committed or not. On failure Success is false, Error says why and nothing was
// applied (StateOpsApplied 0, PushResults empty, AckResult null).
type StreamCycleResponse struct {
	Success         bool   `json:"success"`
	Error           string `json:"error,omitempty"`
	QueryID         string `json:"query_id"`
	PartitionID     string `json:"partition_id"`
	QueueName       string `json:"queueName"`
	StateOpsApplied int    `json:"state_ops_applied"`
	// PushResults has one result per push item, in order; renders [] when empty.
	PushResults []PushResult     `json:"push_results"`
	AckResult   *StreamAckResult `json:"ack_result"`
}

// MarshalJSON renders a nil PushResults as [].
func (r StreamCycleResponse) MarshalJSON() ([]byte, error) {
	type plain StreamCycleResponse
	if r.PushResults == nil {
		r.PushResults = []PushResult{}
	}
	return json.Marshal(plain(r))
}

// StreamStateRequest is the body of POST /streams/v1/state/get. Keys empty means every
// key; KeyPrefix is a literal prefix; RipeAtOrBefore (epoch ms) keeps rows whose
// value.windowEnd is a number at most it. The filters combine with AND.
type StreamStateRequest struct {
	QueryID        string   `json:"query_id"`
	PartitionID    string   `json:"partition_id"`
	Keys           []string `json:"keys,omitempty"`
	KeyPrefix      string   `json:"key_prefix,omitempty"`
	RipeAtOrBefore *float64 `json:"ripe_at_or_before,omitempty"`
}

// StreamStateRow is one state row; UpdatedAt is [FormatStateTime].
type StreamStateRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

// StreamStateResponse is the answer of POST /streams/v1/state/get: 200 with the rows
// sorted by key, or 400 with Success false, Error and no rows.
type StreamStateResponse struct {
	Success bool             `json:"success"`
	Error   string           `json:"error,omitempty"`
	Code    ErrorCode        `json:"code,omitempty"`
	Field   string           `json:"field,omitempty"`
	Rows    []StreamStateRow `json:"rows"`
}

// StreamQueryInfo describes a registered query for operators (GET /streams/v1/queries).
// Shards counts its source partitions with state or cycles; Cycles the cycles
// committed since it was registered or last reset. Timestamps are [FormatMillis].
type StreamQueryInfo struct {
	QueryID     string  `json:"query_id"`
	Name        string  `json:"name"`
	SourceQueue string  `json:"source_queue"`
	SinkQueue   *string `json:"sink_queue"`
	ConfigHash  string  `json:"config_hash"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
	Shards      int64   `json:"shards"`
	StateRows   int64   `json:"state_rows"`
	Cycles      int64   `json:"cycles"`
	LastCycleAt *string `json:"last_cycle_at"`
}

// StreamQueryList is the answer of GET /streams/v1/queries: one page of queries by
// name. Total counts every query; HasMore says whether a later page has more.
type StreamQueryList struct {
	Queries []StreamQueryInfo `json:"queries"`
	Total   int64             `json:"total"`
	Limit   int               `json:"limit"`
	Offset  int               `json:"offset"`
	HasMore bool              `json:"has_more"`
}

// StreamShardInfo is one source partition of a query. Partition and Queue are null
// when the partition no longer exists (its state outlives it until a reset or delete).
type StreamShardInfo struct {
	PartitionID string  `json:"partition_id"`
	Partition   *string `json:"partition"`
	Queue       *string `json:"queue"`
	StateRows   int64   `json:"state_rows"`
	// StateBytes is the stored size of the shard's state values.
	StateBytes  int64   `json:"state_bytes"`
	Cycles      int64   `json:"cycles"`
	LastCycleAt *string `json:"last_cycle_at"`
	// LastStateAt is when a state row of the shard was last written.
	LastStateAt *string `json:"last_state_at"`
}

// StreamQueryDetail is the answer of GET /streams/v1/queries/{name}: the query and one
// page of its shards, most recently cycled first.
type StreamQueryDetail struct {
	StreamQueryInfo
	Partitions []StreamShardInfo `json:"partitions"`
	Limit      int               `json:"limit"`
	Offset     int               `json:"offset"`
	HasMore    bool              `json:"has_more"`
}

// StreamRemoval is the answer of POST /streams/v1/queries/{name}/reset and DELETE
// /streams/v1/queries/{name}: what was removed. Deleted is true for a delete (the
// registration is gone too).
type StreamRemoval struct {
	Success          bool   `json:"success"`
	QueryID          string `json:"query_id"`
	Name             string `json:"name"`
	Deleted          bool   `json:"deleted"`
	StateRowsDeleted int64  `json:"state_rows_deleted"`
	ShardsDeleted    int64  `json:"shards_deleted"`
}
