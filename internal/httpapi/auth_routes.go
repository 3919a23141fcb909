package httpapi

import "github.com/queenmq/queen/internal/auth"

// routeLevels is the access level of every route, keyed "METHOD pattern" with the
// pattern exactly as registered with chi, following the Auth column of the upstream
// route list (docs/security.md has the operator's summary). It also lists upstream
// routes that are not registered yet, so they get the right level when they are.
//
// Registering a route without a row here fails TestEveryRouteHasALevel; at run time
// such a route is treated as admin-only (routeLevel), never as open.
var routeLevels = map[string]auth.Level{
	// Public: health, metrics and the dashboard's static files. OPTIONS never gets
	// here: the CORS middleware answers every preflight before authentication. The
	// dashboard is served by the router's not-found handler, which authentication lets
	// through (what routes nowhere needs no token); its rows say what it serves.
	"GET /health":             auth.Public,
	"HEAD /health":            auth.Public,
	"GET /health/live":        auth.Public,
	"HEAD /health/live":       auth.Public,
	"GET /health/ready":       auth.Public,
	"HEAD /health/ready":      auth.Public,
	"GET /metrics":            auth.Public,
	"GET /metrics/prometheus": auth.Public,
	"GET /":                   auth.Public,
	"GET /assets/*":           auth.Public,
	"GET /favicon.ico":        auth.Public,
	"GET /*":                  auth.Public, // SPA fallback; it never serves /api/ paths
	// The broker's /auth/* answers (handlers_compat.go); the 1.x liveness
	// GET /status is read-only, as on a 1.x broker.
	"GET /status":       auth.ReadOnly,
	"HEAD /status":      auth.ReadOnly,
	"GET /auth/me":      auth.Public,
	"GET /auth/login":   auth.Public,
	"POST /auth/logout": auth.Public,

	// The 1.x ephemeral family, not built: every route answers 404
	// ephemeral_unsupported, behind the level it has on a 1.x broker.
	"POST /api/v1/ephemeral/push":                auth.WriteOnly, // 1.x: write-only
	"GET /api/v1/ephemeral/pop":                  auth.ReadWrite,
	"POST /api/v1/ephemeral/ack":                 auth.ReadWrite,
	"POST /api/v1/ephemeral/configure":           auth.ReadWrite,
	"POST /api/v1/ephemeral/reset":               auth.ReadWrite,
	"DELETE /api/v1/ephemeral/queue/{queue}":     auth.ReadWrite,
	"GET /api/v1/ephemeral/queues":               auth.ReadOnly,
	"GET /api/v1/ephemeral/queues/{queue}/depth": auth.ReadOnly,
	"GET /api/v1/system/ephemeral":               auth.Admin,
	"POST /api/v1/system/ephemeral":              auth.Admin,

	// Write-only: producing, and nothing else. The Queen 1.x write-only role passes
	// these routes only; read-write and admin pass them too, read-only does not.
	"POST /api/v1/push":   auth.WriteOnly,
	"POST /api/v1/timers": auth.WriteOnly,

	// Read-write: consuming (pop is a GET that consumes) and changing queues.
	"POST /api/v1/configure":                                    auth.ReadWrite,
	"GET /api/v1/pop":                                           auth.ReadWrite,
	"GET /api/v1/pop/queue/{queue}":                             auth.ReadWrite,
	"GET /api/v1/pop/queue/{queue}/partition/{partition}":       auth.ReadWrite,
	"POST /api/v1/ack":                                          auth.ReadWrite,
	"POST /api/v1/ack/batch":                                    auth.ReadWrite,
	"POST /api/v1/transaction":                                  auth.ReadWrite,
	"POST /api/v1/kv":                                           auth.ReadWrite,
	"PUT /api/v1/kv/{ns}/*":                                     auth.ReadWrite,
	"DELETE /api/v1/kv/{ns}/*":                                  auth.ReadWrite,
	"GET /api/v1/kv/{ns}/*":                                     auth.ReadOnly,
	"GET /api/v1/resources/kv/namespaces":                       auth.ReadOnly,
	"POST /api/v1/resources/kv/list":                            auth.ReadOnly,
	"POST /api/v1/lease/{leaseId}/extend":                       auth.ReadWrite,
	"DELETE /api/v1/messages/{partitionId}/{transactionId}":     auth.ReadWrite,
	"POST /api/v1/messages/{partitionId}/{transactionId}/retry": auth.ReadWrite,
	"POST /api/v1/messages/{partitionId}/{transactionId}/dlq":   auth.ReadWrite,
	"POST /api/v1/dlq/requeue":                                  auth.ReadWrite,
	"POST /api/v1/dlq/{id}/replay":                              auth.ReadWrite,
	"POST /api/v1/traces":                                       auth.ReadWrite,
	"POST /api/v1/consumer-groups/{group}/subscription":         auth.ReadWrite,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/seek":  auth.ReadWrite,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek": auth.ReadWrite,
	"POST /streams/v1/queries": auth.ReadWrite,
	"POST /streams/v1/cycle":   auth.ReadWrite,

	// Timers (handlers_timers.go): POST is write-only above; reading is read-only and
	// cancelling by path read-write, as in 1.x.
	"GET /api/v1/timers/{queue}":      auth.ReadOnly,
	"GET /api/v1/timers/{queue}/*":    auth.ReadOnly,
	"DELETE /api/v1/timers/{queue}/*": auth.ReadWrite,

	// Read-only: inspection.
	"GET /api/v1/resources/overview":                     auth.ReadOnly,
	"GET /api/v1/resources/queues":                       auth.ReadOnly,
	"GET /api/v1/resources/queues/{queue}":               auth.ReadOnly,
	"GET /api/v1/resources/queues/{queue}/depth":         auth.ReadOnly,
	"GET /api/v1/resources/namespaces":                   auth.ReadOnly,
	"GET /api/v1/resources/tasks":                        auth.ReadOnly,
	"GET /api/v1/resources/partitions":                   auth.ReadOnly,
	"GET /api/v1/messages":                               auth.ReadOnly,
	"GET /api/v1/messages/{partitionId}/{transactionId}": auth.ReadOnly,
	"GET /api/v1/dlq":                                    auth.ReadOnly,
	"GET /api/v1/auth/whoami":                            auth.ReadOnly,
	"GET /api/v1/traces/names":                           auth.ReadOnly,
	"GET /api/v1/traces/by-name/{traceName}":             auth.ReadOnly,
	"GET /api/v1/traces/{partitionId}/{transactionId}":   auth.ReadOnly,
	"GET /api/v1/status":                                 auth.ReadOnly,
	"GET /api/v1/status/queues":                          auth.ReadOnly,
	"GET /api/v1/status/queues/{queue}":                  auth.ReadOnly,
	"GET /api/v1/status/queues/{queue}/messages":         auth.ReadOnly,
	"GET /api/v1/status/analytics":                       auth.ReadOnly,
	"GET /api/v1/status/buffers":                         auth.ReadOnly,
	"GET /api/v1/analytics/system-metrics":               auth.ReadOnly,
	"GET /api/v1/analytics/worker-metrics":               auth.ReadOnly,
	"GET /api/v1/analytics/queue-lag":                    auth.ReadOnly,
	"GET /api/v1/analytics/queue-ops":                    auth.ReadOnly,
	"GET /api/v1/analytics/queue-parked-replicas":        auth.ReadOnly,
	"GET /api/v1/analytics/retention":                    auth.ReadOnly,
	"GET /api/v1/analytics/postgres-stats":               auth.ReadOnly,
	"GET /api/v1/consumer-groups":                        auth.ReadOnly,
	"GET /api/v1/consumer-groups/lagging":                auth.ReadOnly,
	"GET /api/v1/consumer-groups/{group}":                auth.ReadOnly,
	"POST /streams/v1/state/get":                         auth.ReadOnly, // a POST that only reads
	"GET /streams/v1/queries":                            auth.ReadOnly,
	"GET /streams/v1/queries/{name}":                     auth.ReadOnly,

	"GET /api/v1/analytics/consumer-lag": auth.ReadOnly,

	// Admin: destructive and cluster-wide operations, every /api/v1/system/* route,
	// migration and the peer routes under /internal/.
	"GET /api/v1/system/replicas":                           auth.Admin,
	"GET /api/v1/system/longpolls":                          auth.Admin,
	"DELETE /api/v1/resources/queues/{queue}":               auth.Admin,
	"DELETE /api/v1/dlq":                                    auth.Admin,
	"DELETE /api/v1/queues/{queue}/clear":                   auth.Admin,
	"POST /api/v1/stats/refresh":                            auth.Admin,
	"DELETE /api/v1/consumer-groups/{group}":                auth.Admin,
	"DELETE /api/v1/consumer-groups/{group}/queues/{queue}": auth.Admin,
	"GET /api/v1/system/maintenance":                        auth.Admin,
	"POST /api/v1/system/maintenance":                       auth.Admin,
	"GET /api/v1/system/maintenance/pop":                    auth.Admin,
	"POST /api/v1/system/maintenance/pop":                   auth.Admin,
	"GET /api/v1/system/shared-state":                       auth.Admin,
	"POST /api/v1/migration/test-connection":                auth.Admin,
	"POST /api/v1/migration/start":                          auth.Admin,
	"GET /api/v1/migration/status":                          auth.Admin,
	"POST /api/v1/migration/validate":                       auth.Admin,
	"POST /api/v1/migration/reset":                          auth.Admin,
	"POST /internal/api/notify":                             auth.Admin,
	"GET /internal/api/shared-state/stats":                  auth.Admin,
	"GET /internal/api/inter-instance/stats":                auth.Admin,
	"GET /internal/api/tenancy":                             auth.Admin,
	"GET /internal/api/tenancy/usage":                       auth.Admin,
	"POST /internal/api/tenancy/fence":                      auth.Admin,
	"GET /internal/api/tenancy/export/heads":                auth.Admin,
	"POST /internal/api/tenancy/export/messages":            auth.Admin,
	"POST /internal/api/tenancy/export/ids":                 auth.Admin,
	"GET /internal/api/tenancy/export/state":                auth.Admin,
	"POST /internal/api/tenancy/import/state":               auth.Admin,
	"POST /internal/api/tenancy/import/messages":            auth.Admin,
	"POST /internal/api/tenancy/import/prune":               auth.Admin,
	"POST /internal/api/tenancy/drop":                       auth.Admin,
	"POST /streams/v1/queries/{name}/reset":                 auth.Admin,
	"DELETE /streams/v1/queries/{name}":                     auth.Admin,
}

