package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// handleTransaction is POST /api/v1/transaction: acks and pushes that
// commit or roll back together. The answer is 200 whether the transaction committed
// or not (success false with error and the results gathered before the failure);
// only a malformed request is 400. requiredLeases is accepted and ignored. Pushed
// items are stamped with the verified token's sub like /push (upstream leaves them
// unstamped); a producerSub in the body is ignored.
func (s *Server) handleTransaction(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	rawOps, p := body.array("operations")
	if p != present {
		return queue.Invalid("operations", "operations array required")
	}
	if len(rawOps) == 0 {
		return queue.Invalid("operations", "operations array cannot be empty")
	}
	ops := make([]queue.TxOp, len(rawOps))
	sub := producerSub(r)
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
	}
	res, err := s.broker.Transaction(r.Context(), scopeOf(r), ops)
	if err != nil {
		return err
	}
	out := api.TransactionResponse{
		TransactionID: res.TransactionID, Success: res.Success, Error: res.Error,
		Results: make([]api.TxResult, len(res.Results)),
	}
	for i, t := range res.Results {
		out.Results[i] = api.TxResult{
			Index: t.Index, Type: t.Type, Success: t.Success, TransactionID: t.TransactionID,
			Error: optional(t.Error), DLQ: t.DLQ, MessageID: t.MessageID,
			PartitionID: t.PartitionID, QueueName: unscopeName(r, t.QueueName),
		}
	}
	return writeJSON(w, http.StatusOK, out)
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
