package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// Payloads stored for an item without one: JSON null on /push, {} inside a
// transaction (as upstream does).
var (
	payloadNull        = json.RawMessage("null")
	payloadEmptyObject = json.RawMessage("{}")
)

// handlePush is POST /api/v1/push: 201 with a top-level array of per-item
// results in request order; items: [] is 201 with the literal body []. The whole
// request is rejected (400) on the first invalid item. producerSub is never taken from
// the body: every item is stamped with the verified token's sub, or none (NULL) when
// the request carried no verified token (see "Producer identity" in docs/security.md).
func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	items, ok := scanPush(body)
	if !ok {
		if items, err = decodePush(body); err != nil {
			return err
		}
	}
	s.pushTraceContext(r, items) // before scoping: the span names the client's queue
	if err := scopePush(r, items); err != nil {
		return err
	}
	clientTxIDs := make([]string, len(items))
	sub := producerSub(r)
	for i := range items {
		items[i].ProducerSub = sub
		clientTxIDs[i] = items[i].TransactionID
	}
	results, err := s.broker.Push(r.Context(), items)
	if err != nil {
		return err
	}
	for i := range results {
		results[i].Queue = unscopeName(r, results[i].Queue)
		results[i].Error = unscopeText(r, results[i].Error)
	}
	// 201 even when some items failed (a full queue): the others are committed, and a
	// 5xx would make clients retry a request whose effects already happened.
	return s.writeAppended(w, http.StatusCreated, func(dst []byte) ([]byte, error) {
		return appendPushResults(dst, results, clientTxIDs)
	})
}

// decodePush decodes a /push body with encoding/json: the slow path behind scanPush,
// which decides every body scanPush declines, with upstream's exact errors.
func decodePush(body []byte) ([]queue.PushItem, error) {
	o, err := parseObject(body, false)
	if err != nil {
		return nil, err
	}
	rawItems, p := o.array("items")
	if p != present {
		return nil, queue.Invalid("items", "items array is required")
	}
	items := make([]queue.PushItem, len(rawItems))
	for i, raw := range rawItems {
		if items[i], err = decodePushItem(raw, fmt.Sprintf("items[%d]", i), false); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// decodePushItem decodes one push item at field (e.g. items[2]); see decodePushFields.
func decodePushItem(raw json.RawMessage, field string, inTx bool) (queue.PushItem, error) {
	o, p := asObject(raw)
	if p != present {
		return queue.PushItem{}, queue.Invalid(field, "%s must be an object", field)
	}
	return decodePushFields(o, field, inTx)
}

// decodePushFields decodes the fields of a push item; field prefixes the names in
// errors. Empty transactionId and traceId mean absent. A missing or null payload is
// stored as JSON null on /push; inside a transaction (inTx) data stands in for a
// missing payload and the default is {} (as upstream does).
func decodePushFields(o object, field string, inTx bool) (queue.PushItem, error) {
	var it queue.PushItem
	var ok presence
	if it.Queue, ok = o.str("queue"); ok != present {
		return it, queue.Invalid(field+".queue", "Queue must be a string")
	}
	if it.Partition, ok = o.str("partition"); ok == wrongType {
		return it, queue.Invalid(field+".partition", "Partition must be a string")
	}
	if it.TransactionID, ok = o.str("transactionId"); ok == wrongType {
		return it, queue.Invalid(field+".transactionId", "transactionId must be a string")
	}
	if it.TraceID, ok = o.str("traceId"); ok == wrongType {
		return it, queue.Invalid(field+".traceId", "traceId must be a string")
	}
	it.Payload = o.raw("payload")
	switch {
	case it.Payload != nil:
	case inTx && o.raw("data") != nil:
		it.Payload = o.raw("data")
	case inTx:
		it.Payload = payloadEmptyObject
	default:
		it.Payload = payloadNull
	}
	return it, nil
}

// pushResult renders one broker result with its request-relative index. clientTxID
// is the id the client sent ("" when the server generated one); buffered and failed
// results echo only that.
func pushResult(i int, r queue.PushResult, clientTxID string) api.PushResult {
	switch r.Status {
	case queue.StatusQueued:
		return api.QueuedResult(i, r.TransactionID, r.MessageID, r.PartitionID, optional(r.TraceID), r.Queue)
	case queue.StatusDuplicate:
		return api.DuplicateResult(i, r.TransactionID, r.MessageID, r.Queue)
	case queue.StatusBuffered:
		return api.BufferedResult(i, r.Queue, r.Partition, clientTxID)
	case queue.StatusFailed:
		return api.FailedResult(i, r.Queue, r.Partition, clientTxID, r.Error)
	}
	return api.PushResult{
		Index: i, Status: r.Status, TransactionID: r.TransactionID, MessageID: r.MessageID,
		PartitionID: r.PartitionID, QueueName: r.Queue, Error: r.Error,
	}
}

// optional returns nil for "" (rendered as JSON null) and a pointer to s otherwise.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