// routeLevel is the level of a routed pattern: its row of routeLevels, or Admin, the
// strictest, for a route someone forgot to list.
func routeLevel(method, pattern string) auth.Level {
	if l, ok := routeLevels[method+" "+pattern]; ok {
		return l
	}
	return auth.Admin
}

// tenantScope is what a tenant request (QUEEN_TENANCY_HEADER on, and a tenant named
// by the header or the token's claim) may do on each route, keyed like routeLevels.
// A route without a row is tenantPending: refused to tenants, never served unscoped.
// TestEveryRouteHasATenantRule fails when a row of routeLevels has no row here.
var tenantScope = map[string]tenantRule{
	// Timers are keyed by the stored (tenant-prefixed) queue name.
	"POST /api/v1/timers":             tenantScoped,
	"GET /api/v1/timers/{queue}":      tenantScoped,
	"GET /api/v1/timers/{queue}/*":    tenantScoped,
	"DELETE /api/v1/timers/{queue}/*": tenantScoped,

	// The header is ignored: health, metrics and the dashboard's static files.
	"GET /health": tenantIgnored, "HEAD /health": tenantIgnored,
	"GET /health/live": tenantIgnored, "HEAD /health/live": tenantIgnored,
	"GET /health/ready": tenantIgnored, "HEAD /health/ready": tenantIgnored,
	"GET /metrics": tenantIgnored, "GET /metrics/prometheus": tenantIgnored,
	"GET /": tenantIgnored, "GET /assets/*": tenantIgnored, "GET /favicon.ico": tenantIgnored,
	"GET /*": tenantIgnored,
	// Nothing of a tenant's: the 1.x liveness, the /auth/* answers and the
	// ephemeral family's 404 are the same for every request.
	"GET /status": tenantIgnored, "HEAD /status": tenantIgnored,
	"GET /auth/me": tenantIgnored, "GET /auth/login": tenantIgnored, "POST /auth/logout": tenantIgnored,
	"POST /api/v1/ephemeral/push": tenantIgnored, "GET /api/v1/ephemeral/pop": tenantIgnored,
	"POST /api/v1/ephemeral/ack": tenantIgnored, "POST /api/v1/ephemeral/configure": tenantIgnored,
	"POST /api/v1/ephemeral/reset": tenantIgnored, "DELETE /api/v1/ephemeral/queue/{queue}": tenantIgnored,
	"GET /api/v1/ephemeral/queues": tenantIgnored, "GET /api/v1/ephemeral/queues/{queue}/depth": tenantIgnored,
	"GET /api/v1/system/ephemeral": tenantIgnored, "POST /api/v1/system/ephemeral": tenantIgnored,

	// Scoped: names are the tenant's, stored with its prefix and answered without it;
	// listings and counters cover the tenant's queues; ids of another tenant's
	// partitions, messages and leases answer as nonexistent.
	"POST /api/v1/configure":                                    tenantScoped,
	"POST /api/v1/push":                                         tenantScoped,
	"POST /api/v1/transaction":                                  tenantScoped,
	"POST /api/v1/kv":                                           tenantScoped, // KV rows are the tenant's
	"GET /api/v1/kv/{ns}/*":                                     tenantScoped,
	"PUT /api/v1/kv/{ns}/*":                                     tenantScoped,
	"DELETE /api/v1/kv/{ns}/*":                                  tenantScoped,
	"GET /api/v1/resources/kv/namespaces":                       tenantScoped,
	"POST /api/v1/resources/kv/list":                            tenantScoped,
	"GET /api/v1/pop":                                           tenantScoped,
	"GET /api/v1/pop/queue/{queue}":                             tenantScoped,
	"GET /api/v1/pop/queue/{queue}/partition/{partition}":       tenantScoped,
	"POST /api/v1/ack":                                          tenantScoped,
	"POST /api/v1/ack/batch":                                    tenantScoped,
	"POST /api/v1/lease/{leaseId}/extend":                       tenantScoped,
	"GET /api/v1/resources/queues":                              tenantScoped,
	"GET /api/v1/resources/queues/{queue}":                      tenantScoped,
	"GET /api/v1/resources/queues/{queue}/depth":                tenantScoped,
	"DELETE /api/v1/resources/queues/{queue}":                   tenantScoped,
	"GET /api/v1/resources/namespaces":                          tenantScoped,
	"GET /api/v1/resources/tasks":                               tenantScoped,
	"GET /api/v1/resources/partitions":                          tenantScoped,
	"GET /api/v1/messages":                                      tenantScoped,
	"GET /api/v1/messages/{partitionId}/{transactionId}":        tenantScoped,
	"DELETE /api/v1/messages/{partitionId}/{transactionId}":     tenantScoped,
	"POST /api/v1/messages/{partitionId}/{transactionId}/retry": tenantScoped,
	"GET /api/v1/dlq":                                           tenantScoped,
	"DELETE /api/v1/dlq":                                        tenantScoped,
	"POST /api/v1/dlq/requeue":                                  tenantScoped,
	"POST /api/v1/dlq/{id}/replay":                              tenantScoped,
	"POST /api/v1/traces":                                       tenantScoped,
	"GET /api/v1/traces/names":                                  tenantScoped,
	"GET /api/v1/traces/by-name/{traceName}":                    tenantScoped,
	"GET /api/v1/traces/{partitionId}/{transactionId}":          tenantScoped,
	"GET /api/v1/consumer-groups":                               tenantScoped,
	"GET /api/v1/consumer-groups/lagging":                       tenantScoped,
	"GET /api/v1/consumer-groups/{group}":                       tenantScoped,
	"DELETE /api/v1/consumer-groups/{group}":                    tenantScoped,
	"DELETE /api/v1/consumer-groups/{group}/queues/{queue}":     tenantScoped,
	"POST /api/v1/consumer-groups/{group}/subscription":         tenantScoped,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/seek":  tenantScoped,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek": tenantScoped,
	"GET /api/v1/status/queues":                  tenantScoped,
	"GET /api/v1/status/queues/{queue}":          tenantScoped,
	"GET /api/v1/status/queues/{queue}/messages": tenantScoped,
	"GET /api/v1/auth/whoami":                    tenantScoped, // names no queue
	// The analytics service's reports count the tenant's queues only; their
	// per-broker parts (workers, process gauges, replicas) are empty or zero.
	"GET /api/v1/status":                          tenantScoped,
	"GET /api/v1/status/analytics":                tenantScoped,
	"GET /api/v1/resources/overview":              tenantScoped,
	"GET /api/v1/analytics/queue-lag":             tenantScoped,
	"GET /api/v1/analytics/queue-ops":             tenantScoped,
	"GET /api/v1/analytics/queue-parked-replicas": tenantScoped,

	// Global only: cluster-wide state and operations, never a tenant's.
	"GET /api/v1/system/maintenance":         tenantGlobal,
	"POST /api/v1/system/maintenance":        tenantGlobal,
	"GET /api/v1/system/maintenance/pop":     tenantGlobal,
	"POST /api/v1/system/maintenance/pop":    tenantGlobal,
	"GET /api/v1/system/shared-state":        tenantGlobal,
	"GET /api/v1/system/replicas":            tenantGlobal,
	"GET /api/v1/system/longpolls":           tenantGlobal,
	"POST /api/v1/migration/test-connection": tenantGlobal,
	"POST /api/v1/migration/start":           tenantGlobal,
	"GET /api/v1/migration/status":           tenantGlobal,
	"POST /api/v1/migration/validate":        tenantGlobal,
	"POST /api/v1/migration/reset":           tenantGlobal,
	"POST /internal/api/notify":              tenantGlobal,
	"GET /internal/api/shared-state/stats":   tenantGlobal,
	"GET /internal/api/inter-instance/stats": tenantGlobal,
	"GET /internal/api/tenancy":              tenantGlobal,
	"GET /internal/api/tenancy/usage":        tenantGlobal,
	// Moving a tenant between cells: the operator's (queen-proxy's), never a tenant's.
	"POST /internal/api/tenancy/fence":           tenantGlobal,
	"GET /internal/api/tenancy/export/heads":     tenantGlobal,
	"POST /internal/api/tenancy/export/messages": tenantGlobal,
	"POST /internal/api/tenancy/export/ids":      tenantGlobal,
	"GET /internal/api/tenancy/export/state":     tenantGlobal,
	"POST /internal/api/tenancy/import/state":    tenantGlobal,
	"POST /internal/api/tenancy/import/messages": tenantGlobal,
	"POST /internal/api/tenancy/import/prune":    tenantGlobal,
	"POST /internal/api/tenancy/drop":            tenantGlobal,
	"POST /api/v1/stats/refresh":                 tenantGlobal,
	"GET /api/v1/analytics/system-metrics":       tenantGlobal,
	"GET /api/v1/analytics/worker-metrics":       tenantGlobal,
	"GET /api/v1/analytics/postgres-stats":       tenantGlobal,
	"GET /api/v1/analytics/retention":            tenantGlobal,
	"GET /api/v1/analytics/consumer-lag":         tenantGlobal,
	"GET /api/v1/status/buffers":                 tenantGlobal,
	"POST /streams/v1/queries":                   tenantGlobal,
	"POST /streams/v1/cycle":                     tenantGlobal,
	"POST /streams/v1/state/get":                 tenantGlobal,
	"GET /streams/v1/queries":                    tenantGlobal,
	"GET /streams/v1/queries/{name}":             tenantGlobal,
	"POST /streams/v1/queries/{name}/reset":      tenantGlobal,
	"DELETE /streams/v1/queries/{name}":          tenantGlobal,

	// Pending: upstream routes not registered yet; refused to tenants until scoped.
	"POST /api/v1/messages/{partitionId}/{transactionId}/dlq": tenantPending,
	"DELETE /api/v1/queues/{queue}/clear":                     tenantPending,
}
