package httpapi

import (
	"net/http"
)

// The /api/v1/analytics/* routes answer the reports of the broker's analytics
// service, built from the per-minute tables the brokers' activity recorders fill,
// retention_history and the PostgreSQL statistics views. Every read is bounded by
// its window (default the last hour, at most 366 days) and a row limit.

// handleSystemMetrics is GET /api/v1/analytics/system-metrics: per broker
// process, a series of {avg,min,max,last} summaries of its 1 Hz process samples.
func (s *Server) handleSystemMetrics(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.SystemMetrics)
}

// handleWorkerMetrics is GET /api/v1/analytics/worker-metrics.
func (s *Server) handleWorkerMetrics(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.WorkerMetrics)
}

// handleQueueLag is GET /api/v1/analytics/queue-lag: a top-level array
// of per-(bucket, queue) pop lag, newest first, for buckets with deliveries. This
// route and the next two serve a tenant request its own queues.
func (s *Server) handleQueueLag(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.QueueLag)
}

// handleQueueOps is GET /api/v1/analytics/queue-ops.
func (s *Server) handleQueueOps(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.QueueOps)
}

// handleParkedReplicas is GET /api/v1/analytics/queue-parked-replicas; a tenant
// request gets its queues' parked averages summed over replicas, naming none.
func (s *Server) handleParkedReplicas(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.ParkedReplicas)
}

// handleRetention is GET /api/v1/analytics/retention: what the retention and
// eviction jobs deleted, per bucket.
func (s *Server) handleRetention(w http.ResponseWriter, r *http.Request) error {
	return answerView(w, r, s.analytics.Retention)
}

// handlePostgresStats is GET /api/v1/analytics/postgres-stats: one jsonb object
// built by PostgreSQL, written as it is.
func (s *Server) handlePostgresStats(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.analytics.PostgresStats(r.Context())
	if err != nil {
		return err
	}
	writeBytes(w, http.StatusOK, doc)
	return nil
}
