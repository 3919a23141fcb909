package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// handleStreamList is GET /streams/v1/queries: one page (limit 100, offset 0) of the
// registered queries by name with their shards, state rows, cycles and last cycle time.
func (s *Server) handleStreamList(w http.ResponseWriter, r *http.Request) error {
	page, err := listPage(r.URL.Query(), 100)
	if err != nil {
		return err
	}
	qs, total, err := s.broker.StreamQueries(r.Context(), page)
	if err != nil {
		return err
	}
	out := api.StreamQueryList{Queries: make([]api.StreamQueryInfo, len(qs)), Total: total,
		Limit: page.Limit, Offset: page.Offset, HasMore: int64(page.Offset+len(qs)) < total}
	for i, q := range qs {
		out.Queries[i] = streamQueryInfo(q)
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStreamGet is GET /streams/v1/queries/{name}: the query with one page (limit
// 100) of its source partitions, most recently cycled first; 404 when unknown.
func (s *Server) handleStreamGet(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "name")
	if err != nil {
		return err
	}
	page, err := listPage(r.URL.Query(), 100)
	if err != nil {
		return err
	}
	d, err := s.broker.StreamQuery(r.Context(), name, page)
	if err != nil {
		return streamNotFound(name, err)
	}
	out := api.StreamQueryDetail{StreamQueryInfo: streamQueryInfo(d.Query), Partitions: make([]api.StreamShardInfo, len(d.Shards)),
		Limit: page.Limit, Offset: page.Offset, HasMore: int64(page.Offset+len(d.Shards)) < d.Query.Shards}
	for i, sh := range d.Shards {
		out.Partitions[i] = api.StreamShardInfo{
			PartitionID: sh.PartitionID, Partition: optional(sh.Partition), Queue: optional(sh.Queue),
			StateRows: sh.StateRows, StateBytes: sh.StateBytes, Cycles: sh.Cycles,
			LastCycleAt: optionalTime(sh.LastCycleAt), LastStateAt: optionalTime(sh.LastStateAt),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleStreamReset is POST /streams/v1/queries/{name}/reset: delete the query's state
// and keep its registration; 404 when unknown.
func (s *Server) handleStreamReset(w http.ResponseWriter, r *http.Request) error {
	return s.streamRemove(w, r, false)
}

// handleStreamDelete is DELETE /streams/v1/queries/{name}: delete the query and its
// state; 404 when unknown.
func (s *Server) handleStreamDelete(w http.ResponseWriter, r *http.Request) error {
	return s.streamRemove(w, r, true)
}

func (s *Server) streamRemove(w http.ResponseWriter, r *http.Request, del bool) error {
	name, err := pathParam(r, "name")
	if err != nil {
		return err
	}
	remove := s.broker.StreamReset
	if del {
		remove = s.broker.StreamDelete
	}
	res, err := remove(r.Context(), name)
	if err != nil {
		return streamNotFound(name, err)
	}
	return writeJSON(w, http.StatusOK, api.StreamRemoval{Success: true, QueryID: res.QueryID, Name: res.Name,
		Deleted: del, StateRowsDeleted: res.StateRows, ShardsDeleted: res.Shards})
}

// streamNotFound turns queue.ErrNotFound into 404 "stream query <name> not found".
func streamNotFound(name string, err error) error {
	if errors.Is(err, queue.ErrNotFound) {
		return notFound(fmt.Sprintf("stream query %q not found", name), err)
	}
	return err
}

func streamQueryInfo(q queue.StreamQuery) api.StreamQueryInfo {
	return api.StreamQueryInfo{
		QueryID: q.ID, Name: q.Name, SourceQueue: q.SourceQueue, SinkQueue: optional(q.SinkQueue),
		ConfigHash: q.ConfigHash, CreatedAt: api.FormatMillis(q.CreatedAt), UpdatedAt: api.FormatMillis(q.UpdatedAt),
		Shards: q.Shards, StateRows: q.StateRows, Cycles: q.Cycles, LastCycleAt: optionalTime(q.LastCycleAt),
	}
}
