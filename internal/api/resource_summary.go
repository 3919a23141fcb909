package api

import "encoding/json"

// This file holds the wire types of the resource-summary routes (/api/v1/resources/*
// beyond the queue list, see docs/api.md). No client asserts on these shapes beyond
// the top-level keys; the dashboard reads them. Every list renders [] when empty.

// Overview is the answer of GET /api/v1/resources/overview, computed live
// (StatsAge 0).
type Overview struct {
	Queues     int64              `json:"queues"`
	Partitions int64              `json:"partitions"`
	Namespaces int64              `json:"namespaces"`
	Tasks      int64              `json:"tasks"`
	Messages   Counters           `json:"messages"`
	Lag        OverviewLag        `json:"lag"`
	Throughput OverviewThroughput `json:"throughput"`
	Timestamp  string             `json:"timestamp"`
	StatsAge   int64              `json:"statsAge"`
}

// OverviewLag describes the partitions with pending messages: Time is the age in
// seconds of their oldest pending message, Offset their number of pending messages.
type OverviewLag struct {
	Time   LagStats `json:"time"`
	Offset LagStats `json:"offset"`
}

// LagStats summarises one lag measure.
type LagStats struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// OverviewThroughput is the cluster's rate over the last complete minute.
type OverviewThroughput struct {
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
}

// NamespaceList is the answer of GET /api/v1/resources/namespaces.
type NamespaceList struct {
	Namespaces []NamespaceStats `json:"namespaces"`
}

// MarshalJSON renders nil Namespaces as [].
func (l NamespaceList) MarshalJSON() ([]byte, error) {
	type plain NamespaceList
	l.Namespaces = nonNil(l.Namespaces)
	return json.Marshal(plain(l))
}

// NamespaceStats is one namespace with live counters.
type NamespaceStats struct {
	Namespace  string   `json:"namespace"`
	Queues     int64    `json:"queues"`
	Partitions int64    `json:"partitions"`
	Messages   Counters `json:"messages"`
}

// TaskList is the answer of GET /api/v1/resources/tasks.
type TaskList struct {
	Tasks []TaskStats `json:"tasks"`
}

// MarshalJSON renders nil Tasks as [].
func (l TaskList) MarshalJSON() ([]byte, error) {
	type plain TaskList
	l.Tasks = nonNil(l.Tasks)
	return json.Marshal(plain(l))
}

// TaskStats is one task with live counters.
type TaskStats struct {
	Task       string   `json:"task"`
	Queues     int64    `json:"queues"`
	Partitions int64    `json:"partitions"`
	Messages   Counters `json:"messages"`
}

// PartitionList is the answer of GET /api/v1/resources/partitions (a route upstream
// documents but does not serve).
type PartitionList struct {
	Partitions []PartitionSummary `json:"partitions"`
	Pagination Pagination         `json:"pagination"`
	// Total counts the partitions across pages (of the queue, when one is named).
	Total int64 `json:"total"`
}

// MarshalJSON renders nil Partitions as [].
func (l PartitionList) MarshalJSON() ([]byte, error) {
	type plain PartitionList
	l.Partitions = nonNil(l.Partitions)
	return json.Marshal(plain(l))
}

// PartitionSummary is one partition with live counters and its queue-mode cursor.
type PartitionSummary struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Queue         string          `json:"queue"`
	QueueID       string          `json:"queueId"`
	Namespace     string          `json:"namespace"`
	Task          string          `json:"task"`
	CreatedAt     string          `json:"createdAt"`
	Messages      Counters        `json:"messages"`
	Cursor        PartitionCursor `json:"cursor"`
	LastActivity  *string         `json:"lastActivity"`
	OldestMessage *string         `json:"oldestMessage"`
	NewestMessage *string         `json:"newestMessage"`
}
