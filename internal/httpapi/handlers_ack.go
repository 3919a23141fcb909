package httpapi

import (
	"fmt"
	"math"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// handleAck is POST /api/v1/ack (spec §6.1): 200 with a one-element array. The
// outcome (message not found, invalid lease, ...) is in the element, never in the
// status code.
func (s *Server) handleAck(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	a, err := decodeAck(body, "")
	if err != nil {
		return err
	}
	group, err := body.optString("consumerGroup", "consumerGroup")
	if err != nil {
		return err
	}
	results, err := s.broker.Ack(r.Context(), group, []queue.Ack{a})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ackResults(results))
}

// handleAckBatch is POST /api/v1/ack/batch (spec §6.2): 200 with one result per
// acknowledgment in request order ([] when there are none). The body-level
// consumerGroup applies to every item; per-item groups are ignored (semantics.md
// §7.1). One invalid item rejects the whole batch with 400.
func (s *Server) handleAckBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	rawAcks, p := body.array("acknowledgments")
	if p != present {
		return queue.Invalid("acknowledgments", "acknowledgments array is required")
	}
	group, err := body.optString("consumerGroup", "consumerGroup")
	if err != nil {
		return err
	}
	acks := make([]queue.Ack, len(rawAcks))
	for i, raw := range rawAcks {
		field := fmt.Sprintf("acknowledgments[%d]", i)
		o, p := asObject(raw)
		if p != present {
			return queue.Invalid(field, "%s must be an object", field)
		}
		if acks[i], err = decodeAck(o, field+"."); err != nil {
			return err
		}
	}
	results, err := s.broker.Ack(r.Context(), group, acks)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ackResults(results))
}

// decodeAck decodes the per-message fields of an ack; prefix qualifies field names
// and messages in a batch (e.g. "acknowledgments[2].").
func decodeAck(o object, prefix string) (queue.Ack, error) {
	var a queue.Ack
	var p presence
	if a.TransactionID, p = o.str("transactionId"); p != present || a.TransactionID == "" {
		return a, queue.Invalid(prefix+"transactionId", "%stransactionId is required", prefix)
	}
	if a.PartitionID, p = o.str("partitionId"); p != present || a.PartitionID == "" {
		return a, queue.Invalid(prefix+"partitionId", "%spartitionId is required to ensure message uniqueness", prefix)
	}
	var err error
	if a.LeaseID, err = o.optString("leaseId", prefix+"leaseId"); err != nil {
		return a, err
	}
	if a.Status, err = o.optString("status", prefix+"status"); err != nil {
		return a, err
	}
	if a.Error, err = o.optString("error", prefix+"error"); err != nil {
		return a, err
	}
	return a, nil
}

// ackResults renders broker results. error is null when empty (success, and the
// unknown-status case); queueName and partitionName are null for an unknown message.
func ackResults(results []queue.AckResult) []api.AckResult {
	out := make([]api.AckResult, len(results))
	for i, r := range results {
		out[i] = api.AckResult{
			Index: r.Index, TransactionID: r.TransactionID, Success: r.Success,
			Error: optional(r.Error), QueueName: optional(r.QueueName),
			PartitionName: optional(r.PartitionName), LeaseReleased: r.LeaseReleased, DLQ: r.DLQ,
		}
	}
	return out
}

// handleLeaseExtend is POST /api/v1/lease/{leaseId}/extend (spec §6.4). The body is
// optional (an empty body reads as {}, for the py client); seconds is an optional
// integer. Always 200 with a one-element array; an unknown or expired lease is
// success false with expiresAt null.
func (s *Server) handleLeaseExtend(w http.ResponseWriter, r *http.Request) error {
	leaseID, err := pathParam(r, "leaseId")
	if err != nil {
		return err
	}
	body, err := readObject(r, true)
	if err != nil {
		return err
	}
	seconds, p := body.integer("seconds", math.MinInt32, math.MaxInt32)
	if p == wrongType {
		return queue.Invalid("seconds", "seconds must be an integer")
	}
	ext, err := s.broker.ExtendLease(r.Context(), leaseID, int(seconds))
	if err != nil {
		return err
	}
	res := api.LeaseExtendResult{LeaseID: leaseID, Success: ext.Success, Error: optional(ext.Error)}
	if ext.Success && !ext.ExpiresAt.IsZero() {
		res.ExpiresAt = api.String(api.FormatMillis(ext.ExpiresAt))
	}
	return writeJSON(w, http.StatusOK, []api.LeaseExtendResult{res})
}
