package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The stream routes serve the SDKs' Stream runtime (queries, cycle, state/get) and
// the operator commands of queenctl (list, get, reset, delete); docs/streams.md. Their
// keys are snake_case. Their 400 answers carry "success":false beside the usual error
// body (and "rows":[] on state/get), the shape the SDKs read.

// handleStreamRegister is POST /streams/v1/queries: register or resume a query by
// name. 200 with the registration; 409 when the query is registered with another
// config hash and reset was not asked (nothing changes).
func (s *Server) handleStreamRegister(w http.ResponseWriter, r *http.Request) error {
	o, err := readStreamObject(r)
	if err != nil {
		return err
	}
	var reg queue.StreamRegistration
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &reg.Name}, {"source_queue", &reg.SourceQueue}, {"config_hash", &reg.ConfigHash}} {
		if *f.dst, err = requiredString(o, f.key, f.key); err != nil {
			return err
		}
	}
	if reg.SinkQueue, err = o.optString("sink_queue", "sink_queue"); err != nil {
		return err
	}
	if reset, p := o.boolean("reset"); p == wrongType {
		return queue.Invalid("reset", "reset must be a boolean")
	} else {
		reg.Reset = reset
	}
	out, err := s.broker.StreamRegister(r.Context(), reg)
	if err != nil {
		return err
	}
	if out.Mismatch {
		return writeJSON(w, http.StatusConflict, api.StreamQueryMismatch{
			QueryID: out.QueryID, Name: out.Name, ConfigHash: out.StoredHash,
			Error: fmt.Sprintf("config_hash mismatch: query %q is registered with config_hash %q, not %q; "+
				"register it with reset:true to discard its state and use the new pipeline", out.Name, out.StoredHash, reg.ConfigHash),
		})
	}
	return writeJSON(w, http.StatusOK, api.StreamQueryResponse{
		Success: true, QueryID: out.QueryID, Name: out.Name, ConfigHash: out.ConfigHash, Fresh: out.Fresh, Reset: out.Reset,
	})
}

