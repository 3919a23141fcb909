package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// healthTimeout bounds the database ping of the health routes.
const healthTimeout = 2 * time.Second

// serverName is the free-text "server" of GET /health.
const serverName = "queen"

// readiness is the body of GET /health/live and GET /health/ready.
type readiness struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Database and Spool are set during a database outage: "unreachable", and
	// "accepting" when pushes go to the disk spool meanwhile.
	Database string `json:"database,omitempty"`
	Spool    string `json:"spool,omitempty"`
}

// handleHealth is GET /health: the upstream-compatible check, 200
// healthy/connected when the database answers a ping within 2 s, else 503
// unhealthy/disconnected, with the same body shape.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	h := api.Health{
		Status: api.HealthStatusHealthy, Database: api.DatabaseConnected, Server: serverName,
		WorkerID: 0, Version: s.opts.Version,
		SharedState: map[string]any{"enabled": false},
		Queen:       map[string]any{"worker_id": 0, "status": "active"},
	}
	status := http.StatusOK
	if err := s.ping(r); err != nil {
		if r.Context().Err() != nil {
			return err
		}
		h.Status, h.Database = api.HealthStatusUnhealthy, api.DatabaseDisconnected
		status = http.StatusServiceUnavailable
	}
	return writeJSON(w, status, h)
}

// handleLive is GET /health/live: 200 {"status":"alive"} while the process serves
// HTTP and the broker's registry of parked long-polls can be locked. It never touches
// the database: an outage is a reason to be not ready, never to be restarted.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) error {
	if s.broker != nil {
		_ = s.broker.ParkedPolls() // hangs, and fails the probe by its timeout, if the lock is stuck
	}
	return writeJSON(w, http.StatusOK, readiness{Status: "alive"})
}

// handleReady is GET /health/ready: 200 {"status":"ready"} when ReadyFunc (if any)
// passes (schema applied, not draining) and the database answers a ping; during a
// database outage it stays 200, with "database":"unreachable" and "spool":"accepting",
// as long as the disk spool takes pushes; else 503 {"status":"not_ready","error":...}.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) error {
	if s.opts.ReadyFunc != nil {
		if err := s.opts.ReadyFunc(r.Context()); err != nil {
			return writeJSON(w, http.StatusServiceUnavailable, readiness{Status: "not_ready", Error: err.Error()})
		}
	}
	if err := s.ping(r); err != nil {
		if r.Context().Err() != nil {
			return err
		}
		if s.broker.SpoolAccepting() {
			return writeJSON(w, http.StatusOK, readiness{Status: "ready", Database: "unreachable", Spool: "accepting"})
		}
		return writeJSON(w, http.StatusServiceUnavailable, readiness{Status: "not_ready",
			Error: "database unreachable and no disk spool to take pushes", Database: "unreachable"})
	}
	return writeJSON(w, http.StatusOK, readiness{Status: "ready"})
}

// ping checks the database within healthTimeout; a failure is logged at Warn (the
// answer only says "unreachable").
func (s *Server) ping(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	err := s.broker.Ping(ctx)
	if err != nil && r.Context().Err() == nil {
		s.logger.LogAttrs(r.Context(), slog.LevelWarn, "health check: database ping failed",
			slog.String("request_id", requestIDFrom(r.Context())), slog.Any("err", err))
	}
	return err
}
