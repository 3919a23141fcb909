package httpapi

import (
	"fmt"
	"math"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// handleAck is POST /api/v1/ack: 200 with a one-element array. The
// outcome (message not found, invalid lease, ...) is in the element, never in the
// status code.
func (s *Server) handleAck(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	a, group, ok := scanAck(body)
	if !ok {
		if a, group, err = decodeSingleAck(body); err != nil {
			return err
		}
	}
	if err := checkAck(a, ""); err != nil {
		return err
	}
	s.traceAck(r, group, 1)
	if group, err = scopeGroup(r, "consumerGroup", group); err != nil {
		return err
	}
	results, err := s.broker.Ack(r.Context(), scopeOf(r), group, []queue.Ack{a})
	if err != nil {
		return err
	}
	unscopeAcks(r, results)
	return s.writeAppended(w, http.StatusOK, func(dst []byte) ([]byte, error) {
		return appendAckResults(dst, results), nil
	})
}

// decodeSingleAck decodes an /ack body with encoding/json: the slow path behind
// scanAck, with upstream's exact errors.
func decodeSingleAck(body []byte) (queue.Ack, string, error) {
	o, err := parseObject(body, false)
	if err != nil {
		return queue.Ack{}, "", err
	}
	a, err := decodeAck(o, "")
	if err != nil {
		return a, "", err
	}
	group, err := o.optString("consumerGroup", "consumerGroup")
	return a, group, err
}

// handleAckBatch is POST /api/v1/ack/batch: 200 with one result per
// acknowledgment in request order ([] when there are none). The body-level
// consumerGroup applies to every item; per-item groups are ignored. One invalid item
// rejects the whole batch with 400.
func (s *Server) handleAckBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	acks, group, ok := scanAckBatch(body)
	if !ok {
		if acks, group, err = decodeAckBatch(body); err != nil {
			return err
		}
	}
	for i, a := range acks {
		if err := checkAck(a, ""); err != nil {
			return checkAck(a, fmt.Sprintf("acknowledgments[%d].", i)) // only a bad item pays for its name
		}
	}
	s.traceAck(r, group, len(acks))
	if group, err = scopeGroup(r, "consumerGroup", group); err != nil {
		return err
	}
	results, err := s.broker.Ack(r.Context(), scopeOf(r), group, acks)
	if err != nil {
		return err
	}
	unscopeAcks(r, results)
	return s.writeAppended(w, http.StatusOK, func(dst []byte) ([]byte, error) {
		return appendAckResults(dst, results), nil
	})
}

// decodeAckBatch decodes an /ack/batch body with encoding/json: the slow path behind
// scanAckBatch, with upstream's exact errors.
func decodeAckBatch(body []byte) ([]queue.Ack, string, error) {
	o, err := parseObject(body, false)
	if err != nil {
		return nil, "", err
	}
	rawAcks, p := o.array("acknowledgments")
	if p != present {
		return nil, "", queue.Invalid("acknowledgments", "acknowledgments array is required")
	}
	group, err := o.optString("consumerGroup", "consumerGroup")
	if err != nil {
		return nil, "", err
	}
	acks := make([]queue.Ack, len(rawAcks))
	for i, raw := range rawAcks {
		field := fmt.Sprintf("acknowledgments[%d]", i)
		o, p := asObject(raw)
		if p != present {
			return nil, "", queue.Invalid(field, "%s must be an object", field)
		}
		if acks[i], err = decodeAck(o, field+"."); err != nil {
			return nil, "", err
		}
	}
	return acks, group, nil
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
	if a.Status == "" && o.raw("status") != nil {
		a.Status = queue.AckFailed // an empty status is a nack; only absent or null completes
	}
	if a.Error, err = o.optString("error", prefix+"error"); err != nil {
		return a, err
	}
	return a, nil
}

// checkAck applies checkText to the strings of a decoded ack, whichever decoder read
// it; prefix qualifies the field names as in decodeAck.
func checkAck(a queue.Ack, prefix string) error {
	for _, f := range [...]struct{ name, v string }{
		{"transactionId", a.TransactionID}, {"partitionId", a.PartitionID}, {"leaseId", a.LeaseID},
		{"status", a.Status}, {"error", a.Error},
	} {
		if err := checkText(prefix+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// handleLeaseExtend is POST /api/v1/lease/{leaseId}/extend. The body is
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
	ext, err := s.broker.ExtendLease(r.Context(), scopeOf(r), leaseID, int(seconds))
	if err != nil {
		return err
	}
	res := api.LeaseExtendResult{LeaseID: leaseID, Success: ext.Success, Error: optional(ext.Error)}
	if ext.Success && !ext.ExpiresAt.IsZero() {
		res.ExpiresAt = api.String(api.FormatMillis(ext.ExpiresAt))
	}
	return writeJSON(w, http.StatusOK, []api.LeaseExtendResult{res})
}
