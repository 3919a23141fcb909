package api

import "encoding/json"

// TraceRequest is the body of POST /api/v1/traces. TraceNames may also be sent as a
// single string or null; this type always sends an array.
type TraceRequest struct {
	// TransactionID identifies the message within its partition; required.
	TransactionID string `json:"transactionId"`
	// PartitionID is the partition UUID; required.
	PartitionID string `json:"partitionId"`
	// ConsumerGroup defaults to [QueueModeGroup].
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// TraceNames tag the event for GET /api/v1/traces/by-name/{traceName}.
	TraceNames []string `json:"traceNames,omitempty"`
	// EventType defaults to "info".
	EventType string `json:"eventType,omitempty"`
	// Data is any JSON value except null; required.
	Data json.RawMessage `json:"data"`
}

// TraceCreateResponse is the 201 answer of POST /api/v1/traces. An unknown message
// is a 404 {"success":false,"error":"Message not found","code":"not_found"}.
type TraceCreateResponse struct {
	// Success is true.
	Success bool `json:"success"`
	// TraceID is the new trace event's UUID.
	TraceID string `json:"traceId"`
}

// TraceList is the answer of GET /api/v1/traces/{partitionId}/{transactionId}: the
// message's trace events, oldest first. Keys are snake_case, as upstream's.
type TraceList struct {
	// Traces renders [] when empty.
	Traces []Trace `json:"traces"`
}

// MarshalJSON renders a nil Traces as [].
func (l TraceList) MarshalJSON() ([]byte, error) {
	type plain TraceList
	if l.Traces == nil {
		l.Traces = []Trace{}
	}
	return json.Marshal(plain(l))
}

// Trace is one trace event of a [TraceList].
type Trace struct {
	// ID is the trace event's UUID.
	ID string `json:"id"`
	// EventType is e.g. "info".
	EventType string `json:"event_type"`
	// Data is the event data as recorded.
	Data json.RawMessage `json:"data"`
	// ConsumerGroup is the group that recorded the event.
	ConsumerGroup string `json:"consumer_group"`
	// WorkerID names the recording server ("queen" here; upstream's worker index).
	WorkerID string `json:"worker_id"`
	// CreatedAt has three fractional digits.
	CreatedAt string `json:"created_at"`
	// TraceNames renders [] when the event has none.
	TraceNames []string `json:"trace_names"`
}

// MarshalJSON renders a nil TraceNames as [].
func (t Trace) MarshalJSON() ([]byte, error) {
	type plain Trace
	if t.TraceNames == nil {
		t.TraceNames = []string{}
	}
	return json.Marshal(plain(t))
}

// TraceByNameList is the answer of GET /api/v1/traces/by-name/{traceName}: one page
// of the events carrying the name, oldest first, and the total count.
type TraceByNameList struct {
	// Traces renders [] when empty.
	Traces []TraceByName `json:"traces"`
	// Total counts every event carrying the name.
	Total int64 `json:"total"`
	// Pagination echoes the page.
	Pagination Pagination `json:"pagination"`
}

// MarshalJSON renders a nil Traces as [].
func (l TraceByNameList) MarshalJSON() ([]byte, error) {
	type plain TraceByNameList
	if l.Traces == nil {
		l.Traces = []TraceByName{}
	}
	return json.Marshal(plain(l))
}

// TraceByName is one trace event of a [TraceByNameList], with its message.
type TraceByName struct {
	// ID is the trace event's UUID.
	ID string `json:"id"`
	// TransactionID identifies the traced message in its partition.
	TransactionID string `json:"transaction_id"`
	// PartitionID is the traced message's partition UUID.
	PartitionID string `json:"partition_id"`
	// EventType is e.g. "info".
	EventType string `json:"event_type"`
	// Data is the event data as recorded.
	Data json.RawMessage `json:"data"`
	// ConsumerGroup is the group that recorded the event.
	ConsumerGroup string `json:"consumer_group"`
	// WorkerID names the recording server.
	WorkerID string `json:"worker_id"`
	// CreatedAt has three fractional digits.
	CreatedAt string `json:"created_at"`
	// QueueName is the message's queue.
	QueueName string `json:"queue_name"`
	// PartitionName is the message's partition.
	PartitionName string `json:"partition_name"`
	// MessagePayload is the message payload, decrypted when a key is configured.
	MessagePayload json.RawMessage `json:"message_payload"`
	// TraceNames renders [] when the event has none.
	TraceNames []string `json:"trace_names"`
}

// MarshalJSON renders a nil TraceNames as [] and a nil MessagePayload as null.
func (t TraceByName) MarshalJSON() ([]byte, error) {
	type plain TraceByName
	if t.TraceNames == nil {
		t.TraceNames = []string{}
	}
	if t.MessagePayload == nil {
		t.MessagePayload = json.RawMessage("null")
	}
	return json.Marshal(plain(t))
}

// TraceNameList is the answer of GET /api/v1/traces/names: one page of the distinct
// trace names, most recently seen first, and the number of distinct names.
type TraceNameList struct {
	// TraceNames renders [] when empty.
	TraceNames []TraceNameCount `json:"trace_names"`
	// Total counts the distinct names.
	Total int64 `json:"total"`
	// Pagination echoes the page.
	Pagination Pagination `json:"pagination"`
}

// MarshalJSON renders a nil TraceNames as [].
func (l TraceNameList) MarshalJSON() ([]byte, error) {
	type plain TraceNameList
	if l.TraceNames == nil {
		l.TraceNames = []TraceNameCount{}
	}
	return json.Marshal(plain(l))
}

// TraceNameCount is one name of a [TraceNameList].
type TraceNameCount struct {
	// TraceName is the name.
	TraceName string `json:"trace_name"`
	// TraceCount counts the events carrying it.
	TraceCount int64 `json:"trace_count"`
	// MessageCount counts the distinct messages of those events.
	MessageCount int64 `json:"message_count"`
	// LastSeen is the newest such event's time, three fractional digits.
	LastSeen string `json:"last_seen"`
}
