package httpapi

import (
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The peer and diagnostics routes of the upstream broker, which its replicas and
// operators call. queen's replicas share nothing but PostgreSQL, so there is no cluster
// cache to report; a wake-up is a push's own: local waiters at once, the other replicas
// through PostgreSQL.

// handleNotify is POST /internal/api/notify {"queue", "partition"?}: it wakes the
// pops parked on the queue, here and on the other replicas. A partition, when given,
// is checked as a name; the wake-up reaches every pop of the queue, that partition's
// included.
func (s *Server) handleNotify(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	name, p := body.str("queue")
	if p != present || name == "" {
		return queue.Invalid("queue", "queue is required")
	}
	if err := queue.CheckName("queue", name); err != nil {
		return err
	}
	if partition, err := body.optString("partition", "partition"); err != nil {
		return err
	} else if partition != "" {
		if err := queue.CheckName("partition", partition); err != nil {
			return err
		}
	}
	s.broker.Wake(scopeOf(r).Stored(name))
	return writeJSON(w, http.StatusOK, api.Notified{Status: "ok"})
}

// handleSharedState is GET /api/v1/system/shared-state and its two internal aliases:
// disabled, with the reason, and this broker's cached maintenance flags.
func (s *Server) handleSharedState(w http.ResponseWriter, _ *http.Request) error {
	push, pop := s.broker.Paused()
	return writeJSON(w, http.StatusOK, api.SharedState{
		Reason:          "queen keeps no shared state between replicas: they share PostgreSQL only",
		MaintenanceMode: push, PopMaintenanceMode: pop,
	})
}
