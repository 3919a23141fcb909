package httpapi

import (
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The cluster views: the replicas' heartbeat rows, the long-polls parked on this
// broker, and the consumer groups' lag history sampled by a maintenance job.

// handleReplicas is GET /api/v1/system/replicas: the heartbeat row of every replica
// that wrote one within the last hour, stale ones flagged.
func (s *Server) handleReplicas(w http.ResponseWriter, r *http.Request) error {
	out, err := s.analytics.Replicas(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleLongPolls is GET /api/v1/system/longpolls?queue=: the long-poll pops parked
// on this broker (not the cluster) now, by queue, consumer group and partition. It
// reads memory only.
func (s *Server) handleLongPolls(w http.ResponseWriter, r *http.Request) error {
	name, _ := queryString(r.URL.Query(), "queue")
	if name != "" {
		if err := queue.CheckName("queue", name); err != nil {
			return err
		}
	}
	groups, truncated := s.broker.LongPolls(name)
	now := time.Now()
	out := api.LongPollList{Instance: s.broker.Config().Instance, Total: s.broker.ParkedPolls(),
		Waiters: make([]api.LongPollWaiter, 0, len(groups)), Truncated: truncated}
	for _, g := range groups {
		out.Waiters = append(out.Waiters, api.LongPollWaiter{Queue: g.Queue, ConsumerGroup: g.ConsumerGroup,
			Partition: g.Partition, Count: g.Count, OldestParkedSeconds: max(now.Sub(g.OldestParkedAt).Seconds(), 0)})
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleConsumerLag is GET /api/v1/analytics/consumer-lag?group&queue&from&to.
func (s *Server) handleConsumerLag(w http.ResponseWriter, r *http.Request) error {
	f, err := viewFilter(r)
	if err != nil {
		return err
	}
	f.Group, _ = queryString(r.URL.Query(), "group")
	out, err := s.analytics.ConsumerLag(r.Context(), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}
