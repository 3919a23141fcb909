package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// defaultMinLagSeconds is the lagging threshold when minLagSeconds is absent.
const defaultMinLagSeconds = 3600

// handleConsumerGroupList is GET /api/v1/consumer-groups: a top-level array
// with one element per (group, queue) that has cursors, queue mode included; [] when
// there is none. totalLag is the real number of unconsumed messages (upstream: null)
// and maxTimeLag the age of the oldest one.
func (s *Server) handleConsumerGroupList(w http.ResponseWriter, r *http.Request) error {
	groups, err := s.broker.ConsumerGroups(r.Context(), scopeOf(r))
	if err != nil {
		return err
	}
	out := make([]api.ConsumerGroupSummary, len(groups))
	for i, g := range groups {
		out[i] = api.ConsumerGroupSummary{
			Name: unscopeName(r, g.Group), Topics: []string{unscopeName(r, g.Queue)}, QueueName: unscopeName(r, g.Queue),
			Members:           g.Members,
			PartitionsWithLag: g.PartitionsWithLag, TotalLag: g.TotalLag, InFlight: g.InFlight,
			MaxTimeLag: wholeSeconds(g.MaxTimeLag), State: g.State(),
			Conflation: g.Conflation,
		}
		if sub := g.Subscription; sub != nil {
			if sub.Mode != "" {
				out[i].SubscriptionMode = api.String(sub.Mode)
			}
			out[i].SubscriptionTimestamp = optionalTime(sub.Timestamp)
			out[i].SubscriptionCreatedAt = api.String(api.FormatMillis(sub.CreatedAt))
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleConsumerGroupLagging is GET /api/v1/consumer-groups/lagging: the
// cursors whose oldest unconsumed message is older than minLagSeconds (default 3600),
// most lagging first, as a top-level array. A minLagSeconds that is not an integer is
// 400 (upstream: 500).
func (s *Server) handleConsumerGroupLagging(w http.ResponseWriter, r *http.Request) error {
	minLag, ok, err := queryInt(r.URL.Query(), "minLagSeconds")
	if err != nil {
		return err
	}
	if !ok {
		minLag = defaultMinLagSeconds
	}
	// Anything beyond ~292 years is "nothing lags that much"; clamp before converting.
	minLag = min(minLag, int64(math.MaxInt64/time.Second))
	cursors, err := s.broker.ConsumerGroupsLagging(r.Context(), scopeOf(r), time.Duration(minLag)*time.Second)
	if err != nil {
		return err
	}
	out := make([]api.LaggingPartition, len(cursors))
	for i, c := range cursors {
		lag := wholeSeconds(c.TimeLag)
		out[i] = api.LaggingPartition{
			ConsumerGroup: unscopeName(r, c.Group), QueueName: unscopeName(r, c.Queue), PartitionName: c.Partition,
			PartitionID: c.PartitionID,
			WorkerID:    optional(c.WorkerID), OffsetLag: c.OffsetLag, TimeLagSeconds: lag,
			LagHours: math.Round(float64(lag)/36) / 100, LastConsumedAt: optionalTime(c.LastConsumedAt),
		}
		if c.OldestUnconsumedAt != nil {
			out[i].OldestUnconsumedAt = api.FormatMillis(*c.OldestUnconsumedAt)
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleConsumerGroupGet is GET /api/v1/consumer-groups/{group}: the group's
// cursors keyed by queue name, with offsetLag (exact) and timeLagSeconds (age of the
// oldest unconsumed message). An unknown group (no cursor, subscription or
// registration on any queue) is 200 {}, as upstream answers it.
func (s *Server) handleConsumerGroupGet(w http.ResponseWriter, r *http.Request) error {
	group, err := scopedGroupParam(r)
	if err != nil {
		return err
	}
	d, err := s.broker.ConsumerGroup(r.Context(), scopeOf(r), group)
	if errors.Is(err, queue.ErrNotFound) {
		return writeJSON(w, http.StatusOK, api.ConsumerGroupDetail{})
	}
	if err != nil {
		return err
	}
	conflating, err := s.broker.ConflatingGroups(r.Context(), scopeOf(r), group)
	if err != nil {
		return err
	}
	out := make(api.ConsumerGroupDetail, len(d))
	for name, cursors := range d {
		parts := make([]api.ConsumerGroupPartition, len(cursors))
		for i, c := range cursors {
			parts[i] = api.ConsumerGroupPartition{
				Partition: c.Partition, WorkerID: optional(c.WorkerID), LastConsumedAt: optionalTime(c.LastConsumedAt),
				TotalConsumed: c.TotalConsumed, OffsetLag: c.OffsetLag, TimeLagSeconds: wholeSeconds(c.TimeLag),
				LeaseActive: c.LeaseActive,
			}
		}
		out[unscopeName(r, name)] = api.ConsumerGroupQueue{Partitions: parts,
			Conflation: conflating[queue.GroupQueue{Group: group, Queue: name}]}
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleConsumerGroupDelete is DELETE /api/v1/consumer-groups/{group} and
// DELETE /api/v1/consumer-groups/{group}/queues/{queue}: the group's
// cursors, leases and watermarks go, and its subscriptions too unless
// deleteMetadata is given and not true/1. 200 even when there was nothing to delete.
func (s *Server) handleConsumerGroupDelete(w http.ResponseWriter, r *http.Request) error {
	group, err := scopedGroupParam(r)
	if err != nil {
		return err
	}
	queueName := ""
	if hasPathParam(r, "queue") {
		if queueName, err = pathParam(r, "queue"); err != nil {
			return err
		}
		// Checked here: "" would tell the broker "every queue".
		if err := queue.CheckName("queue", queueName); err != nil {
			return err
		}
		if queueName, err = scopeName(r, "queue", queueName); err != nil {
			return err
		}
	}
	q := r.URL.Query()
	deleteMetadata := true
	if _, ok := queryString(q, "deleteMetadata"); ok {
		deleteMetadata = queryBool(q, "deleteMetadata")
	}
	n, err := s.broker.ConsumerGroupDelete(r.Context(), scopeOf(r), group, queueName, deleteMetadata)
	if err != nil {
		return err
	}
	group, queueName = unscopeName(r, group), unscopeName(r, queueName)
	if queueName == "" {
		return writeJSON(w, http.StatusOK, api.ConsumerGroupDeleteResponse{
			Success: true, ConsumerGroup: group, DeletedPartitions: n, MetadataDeleted: deleteMetadata,
		})
	}
	return writeJSON(w, http.StatusOK, api.ConsumerGroupQueueDeleteResponse{
		Success: true, ConsumerGroup: group, QueueName: queueName, DeletedPartitions: n, MetadataDeleted: deleteMetadata,
	})
}

// handleSubscriptionUpdate is POST /api/v1/consumer-groups/{group}/subscription:
// every subscription of the group moves to subscriptionTimestamp. A missing
// field is 400 "Missing subscriptionTimestamp in request body"; a non-string or
// unparsable one is 400 naming the field (upstream: 500).
func (s *Server) handleSubscriptionUpdate(w http.ResponseWriter, r *http.Request) error {
	group, err := scopedGroupParam(r)
	if err != nil {
		return err
	}
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	v, p := body.str("subscriptionTimestamp")
	switch p {
	case absent:
		return queue.Invalid("subscriptionTimestamp", "Missing subscriptionTimestamp in request body")
	case wrongType:
		return queue.Invalid("subscriptionTimestamp", "subscriptionTimestamp must be a string")
	}
	ts, err := parseTimestamp("subscriptionTimestamp", v)
	if err != nil {
		return err
	}
	n, err := s.broker.ConsumerGroupSubscriptionUpdate(r.Context(), scopeOf(r), group, ts)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.SubscriptionUpdateResponse{
		Success: true, ConsumerGroup: unscopeName(r, group), NewTimestamp: api.FormatMillis(ts), RowsUpdated: n,
	})
}

// handleConsumerGroupSeek is POST /api/v1/consumer-groups/{group}/queues/{queue}/seek:
// {"toEnd":true} or {"timestamp":"<RFC 3339>"}; toEnd wins when both are
// given. An unknown queue is 404 {"error":"Queue not found"} (upstream: 200 with
// partitionsUpdated 0).
func (s *Server) handleConsumerGroupSeek(w http.ResponseWriter, r *http.Request) error {
	group, err := scopedGroupParam(r)
	if err != nil {
		return err
	}
	queueName, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	stored, err := scopeName(r, "queue", queueName)
	if err != nil {
		return err
	}
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	var seek queue.ConsumerGroupSeek
	var p presence
	if seek.ToEnd, p = body.boolean("toEnd"); p == wrongType {
		return queue.Invalid("toEnd", "toEnd must be a boolean")
	}
	var target *string
	if !seek.ToEnd {
		v, p := body.str("timestamp")
		switch p {
		case absent:
			return queue.Invalid("timestamp", "Must specify either 'toEnd': true or 'timestamp'")
		case wrongType:
			return queue.Invalid("timestamp", "timestamp must be a string")
		}
		if seek.Timestamp, err = parseTimestamp("timestamp", v); err != nil {
			return err
		}
		target = api.String(api.FormatMillis(seek.Timestamp))
	}
	n, err := s.broker.ConsumerGroupSeek(r.Context(), group, stored, seek)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.SeekResponse{
		Success: true, ConsumerGroup: unscopeName(r, group), QueueName: queueName, SeekToEnd: seek.ToEnd,
		TargetTimestamp: target, PartitionsUpdated: n,
	})
}

// handlePartitionSeek is POST
// /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek: the
// group's cursor on that partition moves to its newest message and its lease
// is released. The body is never read. An unknown queue or partition is 404
// {"error":"Partition not found"} (upstream: 500).
func (s *Server) handlePartitionSeek(w http.ResponseWriter, r *http.Request) error {
	var names [3]string
	for i, key := range []string{"group", "queue", "partition"} {
		v, err := pathParam(r, key)
		if err != nil {
			return err
		}
		names[i] = v
	}
	group, queueName, partition := names[0], names[1], names[2]
	storedGroup, err := scopeGroup(r, "group", group)
	if err != nil {
		return err
	}
	storedQueue, err := scopeName(r, "queue", queueName)
	if err != nil {
		return err
	}
	res, err := s.broker.ConsumerGroupPartitionSeek(r.Context(), storedGroup, storedQueue, partition)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Partition not found", err)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.PartitionSeekResponse{
		Success: true, ConsumerGroup: group, QueueName: queueName, PartitionName: partition,
		Updated: res.Updated, CursorMovedTo: optionalTime(res.CursorMovedTo),
	})
}

// scopedGroupParam reads the {group} path parameter as a stored name of the request's
// scope.
func scopedGroupParam(r *http.Request) (string, error) {
	group, err := pathParam(r, "group")
	if err != nil {
		return "", err
	}
	return scopeGroup(r, "group", group)
}

// wholeSeconds truncates d to whole seconds.
func wholeSeconds(d time.Duration) int64 { return int64(d / time.Second) }

// parseTimestamp parses a timestamp body field as readTimestamp does. Anything else is
// a 400 naming field.
func parseTimestamp(field, v string) (time.Time, error) {
	if t, ok := readTimestamp(strings.TrimSpace(v)); ok {
		return t, nil
	}
	return time.Time{}, queue.Invalid(field, "%s must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05Z) in the years 0001–9999", field)
}
