package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// popWaitMillis is the long-poll timeout of consumers that wait (the mixed cases):
// short, so that a consumer parked when its window ends returns soon.
const popWaitMillis = 200

// popSpec describes the consumers of a case.
type popSpec struct {
	queue  string
	groups []string // nil: queue mode; else worker w consumes as groups[w % len]
	batch  int
	// wait makes every pop a long-poll (wait=true, timeout popWaitMillis); otherwise
	// an empty queue answers at once (wait=false).
	wait bool
	// graceful cycles are not cut at the window's end: a pop in flight is answered and
	// acknowledged, so no lease is left behind in a queue that is used again.
	graceful bool
	// lat, when set, records the push→delivery latency of every message delivered.
	lat *latencyLog
}

// popPath renders the pop request of worker w.
func (s popSpec) popPath(w int) string {
	q := url.Values{"batch": {strconv.Itoa(s.batch)}, "wait": {strconv.FormatBool(s.wait)}}
	if s.wait {
		q.Set("timeout", strconv.Itoa(popWaitMillis))
	}
	if s.groups != nil {
		q.Set("consumerGroup", s.groups[w%len(s.groups)])
	}
	return "/api/v1/pop/queue/" + url.PathEscape(s.queue) + "?" + q.Encode()
}

// popAckOp pops up to s.batch messages for worker w and acknowledges them in one batch.
func (h *httpLoad) popAckOp(s popSpec, workers int) op {
	type state struct {
		buf  bytes.Buffer
		ack  []byte
		pop  popAnswer
		acks []ackAnswer
	}
	states := make([]state, workers)
	paths := make([]string, workers)
	for w := range paths {
		paths[w] = s.popPath(w)
	}
	return func(ctx context.Context, w int) (int, error) {
		if s.graceful {
			ctx = context.WithoutCancel(ctx)
		}
		st := &states[w]
		status, err := h.do(ctx, http.MethodGet, paths[w], nil, &st.buf)
		if err != nil {
			return 0, err
		}
		if status == http.StatusNoContent {
			return 0, nil
		}
		if status != http.StatusOK {
			return 0, fmt.Errorf("pop: HTTP %d: %.300s", status, st.buf.String())
		}
		if err := decodePop(st.buf.Bytes(), &st.pop); err != nil {
			return 0, fmt.Errorf("pop: decode: %w", err)
		}
		n := len(st.pop.Messages)
		if n == 0 {
			return 0, nil
		}
		if s.lat != nil {
			for _, m := range st.pop.Messages {
				s.lat.record(w, m.Data.Sent)
			}
		}
		var group string
		if s.groups != nil {
			group = s.groups[w%len(s.groups)]
		}
		st.ack = appendAckBody(st.ack[:0], &st.pop, group)
		status, err = h.do(ctx, http.MethodPost, "/api/v1/ack/batch", st.ack, &st.buf)
		if err != nil {
			return 0, err
		}
		if status != http.StatusOK {
			return 0, fmt.Errorf("ack: HTTP %d: %.300s", status, st.buf.String())
		}
		if err := decodeAcks(st.buf.Bytes(), &st.acks); err != nil {
			return 0, fmt.Errorf("ack: decode: %w", err)
		}
		for _, a := range st.acks {
			if !a.Success {
				msg := "<nil>"
				if a.Error != nil {
					msg = *a.Error
				}
				return 0, fmt.Errorf("ack refused: %s", msg)
			}
		}
		return n, nil
	}
}

// appendAckBody appends the batch ack of every message of pop ("completed"), for
// group ("" in queue mode).
func appendAckBody(b []byte, pop *popAnswer, group string) []byte {
	b = append(b, `{"acknowledgments":[`...)
	for i, m := range pop.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"transactionId":`...)
		b = appendJSONString(b, m.TransactionID)
		b = append(b, `,"partitionId":`...)
		b = appendJSONString(b, m.PartitionID)
		b = append(b, `,"leaseId":`...)
		b = appendJSONString(b, pop.LeaseID)
		b = append(b, `,"status":"completed"}`...)
	}
	b = append(b, ']')
	if group != "" {
		b = append(b, `,"consumerGroup":`...)
		b = appendJSONString(b, group)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: as it is between quotes when it is
// printable ASCII without a quote or backslash (ids and names, always), else as
// encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// drain consumes everything pending in queueName, for each of groups (nil: queue
// mode), with auto-acknowledged pops of up to drainBatch messages over as many
// partitions, from conns concurrent consumers, until each has had an empty answer.
// Nothing may push meanwhile. It returns the number of messages drained.
func (h *httpLoad) drain(ctx context.Context, queueName string, groups []string, conns int) (int64, error) {
	const drainBatch = 1000
	if groups == nil {
		groups = []string{""}
	}
	var total int64
	for _, g := range groups {
		q := url.Values{"batch": {strconv.Itoa(drainBatch)}, "partitions": {strconv.Itoa(drainBatch)},
			"wait": {"false"}, "autoAck": {"true"}}
		if g != "" {
			q.Set("consumerGroup", g)
		}
		path := "/api/v1/pop/queue/" + url.PathEscape(queueName) + "?" + q.Encode()
		bufs := make([]bytes.Buffer, conns)
		answers := make([]popAnswer, conns)
		win := window{warmup: 0, duration: time.Hour}
		m, err := win.run(ctx, conns, 0, nil, func(ctx context.Context, w int) (int, error) {
			status, err := h.do(ctx, http.MethodGet, path, nil, &bufs[w])
			switch {
			case err != nil:
				return 0, err
			case status == http.StatusNoContent:
				return 0, errDrained
			case status != http.StatusOK:
				return 0, fmt.Errorf("drain: HTTP %d: %.300s", status, bufs[w].String())
			}
			if err := decodePop(bufs[w].Bytes(), &answers[w]); err != nil {
				return 0, fmt.Errorf("drain: decode: %w", err)
			}
			if len(answers[w].Messages) == 0 {
				return 0, errDrained
			}
			return len(answers[w].Messages), nil
		})
		total += m.msgs
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// seekToEnd moves group's cursors on queueName past every message, leases cleared
// (POST /api/v1/consumer-groups/{group}/queues/{queue}/seek {"toEnd":true}; queue
// mode is the group __QUEUE_MODE__). It returns the number of cursors moved, or
// supported=false, without an error, when the broker refuses the request (4xx).
func (h *httpLoad) seekToEnd(ctx context.Context, queueName, group string) (moved int, supported bool, err error) {
	var buf bytes.Buffer
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queueName) + "/seek"
	status, err := h.do(ctx, http.MethodPost, path, []byte(`{"toEnd":true}`), &buf)
	switch {
	case err != nil:
		return 0, true, err
	case status/100 == 4:
		return 0, false, nil
	case status != http.StatusOK:
		return 0, true, fmt.Errorf("seek: HTTP %d: %.300s", status, buf.String())
	}
	var answer struct {
		PartitionsUpdated int `json:"partitionsUpdated"`
	}
	if err := json.Unmarshal(buf.Bytes(), &answer); err != nil {
		return 0, true, fmt.Errorf("seek: decode: %w", err)
	}
	return answer.PartitionsUpdated, true, nil
}
