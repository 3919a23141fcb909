package api

// Values of [Health.Status] and [Health.Database].
const (
	// HealthStatusHealthy is the status when the database check passed (HTTP 200).
	HealthStatusHealthy = "healthy"
	// HealthStatusUnhealthy is the status when it failed (HTTP 503).
	HealthStatusUnhealthy = "unhealthy"
	// DatabaseConnected is the database state when the check passed.
	DatabaseConnected = "connected"
	// DatabaseDisconnected is the database state when it failed.
	DatabaseDisconnected = "disconnected"
)

// Health is the body of GET /health, the same shape with 200 and 503. The CLI reads
// Status, Database and Version.
type Health struct {
	// Status is [HealthStatusHealthy] or [HealthStatusUnhealthy].
	Status string `json:"status"`
	// Database is [DatabaseConnected] or [DatabaseDisconnected].
	Database string `json:"database"`
	// Server is free text identifying the server.
	Server string `json:"server"`
	// WorkerID identifies the serving worker.
	WorkerID int `json:"worker_id"`
	// Version is the server version.
	Version string `json:"version"`
	// SharedState is the cluster shared-state object, at least {"enabled":false}.
	SharedState map[string]any `json:"shared_state"`
	// Queen is e.g. {"worker_id":3,"status":"active"}.
	Queen map[string]any `json:"queen"`
}
