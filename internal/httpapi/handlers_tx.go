package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// handleTransaction is POST /api/v1/transaction: acks and pushes that commit or roll
// back together. The answer is 200 whether the transaction committed or not (success
// false with error and the results gathered before the failure); only a malformed
// request is 400 (403/413 for a refused timers or kv rider). The kv and timers riders
// commit or roll back with the operations (docs/api.md, "KV store" and "Timers").
// requiredLeases is accepted and ignored. Pushed items and scheduled timers are
// stamped with the verified token's sub like /push (upstream leaves pushed items
// unstamped); a producerSub in the body is ignored.
//
// A request refused before the database (a malformed body, a bad operation) is 400
// with the transaction's own envelope, as a failed transaction: success false,
// reason "bad_request", results [], and the error, code and field of every 400; a
// body over QUEEN_MAX_BODY_BYTES is 413 in it, reason "payload_too_large"; a push into
// a queue this broker cannot seal (encryption on, no key) is 409, reason "conflict".
func (s *Server) handleTransaction(w http.ResponseWriter, r *http.Request) error {
	err := s.transaction(w, r)
	if ve := (*queue.ValidationError)(nil); errors.As(err, &ve) {
		return s.writeTxRefusal(w, badTx(ve.Field, ve.Message))
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return s.writeTxRefusal(w, &txRefusal{status: http.StatusRequestEntityTooLarge,
			Reason: "payload_too_large", Error: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit),
			Code: string(api.ErrorCodePayloadTooLarge), Results: []struct{}{}})
	}
	if ce := (*queue.ConflictError)(nil); errors.As(err, &ce) {
		return s.writeTxRefusal(w, &txRefusal{status: http.StatusConflict, Reason: "conflict",
			Error: unscopeText(r, ce.Message), Code: string(api.ErrorCodeConflict), Results: []struct{}{}})
	}
	return err
}

// writeTxRefusal answers a transaction refused before the database with a minted
// transaction id, as every transaction answer carries one.
func (s *Server) writeTxRefusal(w http.ResponseWriter, refused *txRefusal) error {
	refused.TransactionID = s.ids.New()
	return writeJSON(w, refused.status, refused)
}

// transactionPath is the route of handleTransaction.
const transactionPath = "/api/v1/transaction"

func (s *Server) transaction(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	riders, refused := txRiders(r, body)
	if refused != nil {
		return s.writeTxRefusal(w, refused)
	}
	rawOps, p := body.array("operations")
	if p == absent && !riders.any() {
		return s.writeTxRefusal(w,
			badTx("operations", "transaction requires an operations array (or a top-level kv/timers array)"))
	}
	if p != present && (p != absent || !riders.any()) {
		return queue.Invalid("operations", "operations array required")
	}
	if len(rawOps) == 0 && !riders.any() {
		return queue.Invalid("operations", "operations array cannot be empty")
	}
	ops := make([]queue.TxOp, len(rawOps))
	sub := producerSub(r)
	flat := 0 // the results of operations: kv results follow them
	for i, raw := range rawOps {
		if ops[i], err = decodeTxOp(raw, fmt.Sprintf("operations[%d]", i)); err != nil {
			return err
		}
		for j := range ops[i].Push {
			ops[i].Push[j].ProducerSub = sub
		}
		if err := scopeTxOp(r, &ops[i], fmt.Sprintf("operations[%d]", i)); err != nil {
			return err
		}
		flat += max(1, len(ops[i].Push))
	}
	s.txTraceContext(r, ops)
	if refused, err := s.prepareTxTimers(r, riders.timers); refused != nil || err != nil {
		if err != nil {
			return err
		}
		return s.writeTxRefusal(w, refused)
	}
	res, timers, err := s.broker.TransactionRiders(r.Context(), scopeOf(r), ops,
		broker.TxRiders{KV: riders.kv, Timers: riders.timers})
	if err != nil {
		return err
	}
	if res.KVFailed != nil {
		return writeJSON(w, http.StatusOK, txKVFailed(res, flat))
	}
	out := api.TransactionResponse{
		TransactionID: res.TransactionID, Success: res.Success, Error: unscopeText(r, res.Error), Reason: res.Reason,
		Results: make([]api.TxResult, len(res.Results)),
	}
	for i, t := range res.Results {
		out.Results[i] = api.TxResult{
			Index: t.Index, Type: t.Type, Success: t.Success, TransactionID: t.TransactionID,
			Error: optional(unscopeText(r, t.Error)), DLQ: t.DLQ, MessageID: t.MessageID,
			PartitionID: t.PartitionID, QueueName: unscopeName(r, t.QueueName),
		}
	}
	if !riders.any() || !res.Success {
		return writeJSON(w, http.StatusOK, out)
	}
	return writeJSON(w, http.StatusOK, txWithRiders(out, res.KV, riders, timers, flat))
}

// decodeTxOp decodes one operation at field (e.g. operations[1]). Types other than
// push and ack are passed on for the broker to reject.
func decodeTxOp(raw json.RawMessage, field string) (queue.TxOp, error) {
	o, p := asObject(raw)
	if p != present {
		return queue.TxOp{}, queue.Invalid(field, "%s must be an object", field)
	}
	typ, err := o.optString("type", field+".type")
	if err != nil {
		return queue.TxOp{}, err
	}
	switch typ {
	case "kv", "timer", "timers":
		return queue.TxOp{}, queue.Invalid(field+".type", "%s.type %q is not an operation: KV ops and timers go in the "+
			"top-level \"kv\" and \"timers\" arrays", field, typ)
	}
	op := queue.TxOp{Type: typ}
	switch typ {
	case api.TxOpPush:
		op.Push, err = decodeTxPush(o, field)
	case api.TxOpAck:
		op.Ack, err = decodeTxAck(o, field)
	}
	return op, err
}

// decodeTxPush decodes a push operation: {items:[...]} or the flat single-item form
// {queue, partition, payload|data, transactionId, traceId}. A missing payload is {}.
func decodeTxPush(o object, field string) ([]queue.PushItem, error) {
	rawItems, p := o.array("items")
	switch p {
	case wrongType:
		return nil, queue.Invalid(field+".items", "%s.items must be an array", field)
	case absent:
		if o.raw("queue") == nil {
			return nil, nil // the broker rejects an empty push operation
		}
		it, err := decodePushFields(o, field, true)
		return []queue.PushItem{it}, err
	}
	items := make([]queue.PushItem, len(rawItems))
	for j, rawItem := range rawItems {
		var err error
		if items[j], err = decodePushItem(rawItem, fmt.Sprintf("%s.items[%d]", field, j), true); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// decodeTxAck decodes an ack operation. status defaults to completed; consumerGroup
// to queue mode (in the broker).
func decodeTxAck(o object, field string) (queue.Ack, error) {
	a, err := decodeAck(o, field+".")
	if err != nil {
		return a, err
	}
	if err := checkAck(a, field+"."); err != nil {
		return a, err
	}
	if a.ConsumerGroup, err = o.optString("consumerGroup", field+".consumerGroup"); err != nil {
		return a, err
	}
	if a.Status == "" {
		a.Status = queue.AckCompleted
	}
	return a, nil
}
