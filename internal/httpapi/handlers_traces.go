package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// Default page sizes of the trace listings.
const (
	defaultTracesPerMessage = 1000
	defaultTracesByName     = 100
	defaultTraceNames       = 50
)

// handleTraceCreate is POST /api/v1/traces: 201
// {"success":true,"traceId":...}. Upstream answers an unknown message with 500; a
// client mistake is never a 5xx here, so it is 404
// {"success":false,"error":"Message not found","code":"not_found"}.
func (s *Server) handleTraceCreate(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	var ev queue.TraceEvent
	var txp, pidp presence
	ev.TransactionID, txp = body.str("transactionId")
	ev.PartitionID, pidp = body.str("partitionId")
	switch {
	case txp != present || ev.TransactionID == "":
		return queue.Invalid("transactionId", "transactionId and partitionId are required")
	case pidp != present || ev.PartitionID == "":
		return queue.Invalid("partitionId", "transactionId and partitionId are required")
	}
	if ev.Data = body.raw("data"); ev.Data == nil {
		return queue.Invalid("data", "data is required")
	}
	if ev.ConsumerGroup, err = body.optString("consumerGroup", "consumerGroup"); err != nil {
		return err
	}
	if ev.ConsumerGroup, err = scopeGroup(r, "consumerGroup", ev.ConsumerGroup); err != nil {
		return err
	}
	if ev.EventType, err = body.optString("eventType", "eventType"); err != nil {
		return err
	}
	if ev.Names, err = traceNames(body); err != nil {
		return err
	}
	id, err := s.broker.TraceAdd(r.Context(), scopeOf(r), ev)
	if errors.Is(err, queue.ErrNotFound) {
		writeErrorBody(w, http.StatusNotFound, api.ErrorBody{
			Success: api.Bool(false), Error: "Message not found", Code: api.ErrorCodeNotFound,
		})
		return nil
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, api.TraceCreateResponse{Success: true, TraceID: id})
}

// traceNames reads traceNames: absent or null, a string, or an array of strings.
func traceNames(body object) ([]string, error) {
	const msg = "traceNames must be a string or an array of strings"
	if name, p := body.str("traceNames"); p == present {
		return []string{name}, nil
	}
	raws, p := body.array("traceNames")
	switch p {
	case absent:
		return nil, nil
	case wrongType:
		return nil, queue.Invalid("traceNames", msg)
	}
	names := make([]string, len(raws))
	for i, raw := range raws {
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &names[i]) != nil {
			return nil, queue.Invalid("traceNames", msg)
		}
	}
	return names, nil
}

// handleTraceList is GET /api/v1/traces/{partitionId}/{transactionId}:
// {"traces":[...]}, oldest first; [] for an unknown message. limit (default 1000,
// at most 1000) and offset page the list (additive).
func (s *Server) handleTraceList(w http.ResponseWriter, r *http.Request) error {
	partitionID, transactionID, err := messageKey(r)
	if err != nil {
		return err
	}
	page, err := listPage(r.URL.Query(), defaultTracesPerMessage)
	if err != nil {
		return err
	}
	traces, err := s.broker.Traces(r.Context(), scopeOf(r), partitionID, transactionID, page)
	if err != nil {
		return err
	}
	out := api.TraceList{Traces: make([]api.Trace, len(traces))}
	for i, t := range traces {
		out.Traces[i] = api.Trace{
			ID: t.ID, EventType: t.EventType, Data: t.Data, ConsumerGroup: unscopeName(r, t.ConsumerGroup),
			WorkerID: t.WorkerID, CreatedAt: api.FormatMillis(t.CreatedAt), TraceNames: t.Names,
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleTraceByName is GET /api/v1/traces/by-name/{traceName}: one page
// (limit 100, offset 0) of the events carrying the name, oldest first, with their
// message's queue, partition and decrypted payload, and the total count.
func (s *Server) handleTraceByName(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "traceName")
	if err != nil {
		return err
	}
	page, err := listPage(r.URL.Query(), defaultTracesByName)
	if err != nil {
		return err
	}
	traces, total, err := s.broker.TracesByName(r.Context(), scopeOf(r), name, page)
	if err != nil {
		return err
	}
	out := api.TraceByNameList{
		Traces: make([]api.TraceByName, len(traces)), Total: total,
		Pagination: api.Pagination{Limit: page.Limit, Offset: page.Offset},
	}
	for i, t := range traces {
		out.Traces[i] = api.TraceByName{
			ID: t.ID, TransactionID: t.TransactionID, PartitionID: t.PartitionID, EventType: t.EventType,
			Data: t.Data, ConsumerGroup: unscopeName(r, t.ConsumerGroup), WorkerID: t.WorkerID,
			CreatedAt: api.FormatMillis(t.CreatedAt), QueueName: unscopeName(r, t.Queue), PartitionName: t.Partition,
			MessagePayload: t.MessagePayload, TraceNames: t.Names,
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleTraceNames is GET /api/v1/traces/names: one page (limit 50,
// offset 0) of the distinct trace names, most recently seen first, and their number.
func (s *Server) handleTraceNames(w http.ResponseWriter, r *http.Request) error {
	page, err := listPage(r.URL.Query(), defaultTraceNames)
	if err != nil {
		return err
	}
	names, total, err := s.broker.TraceNames(r.Context(), scopeOf(r), page)
	if err != nil {
		return err
	}
	out := api.TraceNameList{
		TraceNames: make([]api.TraceNameCount, len(names)), Total: total,
		Pagination: api.Pagination{Limit: page.Limit, Offset: page.Offset},
	}
	for i, n := range names {
		out.TraceNames[i] = api.TraceNameCount{
			TraceName: n.Name, TraceCount: n.Traces, MessageCount: n.Messages, LastSeen: api.FormatMillis(n.LastSeen),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}
