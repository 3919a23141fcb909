package httpapi

import (
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// maxTimeoutMillis bounds the timeout query parameter before it becomes a
// time.Duration (the broker caps it much lower anyway).
const maxTimeoutMillis = int64(24 * time.Hour / time.Millisecond)

// handlePop is GET /api/v1/pop/queue/{queue} and
// GET /api/v1/pop/queue/{queue}/partition/{partition}: 200 with a
// PopResponse, or 204 with no body when nothing was delivered (including a long-poll
// timeout) and there is no conflation to echo (writeEmptyPop). When the client goes
// away during a long-poll nothing is written.
func (s *Server) handlePop(w http.ResponseWriter, r *http.Request) error {
	if refuseConflation(w, r) {
		return nil
	}
	req, err := s.popRequest(r)
	if err != nil {
		return err
	}
	if err := s.broker.NormalizePop(&req); err != nil {
		return err
	}
	res, err := s.broker.Pop(r.Context(), req)
	if err != nil {
		return err
	}
	unscopePop(r, &res)
	if len(res.Messages) == 0 {
		return writeEmptyPop(w, req, res)
	}
	s.tracePop(r, req, res)
	return s.writePop(w, res)
}

// handlePopNamespace is GET /api/v1/pop?namespace=&task= (missing upstream): the
// wildcard pop run over the queues with that namespace and/or task, highest priority
// first, answered like a queue pop; the top-level queue is the queue that yielded the
// messages (each message also carries its queue).
func (s *Server) handlePopNamespace(w http.ResponseWriter, r *http.Request) error {
	if refuseConflation(w, r) {
		return nil
	}
	q := r.URL.Query()
	ns, _ := queryString(q, "namespace")
	task, _ := queryString(q, "task")
	if ns == "" && task == "" {
		return queue.Invalid("namespace", "namespace or task is required (or pop /api/v1/pop/queue/{queue})")
	}
	req, err := s.popRequest(r)
	if err != nil {
		return err
	}
	req.Namespace, req.Task, req.Scope = ns, task, scopeOf(r)
	if err := s.broker.NormalizePop(&req); err != nil {
		return err
	}
	res, err := s.broker.Pop(r.Context(), req)
	if err != nil {
		return err
	}
	unscopePop(r, &res)
	if len(res.Messages) == 0 {
		return writeEmptyPop(w, req, res)
	}
	s.tracePop(r, req, res)
	return s.writePop(w, res)
}

// conflationRefused is the 400 answer of a pop asking for conflation without a
// consumer group or with autoAck.
type conflationRefused struct {
	Success  bool          `json:"success"`
	Error    string        `json:"error"`
	Code     api.ErrorCode `json:"code"`
	Field    string        `json:"field"`
	Messages []struct{}    `json:"messages"`
}

// The refusals of a conflating pop, in the 1.x brokers' order and with the start of
// their messages.
const (
	msgConflationNeedsGroup = "conflation requires consumerGroup: last-value delivery keeps a cursor per " +
		"consumer group, and queue mode has none"
	msgConflationAutoAck = "conflation cannot be combined with autoAck: a conflated batch is committed by its ack"
)

// refuseConflation answers a pop with conflation=true (or 1) with 400, before
// anything else (pop maintenance included), and reports whether it did: without a
// consumerGroup, then with autoAck, as the 1.x brokers.
func refuseConflation(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if !queryBool(q, "conflation") {
		return false
	}
	answer := conflationRefused{Code: api.ErrorCodeInvalidArgument, Messages: []struct{}{}}
	if group, _ := queryString(q, "consumerGroup"); group == "" || group == queue.QueueModeGroup {
		answer.Error, answer.Field = msgConflationNeedsGroup, "consumerGroup"
	} else if queryBool(q, "autoAck") {
		answer.Error, answer.Field = msgConflationAutoAck, "autoAck"
	} else {
		return false
	}
	_ = writeJSON(w, http.StatusBadRequest, answer)
	return true
}

// pausedConflating is the answer of a pop asking for conflation while pops are paused.
type pausedConflating struct {
	Messages   []struct{} `json:"messages"`
	Paused     bool       `json:"paused"`
	Conflation bool       `json:"conflation"`
}

// writeEmptyPop answers a pop that delivered nothing: 204 with no body, unless it has
// conflation to echo, which a 1.1+ client must see on every answer (a conflating pop
// answered without it stops the client): a 200 PopResponse with no messages, or, while
// pops are paused, {"messages":[],"paused":true,"conflation":true} to a pop that asked
// for conflation.
func writeEmptyPop(w http.ResponseWriter, req queue.PopRequest, res queue.PopResult) error {
	switch {
	case res.Paused && req.Conflation != nil && *req.Conflation:
		return writeJSON(w, http.StatusOK, pausedConflating{Messages: []struct{}{}, Paused: true, Conflation: true})
	case res.Conflation || res.ConflationConflict:
		return writeJSON(w, http.StatusOK, popResponse(res))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// writePop writes the 200 answer of a non-empty pop.
func (s *Server) writePop(w http.ResponseWriter, res queue.PopResult) error {
	return s.writeAppended(w, http.StatusOK, func(dst []byte) ([]byte, error) { return appendPop(dst, res) })
}

// popRequest builds the pop request from the path and the query.
// namespace and task are ignored on these routes. Integers that do not parse are 400
// naming the parameter; batch must be at least 1.
func (s *Server) popRequest(r *http.Request) (queue.PopRequest, error) {
	var req queue.PopRequest
	var err error
	if hasPathParam(r, "queue") {
		if req.Queue, err = pathParam(r, "queue"); err != nil {
			return req, err
		}
		if req.Queue == "" {
			return req, queue.Invalid("queue", "queue must not be empty")
		}
		if req.Queue, err = scopeName(r, "queue", req.Queue); err != nil {
			return req, err
		}
	}
	if hasPathParam(r, "partition") {
		if req.Partition, err = pathParam(r, "partition"); err != nil {
			return req, err
		}
		if err := queue.CheckName("partition", req.Partition); err != nil {
			return req, err
		}
	}
	q := r.URL.Query()
	batch, ok, err := queryInt(q, "batch")
	if err != nil {
		return req, err
	}
	if ok {
		if batch < 1 || batch > int64(s.broker.Config().MaxPopBatch) {
			return req, queue.Invalid("batch", "batch must be between 1 and %d", s.broker.Config().MaxPopBatch)
		}
		req.Batch = int(batch)
	}
	timeout, ok, err := queryInt(q, "timeout")
	if err != nil {
		return req, err
	}
	if ok {
		req.Timeout = time.Duration(min(timeout, maxTimeoutMillis)) * time.Millisecond
	}
	req.Wait = queryBool(q, "wait")
	if ok && timeout < 0 {
		return req, queue.Invalid("timeout", "timeout must not be negative")
	}
	if ok && timeout == 0 {
		// An explicit zero timeout is a single attempt, answered at once (upstream).
		req.Wait = false
		req.Timeout = 0
	}
	partitions, ok, err := queryInt(q, "partitions")
	if err != nil {
		return req, err
	}
	if ok && req.Partition == "" {
		req.Partitions = int(max(min(partitions, int64(s.broker.Config().MaxPopBatch)), 1))
		req.PartitionsSet = true
	}
	req.AutoAck = queryBool(q, "autoAck")
	req.ConsumerGroup, _ = queryString(q, "consumerGroup")
	if req.ConsumerGroup, err = scopeGroup(r, "consumerGroup", req.ConsumerGroup); err != nil {
		return req, err
	}
	req.SubscriptionMode, _ = queryString(q, "subscriptionMode")
	if req.SubscriptionFrom, err = subscriptionFrom(q); err != nil {
		return req, err
	}
	lease, ok, err := queryInt(q, "leaseSeconds")
	if err == nil && ok && (lease < math.MinInt32 || lease > math.MaxInt32) {
		err = queue.Invalid("leaseSeconds", "leaseSeconds must be a 32-bit integer")
	}
	if err != nil {
		return req, err
	}
	if lease > int64(broker.MaxPopLeaseSeconds) {
		return req, queue.Invalid("leaseSeconds", "leaseSeconds must be at most %d", broker.MaxPopLeaseSeconds)
	}
	req.LeaseSeconds = int(max(lease, 0)) // N <= 0: the queue's leaseTime
	req.Autopilot = queryBool(q, "autopilot")
	if v, ok := queryString(q, "conflation"); ok && v != "" {
		c := v == "true" || v == "1"
		req.Conflation = &c
	}
	return req, nil
}

// subscriptionFrom reads a pop's subscriptionFrom: absent, empty or "now" (any case)
// as given, a timestamp as queryTimestamp takes it, passed on in RFC 3339 UTC; anything
// else is a 400 naming it. Upstream read every value PostgreSQL parses, infinity
// included, and started a group from the beginning on any other.
func subscriptionFrom(q url.Values) (string, error) {
	v, _ := queryString(q, "subscriptionFrom")
	if v = strings.TrimSpace(v); v == "" || strings.EqualFold(v, api.SubscriptionFromNow) {
		return v, nil
	}
	t, err := queryTimestamp(url.Values{"subscriptionFrom": {v}}, "subscriptionFrom")
	if err != nil {
		return "", queue.Invalid("subscriptionFrom",
			`subscriptionFrom must be "now", an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999`)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}

// popResponse renders a pop result: the reference for appendPop, and its fallback.
// The top-level partition and partitionId are those of the first message ("" when
// there is none); each message carries its own.
func popResponse(res queue.PopResult) api.PopResponse {
	msgs := make([]api.Message, len(res.Messages))
	for i, m := range res.Messages {
		data := m.Payload
		if len(data) == 0 {
			data = payloadNull
		}
		qn := m.Queue
		if qn == "" {
			qn = res.Queue
		}
		msgs[i] = api.Message{
			ID: m.ID, TransactionID: m.TransactionID, TraceID: optional(m.TraceID), Data: data,
			ProducerSub: optional(m.ProducerSub), CreatedAt: api.FormatMicros(m.CreatedAt),
			PartitionID: m.PartitionID, Partition: m.Partition, LeaseID: res.LeaseID,
			ConsumerGroup: res.ConsumerGroup, Queue: qn, RetryCount: m.RetryCount,
			Traceparent: m.Traceparent, Tracestate: m.Tracestate,
		}
	}
	var first queue.Message
	if len(res.Messages) > 0 {
		first = res.Messages[0]
	}
	return api.PopResponse{
		Success: true, Queue: res.Queue, Partition: first.Partition, PartitionID: first.PartitionID,
		LeaseID: res.LeaseID, ConsumerGroup: res.ConsumerGroup, PartitionsClaimed: res.PartitionsClaimed,
		Messages: msgs, Autopilot: popAutopilot(res.Autopilot),
		Conflation: res.Conflation, ConflationConflict: res.ConflationConflict,
	}
}

// popAutopilot renders the autopilot object of a pop answer (nil: omitted).
func popAutopilot(ap *queue.PopAutopilot) *api.PopAutopilot {
	if ap == nil {
		return nil
	}
	return &api.PopAutopilot{Partitions: ap.Partitions, Batch: ap.Batch, WaitMs: ap.WaitMs}
}
