package httpapi

import (
	"net/http"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// Maintenance modes (spec §9.10, semantics.md §12.1–12.2) are two cluster-wide flags
// in queen.system_state; every broker re-reads them every 2 s. Push maintenance:
// upstream buffers pushes to a local file and replays them later; queen has no such
// spool yet, so /push answers 503 unavailable (nothing stored, safe to retry) while
// it is on. Transactions are not affected (as upstream). Pop maintenance: every pop
// answers 204 at once.

const (
	msgPushMaintenanceOn  = "Maintenance mode enabled: pushes are refused with 503 until it is turned off (this broker has no file buffer, so nothing is buffered)"
	msgPushMaintenanceOff = "Maintenance mode disabled: pushes are written to the database"
	msgPopMaintenanceOn   = "Pop maintenance mode enabled: every pop answers 204 (no messages) until it is turned off"
	msgPopMaintenanceOff  = "Pop maintenance mode disabled: pops deliver messages"
)

// maintenanceStatus renders the GET /system/maintenance body. There is no buffer:
// nothing is ever buffered, and the "buffer" is unhealthy exactly while push
// maintenance refuses pushes.
func maintenanceStatus(push, pop bool) api.MaintenanceStatus {
	return api.MaintenanceStatus{
		MaintenanceMode: push, PopMaintenanceMode: pop, BufferedMessages: 0, BufferHealthy: !push,
		BufferStats: api.BufferStats{DBHealthy: true},
	}
}

// handleMaintenanceGet is GET /api/v1/system/maintenance: both flags, read from the
// database (a failed read is 503, so bufferStats.dbHealthy is true whenever it is
// answered).
func (s *Server) handleMaintenanceGet(w http.ResponseWriter, r *http.Request) error {
	push, pop, err := s.broker.MaintenanceStatus(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, maintenanceStatus(push, pop))
}

// handleMaintenanceSet is POST /api/v1/system/maintenance {"enabled":bool}.
func (s *Server) handleMaintenanceSet(w http.ResponseWriter, r *http.Request) error {
	enabled, err := readEnabled(r)
	if err != nil {
		return err
	}
	push, _, err := s.broker.SetPushMaintenance(r.Context(), enabled)
	if err != nil {
		return err
	}
	msg := msgPushMaintenanceOff
	if push {
		msg = msgPushMaintenanceOn
	}
	return writeJSON(w, http.StatusOK, api.MaintenanceToggle{
		MaintenanceMode: push, BufferedMessages: 0, BufferHealthy: !push, Message: msg,
	})
}

// handlePopMaintenanceGet is GET /api/v1/system/maintenance/pop.
func (s *Server) handlePopMaintenanceGet(w http.ResponseWriter, r *http.Request) error {
	_, pop, err := s.broker.MaintenanceStatus(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, popMaintenance(pop))
}

// handlePopMaintenanceSet is POST /api/v1/system/maintenance/pop {"enabled":bool}.
func (s *Server) handlePopMaintenanceSet(w http.ResponseWriter, r *http.Request) error {
	enabled, err := readEnabled(r)
	if err != nil {
		return err
	}
	_, pop, err := s.broker.SetPopMaintenance(r.Context(), enabled)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, popMaintenance(pop))
}

func popMaintenance(on bool) api.PopMaintenance {
	if on {
		return api.PopMaintenance{PopMaintenanceMode: true, Message: msgPopMaintenanceOn}
	}
	return api.PopMaintenance{PopMaintenanceMode: false, Message: msgPopMaintenanceOff}
}

// readEnabled reads the body {"enabled": true|false}; anything else but an empty or
// malformed body (§1.4) is 400 "enabled (boolean) is required".
func readEnabled(r *http.Request) (bool, error) {
	body, err := readObject(r, false)
	if err != nil {
		return false, err
	}
	enabled, p := body.boolean("enabled")
	if p != present {
		return false, queue.Invalid("enabled", "enabled (boolean) is required")
	}
	return enabled, nil
}

// handleStatsRefresh is POST /api/v1/stats/refresh (spec §9.1; the body is ignored).
// queen has no statistics cache: the resource and status views are computed live.
// What a refresh can do is write this broker's activity counters, including the
// current minute, to the analytics tables now; it answers what it wrote.
func (s *Server) handleStatsRefresh(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.broker.FlushActivity(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.StatsRefresh{Refreshed: true, Mode: "live", Flushed: api.FlushedStats{
		Minutes: rep.Minutes, QueueRows: rep.QueueRows, WorkerRows: rep.WorkerRows, ParkedRows: rep.ParkedRows,
		SystemRows: rep.SystemRows,
	}})
}
