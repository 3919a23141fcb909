package httpapi

import (
	"errors"
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The resource summaries (overview, namespaces, tasks, partitions) are computed live
// on every call: upstream serves them from a statistics table refreshed every 10 s,
// queen counts the messages themselves (the cost grows with the number of stored
// messages).

// handleOverview is GET /api/v1/resources/overview: totals of the request's scope,
// the lag of its partitions with pending messages, and the last complete minute's
// rates; statsAge is 0 because nothing is cached.
func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) error {
	out, err := s.analytics.Overview(r.Context(), scopeOf(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleNamespaces is GET /api/v1/resources/namespaces: every non-empty namespace
// with its queues, partitions and live counters.
func (s *Server) handleNamespaces(w http.ResponseWriter, r *http.Request) error {
	groups, err := s.broker.Namespaces(r.Context(), scopeOf(r))
	if err != nil {
		return err
	}
	out := api.NamespaceList{}
	for _, g := range groups {
		out.Namespaces = append(out.Namespaces, api.NamespaceStats{Namespace: g.Key, Queues: g.Queues,
			Partitions: g.Partitions, Messages: counters(g.Counters)})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleTasks is GET /api/v1/resources/tasks: every non-empty task with its queues,
// partitions and live counters.
func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) error {
	groups, err := s.broker.Tasks(r.Context(), scopeOf(r))
	if err != nil {
		return err
	}
	out := api.TaskList{}
	for _, g := range groups {
		out.Tasks = append(out.Tasks, api.TaskStats{Task: g.Key, Queues: g.Queues, Partitions: g.Partitions,
			Messages: counters(g.Counters)})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handlePartitions is GET /api/v1/resources/partitions[?queue=&limit=&offset=]
// (missing upstream): partitions by queue then name, with live counters
// and the queue-mode cursor, and the total across pages; 404 {"error":"Queue not
// found"} for an unknown queue.
func (s *Server) handlePartitions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	page, err := listPage(q, defaultPartitionsListLimit)
	if err != nil {
		return err
	}
	name, _ := queryString(q, "queue")
	if name, err = scopeName(r, "queue", name); err != nil {
		return err
	}
	parts, total, err := s.broker.Partitions(r.Context(), scopeOf(r), name, page)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	out := api.PartitionList{Pagination: api.Pagination{Limit: page.Limit, Offset: page.Offset}, Total: total}
	for _, p := range parts {
		out.Partitions = append(out.Partitions, api.PartitionSummary{
			ID: p.ID, Name: p.Name, Queue: unscopeName(r, p.Queue), QueueID: p.QueueID, Namespace: p.Namespace, Task: p.Task,
			CreatedAt: api.FormatMillis(p.CreatedAt), Messages: counters(p.Counters),
			Cursor:       api.PartitionCursor{TotalConsumed: p.TotalConsumed, BatchesConsumed: p.BatchesConsumed},
			LastActivity: optionalTime(p.LastActivity), OldestMessage: optionalTime(p.OldestMessage),
			NewestMessage: optionalTime(p.NewestMessage),
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleQueueDepth is GET /api/v1/resources/queues/{queue}/depth[?group=g]: the
// queue's backlog from cursors and leases (no payload is read), against the group's
// own cursor or, without group, the lowest cursor of any group; 404 {"error":"Queue
// not found"} for an unknown queue. conflation is the group's stored policy; for a
// conflating group the effective counts are the partitions (each owes one message),
// else the plain counts.
func (s *Server) handleQueueDepth(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	stored, err := scopeName(r, "queue", name)
	if err != nil {
		return err
	}
	var group *string
	if g, ok := queryString(r.URL.Query(), "group"); ok && g != "" {
		sg, err := scopeGroup(r, "group", g)
		if err != nil {
			return err
		}
		group = &sg
	}
	parts, err := s.broker.QueueDepth(r.Context(), stored, group)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	out := api.QueueDepth{Queue: name, Partitions: make([]api.PartitionDepth, len(parts))}
	if group != nil {
		out.Group = api.String(unscopeName(r, *group))
	}
	for i, p := range parts {
		processing := min(p.InFlight, p.Pending)
		d := api.PartitionDepth{Partition: p.Partition, Pending: p.Pending, Processing: processing,
			Ready: p.Pending - processing}
		out.Partitions[i] = d
		out.Pending += d.Pending
		out.Processing += d.Processing
		out.Ready += d.Ready
		if d.Pending > 0 {
			out.PartitionsPending++
		}
		if d.Ready > 0 {
			out.PartitionsReady++
		}
	}
	out.EffectivePending, out.EffectiveReady = out.Pending, out.Ready
	if group != nil {
		conflating, err := s.broker.ConflatingGroups(r.Context(), queue.Scope{}, *group)
		if err != nil {
			return err
		}
		if conflating[queue.GroupQueue{Group: *group, Queue: stored}] {
			out.Conflation = true
			out.EffectivePending, out.EffectiveReady = int64(out.PartitionsPending), int64(out.PartitionsReady)
		}
	}
	return writeJSON(w, http.StatusOK, out)
}