// handleStreamCycle is POST /streams/v1/cycle: state ops, sink pushes and the source
// ack in one transaction. 200 whether the cycle committed or not (success false with
// the reason, nothing applied); 400 for a malformed cycle. Sink items are stamped with
// the verified token's sub like /push; a producerSub in the body is ignored.
func (s *Server) handleStreamCycle(w http.ResponseWriter, r *http.Request) error {
	o, err := readStreamObject(r)
	if err != nil {
		s.broker.StreamCycleUnreadable()
		return err
	}
	c, err := decodeStreamCycle(o)
	if err != nil {
		s.broker.StreamCycleUnreadable()
		return err
	}
	sub := producerSub(r)
	for i := range c.Push {
		c.Push[i].ProducerSub = sub
	}
	res, err := s.broker.StreamCycle(r.Context(), c)
	if err != nil {
		return err
	}
	out := api.StreamCycleResponse{
		Success: res.Success, Error: res.Error, QueryID: res.QueryID, PartitionID: res.PartitionID,
		QueueName: res.SourceQueue, StateOpsApplied: res.StateOpsApplied,
	}
	if res.Success {
		out.PushResults = make([]api.PushResult, len(res.Push))
		for i, p := range res.Push {
			out.PushResults[i] = pushResult(i, p, "")
		}
		if a := res.Ack; a != nil {
			out.AckResult = &api.StreamAckResult{Success: a.Success, Count: a.Count, LeaseReleased: a.LeaseReleased,
				DLQ: a.DLQ, DeadLettered: a.DeadLettered}
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// decodeStreamCycle reads a cycle body. Absent (or null) lists are empty, an absent
// ack means none, release_lease defaults to true and consumer_group to queue mode (in
// the broker).
func decodeStreamCycle(o object) (queue.StreamCycle, error) {
	c := queue.StreamCycle{ReleaseLease: true}
	var err error
	if c.QueryID, err = requiredString(o, "query_id", "query_id"); err != nil {
		return c, err
	}
	if c.PartitionID, err = requiredString(o, "partition_id", "partition_id"); err != nil {
		return c, err
	}
	if c.ConsumerGroup, err = o.optString("consumer_group", "consumer_group"); err != nil {
		return c, err
	}
	if release, p := o.boolean("release_lease"); p == wrongType {
		return c, queue.Invalid("release_lease", "release_lease must be a boolean")
	} else if p == present {
		c.ReleaseLease = release
	}
	rawOps, p := o.array("state_ops")
	if p == wrongType {
		return c, queue.Invalid("state_ops", "state_ops must be an array")
	}
	c.StateOps = make([]queue.StateOp, len(rawOps))
	for i, raw := range rawOps {
		if c.StateOps[i], err = decodeStateOp(raw, fmt.Sprintf("state_ops[%d]", i)); err != nil {
			return c, err
		}
	}
	rawItems, p := o.array("push_items")
	if p == wrongType {
		return c, queue.Invalid("push_items", "push_items must be an array")
	}
	c.Push = make([]queue.PushItem, len(rawItems))
	for i, raw := range rawItems {
		if c.Push[i], err = decodePushItem(raw, fmt.Sprintf("push_items[%d]", i), false); err != nil {
			return c, err
		}
	}
	ack, p := o.obj("ack")
	switch p {
	case wrongType:
		return c, queue.Invalid("ack", "ack must be an object or null")
	case present:
		a, err := decodeStreamAck(ack)
		if err != nil {
			return c, err
		}
		c.Ack = &a
	}
	return c, nil
}

// decodeStateOp reads {"type","key","value"}. The key may be "" but not missing or
// null. A value of JSON null is stored as null; a missing value is left nil (the
// broker refuses it for an upsert).
func decodeStateOp(raw json.RawMessage, field string) (queue.StateOp, error) {
	o, p := asObject(raw)
	if p != present {
		return queue.StateOp{}, queue.Invalid(field, "%s must be an object", field)
	}
	var op queue.StateOp
	var err error
	if op.Type, err = requiredString(o, "type", field+".type"); err != nil {
		return op, err
	}
	// The key must be there, but "" is a key like any other (a non-keyed aggregate).
	key, p := o.str("key")
	switch p {
	case wrongType:
		return op, queue.Invalid(field+".key", "%s.key must be a string", field)
	case absent:
		return op, queue.Invalid(field+".key", "%s.key is required", field)
	}
	if err = checkText(field+".key", key); err != nil {
		return op, err
	}
	op.Key = key
	if v, ok := o["value"]; ok && len(v) > 0 {
		op.Value = v
	}
	return op, nil
}

// decodeStreamAck reads the ack object: transactionId required, leaseId, status,
// error optional strings, count a non-negative integer (default 1).
func decodeStreamAck(o object) (queue.StreamAck, error) {
	a := queue.StreamAck{Count: 1}
	var err error
	if a.TransactionID, err = requiredString(o, "transactionId", "ack.transactionId"); err != nil {
		return a, err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"leaseId", &a.LeaseID}, {"status", &a.Status}, {"error", &a.Error}} {
		if *f.dst, err = o.optString(f.key, "ack."+f.key); err != nil {
			return a, err
		}
	}
	if n, p := o.integer("count", 0, 1<<53); p == wrongType {
		return a, queue.Invalid("ack.count", "ack.count must be a non-negative integer")
	} else if p == present {
		a.Count = n
	}
	return a, nil
}

// handleStreamState is POST /streams/v1/state/get: the state rows of one shard,
// filtered by keys, key_prefix and ripe_at_or_before (AND), sorted by key.
func (s *Server) handleStreamState(w http.ResponseWriter, r *http.Request) error {
	o, err := readStreamObject(r)
	if err != nil {
		return err
	}
	var f queue.StateFilter
	if f.QueryID, err = requiredString(o, "query_id", "query_id"); err != nil {
		return err
	}
	if f.PartitionID, err = requiredString(o, "partition_id", "partition_id"); err != nil {
		return err
	}
	// keys that is not an array reads as no key filter (upstream).
	if rawKeys, p := o.array("keys"); p == present {
		f.Keys = make([]string, len(rawKeys))
		for i, raw := range rawKeys {
			if err := json.Unmarshal(raw, &f.Keys[i]); err != nil || isNull(raw) || raw[0] != '"' {
				return queue.Invalid(fmt.Sprintf("keys[%d]", i), "keys[%d] must be a string", i)
			}
		}
	}
	if f.Prefix, err = o.optString("key_prefix", "key_prefix"); err != nil {
		return err
	}
	if raw := o.raw("ripe_at_or_before"); raw != nil {
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
			return queue.Invalid("ripe_at_or_before", "ripe_at_or_before must be a number (epoch milliseconds)")
		}
		f.RipeAtOrBefore = &v
	}
	rows, err := s.broker.StreamState(r.Context(), f)
	if err != nil {
		return err
	}
	out := api.StreamStateResponse{Success: true, Rows: make([]api.StreamStateRow, len(rows))}
	for i, row := range rows {
		out.Rows[i] = api.StreamStateRow{Key: row.Key, Value: row.Value, UpdatedAt: api.FormatStateTime(row.UpdatedAt)}
	}
	return writeJSON(w, http.StatusOK, out)
}

// readStreamObject reads a stream route's body, which must be a JSON object: an empty
// body is 400 "Empty request body" (as on every other route), another JSON value 400
// "request body must be a JSON object", malformed JSON 400 "Invalid JSON: …".
func readStreamObject(r *http.Request) (object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, queue.Invalid("", "Empty request body")
	}
	if json.Valid(body) && body[0] != '{' {
		return nil, queue.Invalid("", "request body must be a JSON object")
	}
	return parseObject(body, false)
}

// requiredString reads a required non-empty string: absent, null or "" is "<field> is
// required", another type "<field> must be a string", a NUL a 400 from checkText.
func requiredString(o object, key, field string) (string, error) {
	v, p := o.str(key)
	switch {
	case p == wrongType:
		return "", queue.Invalid(field, "%s must be a string", field)
	case v == "":
		return "", queue.Invalid(field, "%s is required", field)
	}
	return v, checkText(field, v)
}

// streamRoute adapts a stream handler: a validation error (the parameter check's
// included) is answered 400 with the error body plus "success":false (and "rows":[]
// when rows), the shape the SDKs read; every other error goes to writeError.
func (s *Server) streamRoute(h handlerFunc, rows bool) http.HandlerFunc {
	h = checked(h)
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		var ve *queue.ValidationError
		if err == nil || !errors.As(err, &ve) {
			return err
		}
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "request rejected",
			slog.String("request_id", requestIDFrom(r.Context())), slog.Int("status", http.StatusBadRequest),
			slog.String("code", string(api.ErrorCodeInvalidArgument)), slog.String("err", ve.Message))
		body := api.StreamStateResponse{Error: ve.Message, Code: api.ErrorCodeInvalidArgument, Field: ve.Field}
		if !rows {
			return writeJSON(w, http.StatusBadRequest, api.ErrorBody{
				Success: api.Bool(false), Error: body.Error, Code: body.Code, Field: body.Field,
			})
		}
		body.Rows = []api.StreamStateRow{}
		return writeJSON(w, http.StatusBadRequest, body)
	})
}
