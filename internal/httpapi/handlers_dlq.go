package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// handleDLQRequeue is POST /api/v1/dlq/requeue: {"items":[{partitionId,
// transactionId, consumerGroup?}]} or {"filter":{queue, consumerGroup?, partition?,
// from?, to?}}. In one transaction each selected message is pushed again to its
// partition under a fresh transaction id and its dead-letter entries are deleted.
// An item that names no entry fails the whole call (404 naming the item, nothing
// changed); a filter takes at most broker.MaxRequeueItems messages per call and says
// "more" when entries are left.
func (s *Server) handleDLQRequeue(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	sel, err := requeueSelection(body)
	if err != nil {
		return err
	}
	if err := scopeRequeue(r, &sel); err != nil {
		return err
	}
	res, err := s.broker.DLQRequeue(r.Context(), sel)
	if nf := (*queue.DLQKeyNotFoundError)(nil); errors.As(err, &nf) {
		return notFound(nf.Error(), err)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, requeueAnswer(r, res))
}

// handleDLQPurge is DELETE /api/v1/dlq?queue=&consumerGroup=&partition=&from=&to=:
// deletes the matching dead-letter entries (queue required), at most
// broker.MaxDLQPurge per call in one transaction, and answers {"deleted":N,
// "more":bool}. The messages stay.
func (s *Server) handleDLQPurge(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := dlqFilter(r, q)
	if err != nil {
		return err
	}
	deleted, more, err := s.broker.DLQPurge(r.Context(), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.DLQPurgeResponse{Deleted: deleted, More: more})
}

// requeueSelection reads the requeue body: exactly one of items and filter.
func requeueSelection(body object) (queue.DLQSelection, error) {
	items, pi := body.array("items")
	filter, pf := body.obj("filter")
	switch {
	case pi == wrongType:
		return queue.DLQSelection{}, queue.Invalid("items", "items must be an array")
	case pf == wrongType:
		return queue.DLQSelection{}, queue.Invalid("filter", "filter must be an object")
	case pi == present && pf == present:
		return queue.DLQSelection{}, queue.Invalid("filter", "give either items or filter, not both")
	case pi == present:
		keys, err := requeueKeys(items)
		return queue.DLQSelection{Keys: keys}, err
	case pf == present:
		f, err := requeueFilter(filter)
		return queue.DLQSelection{Filter: f}, err
	}
	return queue.DLQSelection{}, queue.Invalid("items", "items or filter is required")
}

// requeueKeys reads the items of a requeue body (never nil, so an empty array is
// the broker's to refuse).
func requeueKeys(items []json.RawMessage) ([]queue.DLQKey, error) {
	keys := make([]queue.DLQKey, 0, len(items))
	for i, raw := range items {
		at := fmt.Sprintf("items[%d]", i)
		it, p := asObject(raw)
		if p != present {
			return nil, queue.Invalid(at, "%s must be an object", at)
		}
		var k queue.DLQKey
		for _, f := range []struct {
			name string
			dst  *string
		}{{"partitionId", &k.PartitionID}, {"transactionId", &k.TransactionID}} {
			v, p := it.str(f.name)
			switch p {
			case absent:
				return nil, queue.Invalid(at+"."+f.name, "%s.%s is required", at, f.name)
			case wrongType:
				return nil, queue.Invalid(at+"."+f.name, "%s.%s must be a string", at, f.name)
			}
			*f.dst = v
		}
		group, p := it.str("consumerGroup")
		switch p {
		case absent:
			k.AnyGroup = true
		case wrongType:
			return nil, queue.Invalid(at+".consumerGroup", "%s.consumerGroup must be a string", at)
		}
		k.ConsumerGroup = group
		keys = append(keys, k)
	}
	return keys, nil
}

// requeueFilter reads the filter of a requeue body; field names start "filter.".
func requeueFilter(o object) (queue.DLQFilter, error) {
	var f queue.DLQFilter
	for _, v := range []struct {
		name string
		dst  *string
	}{{"queue", &f.Queue}, {"consumerGroup", &f.ConsumerGroup}, {"partition", &f.Partition}} {
		s, err := o.optString(v.name, "filter."+v.name)
		if err != nil {
			return f, err
		}
		*v.dst = s
	}
	var err error
	if f.From, err = bodyTimestamp(o, "from", "filter.from"); err != nil {
		return f, err
	}
	if f.To, err = bodyTimestamp(o, "to", "filter.to"); err != nil {
		return f, err
	}
	return f, nil
}

// bodyTimestamp reads an optional timestamp string field with the formats of the
// time query parameters; absent or empty is the zero time.
func bodyTimestamp(o object, key, field string) (time.Time, error) {
	s, err := o.optString(key, field)
	if err != nil {
		return time.Time{}, err
	}
	return queryTimestamp(url.Values{field: {s}}, field)
}

// requeueAnswer renders a requeue's outcome, with the queue names the request sees.
func requeueAnswer(r *http.Request, res queue.RequeueResult) api.DLQRequeueResponse {
	out := api.DLQRequeueResponse{
		Requeued: len(res.Messages), Entries: res.Entries, More: res.More,
		Items: make([]api.DLQRequeued, len(res.Messages)),
	}
	for i, m := range res.Messages {
		out.Items[i] = api.DLQRequeued{
			PartitionID: m.PartitionID, TransactionID: m.TransactionID,
			NewTransactionID: m.NewTransactionID, NewMessageID: m.NewMessageID, Queue: unscopeName(r, m.Queue),
		}
	}
	return out
}

// dlqFilter reads the dead-letter filter of GET and DELETE /api/v1/dlq: queue,
// consumerGroup, partition and the failure-time bounds from and to, in the request's
// scope.
func dlqFilter(r *http.Request, q url.Values) (queue.DLQFilter, error) {
	var f queue.DLQFilter
	f.Queue, _ = queryString(q, "queue")
	f.ConsumerGroup, _ = queryString(q, "consumerGroup")
	f.Partition, _ = queryString(q, "partition")
	var err error
	if f.From, err = queryTimestamp(q, "from"); err != nil {
		return f, err
	}
	if f.To, err = queryTimestamp(q, "to"); err != nil {
		return f, err
	}
	return f, scopeDLQFilter(r, &f, "")
}

// scopeDLQFilter maps the queue and consumer group of a dead-letter filter into the
// request's scope; prefix qualifies the field names (e.g. "filter.").
func scopeDLQFilter(r *http.Request, f *queue.DLQFilter, prefix string) error {
	f.Scope = scopeOf(r)
	var err error
	if f.Queue, err = scopeName(r, prefix+"queue", f.Queue); err != nil {
		return err
	}
	f.ConsumerGroup, err = scopeGroup(r, prefix+"consumerGroup", f.ConsumerGroup)
	return err
}

// scopeRequeue maps a requeue selection into the request's scope: the filter's names,
// and the consumer group of every key.
func scopeRequeue(r *http.Request, sel *queue.DLQSelection) error {
	if err := scopeDLQFilter(r, &sel.Filter, "filter."); err != nil {
		return err
	}
	for i := range sel.Keys {
		if sel.Keys[i].AnyGroup {
			continue
		}
		g, err := scopeGroup(r, fmt.Sprintf("items[%d].consumerGroup", i), sel.Keys[i].ConsumerGroup)
		if err != nil {
			return err
		}
		sel.Keys[i].ConsumerGroup = g
	}
	return nil
}
