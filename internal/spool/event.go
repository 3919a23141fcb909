package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// event is one spooled push item. The JSON keys are upstream Queen's failover event,
// so the bodies of upstream files decode with the same code; spooledAt and error are
// queen's additions (upstream ignores unknown keys).
type event struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	Failover      bool            `json:"failover"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId,omitempty"`
	ProducerSub   string          `json:"producerSub,omitempty"`
	// Traceparent and Tracestate are the W3C trace context of the push (queen only).
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
	// SpooledAt is when queen wrote the record (Unix milliseconds); upstream
	// records have none.
	SpooledAt int64 `json:"spooledAt,omitempty"`
	// Error is why a quarantined record was refused (dead-letter files only).
	Error string `json:"error,omitempty"`
}

// encodeEvent renders it as a record body. The payload is written as it is: in
// plaintext even for queues with encryptionEnabled, because encryption happens when
// the record is replayed (as upstream).
func encodeEvent(it queue.PushItem, at time.Time) ([]byte, error) {
	payload := it.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	b, err := json.Marshal(event{
		Queue: it.Queue, Partition: it.Partition, Payload: payload, Failover: true,
		TransactionID: it.TransactionID, TraceID: it.TraceID, ProducerSub: it.ProducerSub,
		Traceparent: it.Traceparent, Tracestate: it.Tracestate, SpooledAt: at.UnixMilli(),
	})
	if err != nil {
		return nil, fmt.Errorf("spool: encode record for queue %q: %w", it.Queue, err)
	}
	return b, nil
}

// errUndecodable marks a record whose checksum is right but whose body is not an
// event (only a bug or a foreign writer can produce one).
var errUndecodable = errors.New("record is not a push event")

// decodeEvent parses a record body into a push item and its spool time (zero for
// upstream records). The item has no message id: replay assigns a fresh one.
func decodeEvent(body []byte) (queue.PushItem, time.Time, error) {
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		return queue.PushItem{}, time.Time{}, fmt.Errorf("%w: %w", errUndecodable, err)
	}
	if ev.Queue == "" {
		return queue.PushItem{}, time.Time{}, fmt.Errorf("%w: no queue", errUndecodable)
	}
	var at time.Time
	if ev.SpooledAt > 0 {
		at = time.UnixMilli(ev.SpooledAt)
	}
	return queue.PushItem{
		Queue: ev.Queue, Partition: ev.Partition, Payload: ev.Payload,
		TransactionID: ev.TransactionID, TraceID: ev.TraceID, ProducerSub: ev.ProducerSub,
		Traceparent: ev.Traceparent, Tracestate: ev.Tracestate,
	}, at, nil
}

// withError returns body (a JSON object) with an "error" key set to reason; a body
// that is not an object is wrapped as {"raw": "<body>", "error": reason}.
func withError(body []byte, reason string) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		out, _ := json.Marshal(map[string]string{"raw": string(body), "error": reason})
		return out
	}
	m["error"], _ = json.Marshal(reason)
	out, err := json.Marshal(m)
	if err != nil {
		out, _ = json.Marshal(map[string]string{"raw": string(body), "error": reason})
	}
	return out
}

// isJSONObject reports whether b is a valid JSON object (upstream's reader skips
// anything else).
func isJSONObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
