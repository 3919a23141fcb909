package httpapi

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// Default page sizes of the message and DLQ listings.
const (
	defaultMessageLimit = 200
	defaultDLQLimit     = 100
)

// handleMessageList is GET /api/v1/messages: one page (limit 1 to
// [broker.MaxMessageListLimit], default 200) newest first, no payloads, each message
// with its computed status, plus the mode summary and, additive, the total count, the
// page echoed and whether messages are left after it. Filters: queue, partition, ns,
// task, status; from (default now − 1 h) and to (default now, rounded up to the end
// of its minute).
func (s *Server) handleMessageList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var f queue.MessageFilter
	f.Queue, _ = queryString(q, "queue")
	f.Partition, _ = queryString(q, "partition")
	f.Namespace, _ = queryString(q, "ns")
	f.Task, _ = queryString(q, "task")
	f.Status, _ = queryString(q, "status")
	f.Scope = scopeOf(r)
	var err error
	if f.Queue, err = scopeName(r, "queue", f.Queue); err != nil {
		return err
	}
	if f.From, err = queryTimestamp(q, "from"); err != nil {
		return err
	}
	if f.To, err = queryTimestamp(q, "to"); err != nil {
		return err
	}
	if f.Page, err = listPage(q, defaultMessageLimit); err != nil {
		return err
	}
	list, err := s.broker.Messages(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.MessageList{
		Messages: make([]api.MessageSummary, len(list.Messages)),
		Mode: api.MessageListMode{
			HasQueueMode: list.HasQueueMode, BusGroupsCount: list.BusGroups,
			Type: queue.ConsumptionMode(list.HasQueueMode, list.BusGroups),
		},
		Total:      list.Total,
		Pagination: api.Pagination{Limit: f.Page.Limit, Offset: f.Page.Offset},
		Limit:      f.Page.Limit,
		Offset:     f.Page.Offset,
		HasMore:    int64(f.Page.Offset)+int64(len(list.Messages)) < list.Total,
	}
	for i, m := range list.Messages {
		out.Messages[i] = api.MessageSummary{
			ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			QueuePath: unscopeName(r, m.Queue) + "/" + m.Partition, Queue: unscopeName(r, m.Queue), Partition: m.Partition,
			Namespace: m.Namespace, Task: m.Task, Status: m.State.Status, QueueStatus: m.State.QueueStatus,
			BusStatus:   api.BusStatus{ConsumedBy: m.State.ConsumedBy, TotalGroups: m.State.TotalGroups},
			TraceID:     optional(m.TraceID),
			ProducerSub: optional(m.ProducerSub), QueuePriority: m.Priority,
			CreatedAt: api.FormatMillis(m.CreatedAt), LeaseExpiresAt: optionalTime(m.State.LeaseExpiresAt),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleMessageGet is GET /api/v1/messages/{partitionId}/{transactionId}: the
// message with its decrypted payload, or 404 {"error":"Message not found"} (a
// partition id that is not a UUID included).
func (s *Server) handleMessageGet(w http.ResponseWriter, r *http.Request) error {
	partitionID, transactionID, err := messageKey(r)
	if err != nil {
		return err
	}
	d, err := s.broker.Message(r.Context(), scopeOf(r), partitionID, transactionID)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Message not found", err)
	}
	if err != nil {
		return err
	}
	st := d.State
	out := api.MessageDetail{
		ID: d.ID, TransactionID: d.TransactionID, PartitionID: d.PartitionID,
		QueuePath: unscopeName(r, d.Queue) + "/" + d.Partition, Queue: unscopeName(r, d.Queue), Partition: d.Partition,
		Namespace: d.Namespace, Task: d.Task, Status: st.Status, Payload: d.Payload, IsEncrypted: d.IsEncrypted,
		TraceID: optional(d.TraceID), ProducerSub: optional(d.ProducerSub), CreatedAt: api.FormatMillis(d.CreatedAt),
		ErrorMessage: d.DLQError, RetryCount: d.DLQRetryCount, LeaseExpiresAt: optionalTime(st.LeaseExpiresAt),
		QueueConfig: api.MessageQueueConfig{
			LeaseTime: d.LeaseTime, RetryLimit: d.RetryLimit, RetryDelay: d.RetryDelay, TTL: d.TTL, Priority: d.Priority,
		},
		Mode: api.MessageMode{
			HasQueueMode: st.HasQueueMode, BusGroupsCount: st.BusGroups, ConsumedByGroups: st.BusConsumed,
			Type: queue.ConsumptionMode(st.HasQueueMode, st.BusGroups),
		},
		ConsumerGroups: make([]api.MessageConsumerGroup, len(d.Groups)),
	}
	for i, g := range d.Groups {
		out.ConsumerGroups[i] = api.MessageConsumerGroup{
			Name: unscopeName(r, g.Name), Consumed: g.Consumed, LeaseExpiresAt: optionalTime(g.LeaseExpiresAt),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleMessageDelete is DELETE /api/v1/messages/{partitionId}/{transactionId}: 200
// with success true, or false when there was no such message.
func (s *Server) handleMessageDelete(w http.ResponseWriter, r *http.Request) error {
	partitionID, transactionID, err := messageKey(r)
	if err != nil {
		return err
	}
	deleted, err := s.broker.MessageDelete(r.Context(), scopeOf(r), partitionID, transactionID)
	if err != nil {
		return err
	}
	out := api.MessageDeleteResponse{
		Success: deleted, PartitionID: partitionID, TransactionID: transactionID, Message: api.MessageNotFound,
	}
	if deleted {
		out.Message = api.MessageDeleted
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleDLQList is GET /api/v1/dlq: one page (limit 100, offset 0) of
// dead-letter entries, newest failure first, filtered by queue, consumerGroup,
// partition and failure time (from, to; inclusive), with the total count. Payloads
// are decrypted (upstream returns them as stored).
func (s *Server) handleDLQList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := dlqFilter(r, q)
	if err != nil {
		return err
	}
	if f.Page, err = listPage(q, defaultDLQLimit); err != nil {
		return err
	}
	entries, total, err := s.broker.DLQ(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.DLQList{
		Messages: make([]api.DLQMessage, len(entries)), Total: total,
		Pagination: api.Pagination{Limit: f.Page.Limit, Offset: f.Page.Offset},
	}
	for i, e := range entries {
		out.Messages[i] = api.DLQMessage{
			ID: e.MessageID, TransactionID: e.TransactionID, PartitionID: e.PartitionID,
			Queue: unscopeName(r, e.Queue), QueueName: unscopeName(r, e.Queue), Partition: e.Partition,
			ConsumerGroup: unscopeName(r, e.ConsumerGroup),
			ErrorMessage:  e.ErrorMessage, RetryCount: e.RetryCount, Data: e.Payload,
			ProducerSub: optional(e.ProducerSub), CreatedAt: api.FormatMillis(e.CreatedAt),
			FailedAt: api.FormatMillis(e.FailedAt), DLQID: e.DLQID,
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// messageKey reads the {partitionId} and {transactionId} path parameters.
func messageKey(r *http.Request) (partitionID, transactionID string, err error) {
	if partitionID, err = pathParam(r, "partitionId"); err != nil {
		return "", "", err
	}
	if transactionID, err = pathParam(r, "transactionId"); err != nil {
		return "", "", err
	}
	return partitionID, transactionID, nil
}

// listPage reads limit (default def) and offset (default 0). Garbage is a 400 naming
// the parameter; the broker checks the bounds.
func listPage(q url.Values, def int) (queue.Page, error) {
	limit, ok, err := queryInt(q, "limit")
	if err != nil {
		return queue.Page{}, err
	}
	if !ok {
		limit = int64(def)
	}
	offset, _, err := queryInt(q, "offset")
	if err != nil {
		return queue.Page{}, err
	}
	// Clamp to int32 so the broker's range checks see out-of-range values as such on
	// every platform.
	clamp := func(n int64) int { return int(min(max(n, math.MinInt32), math.MaxInt32)) }
	return queue.Page{Limit: clamp(limit), Offset: clamp(offset)}, nil
}

// queryTimestamp parses a timestamp query parameter as readTimestamp does, a "+" of the
// offset that arrived unescaped as a space included. Absent or empty is the zero time;
// anything else is a 400 naming the parameter.
func queryTimestamp(q url.Values, name string) (time.Time, error) {
	v, _ := queryString(q, name)
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, ok := readTimestamp(v); ok {
		return t, nil
	}
	if i := strings.LastIndexByte(v, ' '); i > 0 {
		if t, ok := readTimestamp(v[:i] + "+" + v[i+1:]); ok {
			return t, nil
		}
	}
	return time.Time{}, queue.Invalid(name, "%s must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", name)
}
