package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// The push/pop pause, which the HTTP API (/api/v1/system/maintenance[/pop]) and the
// original project call maintenance mode: two cluster-wide flags in
// queen.system_state; every broker re-reads them every 2 s. Push pause:
// every push goes to the broker's disk spool (201 "buffered") and the spool is
// replayed into PostgreSQL once the mode is off; transactions are not affected (as
// upstream). Pop pause: every pop answers 204 at once.

const (
	msgPushPauseOn  = "Maintenance mode enabled: pushes are written to this broker's disk spool (answered buffered) and replayed into the database when it is turned off"
	msgPushPauseOff = "Maintenance mode disabled: pushes are written to the database; buffered messages are being replayed"
	msgPopPauseOn   = "Pop maintenance mode enabled: every pop answers 204 (no messages) until it is turned off"
	msgPopPauseOff  = "Pop maintenance mode disabled: pops deliver messages"
	// msgNoSpool: a broker built without a spool (tests) refuses pushes while they
	// are paused instead.
	msgNoSpool = "this broker has no spool: pushes are refused with 503 while push maintenance is on"
)

// bufferStats renders the spool of this broker in upstream's bufferStats shape, and
// whether it can take pushes (without a spool: unless the push pause refuses them).
func (s *Server) bufferStats(dbHealthy, push bool) (api.BufferStats, bool) {
	st, ok := s.broker.SpoolStats()
	out := api.BufferStats{
		PendingCount: st.PendingRecords, FailedCount: st.QuarantinedRecords, DBHealthy: dbHealthy,
		FailedFiles: api.FailedFiles{
			Count: st.DeadFiles, TotalBytes: st.DeadBytes, TotalMB: float64(st.DeadBytes) / (1 << 20),
			FailoverCount: st.DeadFiles,
		},
		PendingBytes: st.PendingBytes, CorruptRegions: st.CorruptRegions, LastError: st.LastError,
	}
	if !st.OldestPending.IsZero() {
		out.OldestPendingAgeSeconds = max(time.Since(st.OldestPending).Seconds(), 0)
	}
	if !ok {
		return out, !push
	}
	return out, st.Healthy
}

// handlePushPauseGet is GET /api/v1/system/maintenance: both flags, read from the
// database, and this broker's spool. When the database cannot be reached the cached
// flags are answered with bufferStats.dbHealthy false (the spool is what an operator
// needs to see during an outage).
func (s *Server) handlePushPauseGet(w http.ResponseWriter, r *http.Request) error {
	push, pop, err := s.broker.PauseStatus(r.Context())
	dbHealthy := err == nil
	if err != nil {
		if !errors.Is(err, queue.ErrUnavailable) || r.Context().Err() != nil {
			return err
		}
		push, pop = s.broker.Paused()
	}
	stats, healthy := s.bufferStats(dbHealthy, push)
	return writeJSON(w, http.StatusOK, api.MaintenanceStatus{
		MaintenanceMode: push, PopMaintenanceMode: pop, BufferedMessages: stats.PendingCount,
		BufferHealthy: healthy, BufferStats: stats,
	})
}

// handlePushPauseSet is POST /api/v1/system/maintenance {"enabled":bool}.
func (s *Server) handlePushPauseSet(w http.ResponseWriter, r *http.Request) error {
	enabled, err := readEnabled(r)
	if err != nil {
		return err
	}
	push, _, err := s.broker.SetPushPause(r.Context(), enabled)
	if err != nil {
		return err
	}
	stats, healthy := s.bufferStats(true, push)
	msg := msgPushPauseOff
	switch _, hasSpool := s.broker.SpoolStats(); {
	case push && !hasSpool:
		msg = msgNoSpool
	case push:
		msg = msgPushPauseOn
	}
	return writeJSON(w, http.StatusOK, api.MaintenanceToggle{
		MaintenanceMode: push, BufferedMessages: stats.PendingCount, BufferHealthy: healthy, Message: msg,
	})
}

// handlePopPauseGet is GET /api/v1/system/maintenance/pop: the flag read from the
// database, or the cached one when the database cannot be reached (as the push flag's
// route answers).
func (s *Server) handlePopPauseGet(w http.ResponseWriter, r *http.Request) error {
	_, pop, err := s.broker.PauseStatus(r.Context())
	if err != nil {
		if !errors.Is(err, queue.ErrUnavailable) || r.Context().Err() != nil {
			return err
		}
		_, pop = s.broker.Paused()
	}
	return writeJSON(w, http.StatusOK, popPauseStatus(pop))
}

// handlePopPauseSet is POST /api/v1/system/maintenance/pop {"enabled":bool}.
func (s *Server) handlePopPauseSet(w http.ResponseWriter, r *http.Request) error {
	enabled, err := readEnabled(r)
	if err != nil {
		return err
	}
	_, pop, err := s.broker.SetPopPause(r.Context(), enabled)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, popPauseStatus(pop))
}

func popPauseStatus(on bool) api.PopMaintenance {
	if on {
		return api.PopMaintenance{PopMaintenanceMode: true, Message: msgPopPauseOn}
	}
	return api.PopMaintenance{PopMaintenanceMode: false, Message: msgPopPauseOff}
}

// readEnabled reads the body {"enabled": true|false}; anything else but an empty or
// malformed body (which readObject refuses itself) is 400 "enabled (boolean) is
// required".
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

// handleStatsRefresh is POST /api/v1/stats/refresh (the body is ignored).
// queen has no statistics cache: the resource and status views are computed live.
// What a refresh can do is write this broker's activity counters, including the
// current minute, to the analytics tables now; it answers what it wrote.
func (s *Server) handleStatsRefresh(w http.ResponseWriter, r *http.Request) error {
	flushed, err := s.analytics.Flush(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.StatsRefresh{Refreshed: true, Mode: "live", Flushed: flushed})
}
