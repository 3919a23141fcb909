package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/dashboard"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/tracing"
)

// DefaultMaxBodyBytes is the body size limit used when [Options.MaxBodyBytes] is 0: the
// default of QUEEN_MAX_BODY_BYTES (16 MiB).
const DefaultMaxBodyBytes int64 = 16 << 20

// Options configures a [Server]. The zero value is usable.
type Options struct {
	// MaxBodyBytes caps every request body; a larger body is answered 413
	// payload_too_large. 0 means [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// CORSAllowedOrigins turns CORS on when non-empty: an Origin equal to one of them
	// (or any Origin, if the list holds "*") gets the Access-Control-* headers. Empty
	// means no Access-Control-* header is ever sent (CORS is off by default).
	CORSAllowedOrigins []string
	// Version is reported by GET /health.
	Version string
	// ReadyFunc, when set, is asked by GET /health/ready before the database ping; an
	// error makes the instance not ready (e.g. while draining on shutdown). nil means
	// always ready.
	ReadyFunc func(ctx context.Context) error
	// Registry receives the HTTP metrics and is served by /metrics/prometheus and
	// summarised by /metrics; nil means a registry of the server's own.
	Registry *prometheus.Registry
	// Verifier turns authentication on (JWT_ENABLED): every route then needs a token
	// whose roles reach the route's level (auth_routes.go). nil means every route is
	// open and the Authorization header is never read.
	Verifier *auth.Verifier
	// AuthSkipPaths are the JWT_SKIP_PATHS: paths served without a token even when
	// authentication is on (exact, or prefix for entries ending in "/").
	AuthSkipPaths []string
	// Dashboard serves the bundled dashboard on the GET and HEAD requests that route
	// to no API path (/, its assets, and the app's own deep links); nil serves none.
	// Those requests never need a token: the app sends its own on its API calls.
	Dashboard *dashboard.Handler
	// Tracer records spans of push, pop, ack and transactions (OTEL_TRACES_EXPORTER);
	// nil means tracing is off. Trace contexts sent with pushes are stored either way.
	Tracer *tracing.Tracer
	// TenancyHeader (QUEEN_TENANCY_HEADER) turns tenant scoping on: a request that
	// names a tenant in this header (or in its token's queen_tenant claim) sees only
	// that tenant's queues (tenancy.go). "" means off: the header is never read.
	TenancyHeader string
}

// Server is the HTTP API of one broker. It holds no per-request state and is safe for
// concurrent use; serve [Server.Handler] with an http.Server.
type Server struct {
	opts    Options
	broker  *broker.Broker
	logger  *slog.Logger
	ids     *queue.IDGenerator
	router  *chi.Mux
	handler http.Handler
	metrics *httpMetrics
	buffers answerBuffers // answers of the hot routes are rendered into these
	fences  *tenantFences // the fenced tenants and each tenant's requests in flight

	// analytics is the broker's analytics service: the status, analytics and
	// overview reports, and the stats refresh.
	analytics *analytics.Service
}

// New builds the server and its routes. logger may be nil (nothing is logged).
func New(opts Options, b *broker.Broker, logger *slog.Logger) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	opts.CORSAllowedOrigins = slices.Clone(opts.CORSAllowedOrigins)
	opts.AuthSkipPaths = slices.Clone(opts.AuthSkipPaths)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:   opts,
		broker: b,
		logger: logger.With("component", "httpapi"),
		ids:    queue.NewIDGenerator(),
		router: chi.NewRouter(),
		fences: newTenantFences(),
	}
	if b != nil {
		s.analytics = b.Analytics()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	s.metrics = newHTTPMetrics(opts.Registry)
	s.routes()
	s.handler = s.requestID(s.accessLog(s.instrument(s.recoverer(s.cors(s.crossOrigin(s.authenticate(s.tenancy(s.limitBody(s.router)))))))))
	return s
}

// Routed reports whether the router has a route for method and path (what a probe or
// a manifest names can be checked without a database).
func (s *Server) Routed(method, path string) bool {
	return s.router.Match(chi.NewRouteContext(), method, path)
}

// Handler returns the root handler: the router wrapped in the middleware chain
// (request id, access log, metrics, recover, CORS, cross-origin refusal, authentication,
// tenancy, body limit).
func (s *Server) Handler() http.Handler { return s.handler }

// routes registers every implemented route. Paths of the upstream route list that are
// not listed here, and listed paths asked with another method, fall through to the
// JSON 404. Every route needs its access level in routeLevels (auth_routes.go); a route
// without one is admin-only when authentication is on, and fails the tests.
func (s *Server) routes() {
	r := s.router
	// The dashboard answers after every API route: what routes nowhere, is a GET or
	// HEAD and is not under an API prefix (/api, /auth, /streams, /health, /metrics,
	// …) is the app's; everything else keeps the JSON 404 (routeAbsent, errors.go).
	// A routed path asked with another method answers as a path that routes nowhere:
	// the 1.x brokers have no 405, and their clients read no_such_route as "this
	// broker has no such route".
	absent := s.routeAbsent(s.opts.Dashboard.Wrap(http.HandlerFunc(s.notFound))).ServeHTTP
	r.NotFound(absent)
	r.MethodNotAllowed(absent)
	s.compatRoutes() // GET /status, /auth/*, the ephemeral family (handlers_compat.go)

	// The health routes also answer HEAD, for load balancers that probe with it.
	for path, h := range map[string]handlerFunc{
		"/health": s.handleHealth, "/health/live": s.handleLive, "/health/ready": s.handleReady,
	} {
		r.Get(path, s.handle(h))
		r.Head(path, s.handle(h))
	}
	r.Get("/metrics", s.handle(s.handleMetrics))
	r.Method(http.MethodGet, "/metrics/prometheus", s.handlePrometheus())

	const v1 = "/api/v1"
	r.Post(v1+"/configure", s.handle(s.handleConfigure))
	r.Post(v1+"/push", s.handle(s.traced(tracing.OpPush, s.handlePush)))

	r.Get(v1+"/pop", s.handle(s.traced(tracing.OpPop, s.handlePopNamespace)))
	r.Get(v1+"/pop/queue/{queue}", s.handle(s.traced(tracing.OpPop, s.handlePop)))
	r.Get(v1+"/pop/queue/{queue}/partition/{partition}", s.handle(s.traced(tracing.OpPop, s.handlePop)))

	r.Post(v1+"/ack", s.handle(s.traced(tracing.OpAck, s.handleAck)))
	r.Post(v1+"/ack/batch", s.handle(s.traced(tracing.OpAck, s.handleAckBatch)))
	r.Post(v1+"/lease/{leaseId}/extend", s.handle(s.handleLeaseExtend))
	r.Post(v1+"/transaction", s.handle(s.traced(tracing.OpTransaction, s.handleTransaction)))
	r.Post(v1+"/kv", s.kvServe(s.handleKV))
	r.Get(v1+"/kv/{ns}/*", s.kvServe(s.handleKVPath))
	r.Put(v1+"/kv/{ns}/*", s.kvServe(s.handleKVPath))
	r.Delete(v1+"/kv/{ns}/*", s.kvServe(s.handleKVPath))
	r.Get(v1+"/resources/kv/namespaces", s.kvServe(s.handleKVNamespaces))
	r.Post(v1+"/resources/kv/list", s.kvServe(s.handleKVList))

	r.Get(v1+"/resources/queues", s.handle(s.handleQueueList))
	r.Get(v1+"/resources/queues/{queue}", s.handle(s.handleQueueGet))
	r.Get(v1+"/resources/queues/{queue}/depth", s.handle(s.handleQueueDepth))
	r.Delete(v1+"/resources/queues/{queue}", s.handle(s.handleQueueDelete))

	// Message admin, DLQ and traces. Static segments beat parameters,
	// so /traces/names and /traces/by-name/{traceName} win over /traces/{p}/{t}.
	r.Get(v1+"/messages", s.handle(s.handleMessageList))
	r.Get(v1+"/messages/{partitionId}/{transactionId}", s.handle(s.handleMessageGet))
	r.Delete(v1+"/messages/{partitionId}/{transactionId}", s.handle(s.handleMessageDelete))
	r.Post(v1+"/messages/{partitionId}/{transactionId}/retry", s.handle(s.handleMessageRetry))
	r.Get(v1+"/dlq", s.handle(s.handleDLQList))
	r.Delete(v1+"/dlq", s.handle(s.handleDLQPurge))
	r.Post(v1+"/dlq/requeue", s.handle(s.handleDLQRequeue))
	r.Post(v1+"/dlq/{id}/replay", s.handle(s.handleDLQReplay))
	r.Get(v1+"/auth/whoami", s.handle(s.handleWhoami))
	r.Post(v1+"/traces", s.handle(s.handleTraceCreate))
	r.Get(v1+"/traces/names", s.handle(s.handleTraceNames))
	r.Get(v1+"/traces/by-name/{traceName}", s.handle(s.handleTraceByName))
	r.Get(v1+"/traces/{partitionId}/{transactionId}", s.handle(s.handleTraceList))

	// Consumer-group administration. The static /lagging beats {group}.
	r.Get(v1+"/consumer-groups", s.handle(s.handleConsumerGroupList))
	r.Get(v1+"/consumer-groups/lagging", s.handle(s.handleConsumerGroupLagging))
	r.Get(v1+"/consumer-groups/{group}", s.handle(s.handleConsumerGroupGet))
	r.Delete(v1+"/consumer-groups/{group}", s.handle(s.handleConsumerGroupDelete))
	r.Post(v1+"/consumer-groups/{group}/subscription", s.handle(s.handleSubscriptionUpdate))
	r.Delete(v1+"/consumer-groups/{group}/queues/{queue}", s.handle(s.handleConsumerGroupDelete))
	r.Post(v1+"/consumer-groups/{group}/queues/{queue}/seek", s.handle(s.handleConsumerGroupSeek))
	r.Post(v1+"/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", s.handle(s.handlePartitionSeek))

	// Resource summaries, status, analytics, stats refresh and the push/pop pause
	// (maintenance mode).
	r.Get(v1+"/resources/overview", s.handle(s.handleOverview))
	r.Get(v1+"/resources/namespaces", s.handle(s.handleNamespaces))
	r.Get(v1+"/resources/tasks", s.handle(s.handleTasks))
	r.Get(v1+"/resources/partitions", s.handle(s.handlePartitions))
	r.Get(v1+"/status", s.handle(s.handleStatus))
	r.Get(v1+"/status/queues", s.handle(s.handleStatusQueues))
	r.Get(v1+"/status/queues/{queue}", s.handle(s.handleStatusQueue))
	r.Get(v1+"/status/queues/{queue}/messages", s.handle(s.handleStatusQueueMessages))
	r.Get(v1+"/status/analytics", s.handle(s.handleStatusAnalytics))
	r.Get(v1+"/status/buffers", s.handle(s.handleStatusBuffers))
	r.Get(v1+"/analytics/system-metrics", s.handle(s.handleSystemMetrics))
	r.Get(v1+"/analytics/worker-metrics", s.handle(s.handleWorkerMetrics))
	r.Get(v1+"/analytics/queue-lag", s.handle(s.handleQueueLag))
	r.Get(v1+"/analytics/queue-ops", s.handle(s.handleQueueOps))
	r.Get(v1+"/analytics/queue-parked-replicas", s.handle(s.handleParkedReplicas))
	r.Get(v1+"/analytics/retention", s.handle(s.handleRetention))
	r.Get(v1+"/analytics/postgres-stats", s.handle(s.handlePostgresStats))
	r.Post(v1+"/stats/refresh", s.handle(s.handleStatsRefresh))
	r.Get(v1+"/system/maintenance", s.handle(s.handlePushPauseGet))
	r.Post(v1+"/system/maintenance", s.handle(s.handlePushPauseSet))
	r.Get(v1+"/system/maintenance/pop", s.handle(s.handlePopPauseGet))
	r.Post(v1+"/system/maintenance/pop", s.handle(s.handlePopPauseSet))
	// Cluster views for the dashboard (handlers_replicas.go).
	r.Get(v1+"/system/replicas", s.handle(s.handleReplicas))
	r.Get(v1+"/system/longpolls", s.handle(s.handleLongPolls))
	r.Get(v1+"/analytics/consumer-lag", s.handle(s.handleConsumerLag))
	// The upstream broker's peer and diagnostics routes (handlers_peer.go).
	r.Get(v1+"/system/shared-state", s.handle(s.handleSharedState))
	r.Get("/internal/api/shared-state/stats", s.handle(s.handleSharedState))
	r.Get("/internal/api/inter-instance/stats", s.handle(s.handleSharedState))
	r.Post("/internal/api/notify", s.handle(s.handleNotify))
	r.Get("/internal/api/tenancy", s.handle(s.handleTenancy))
	r.Get("/internal/api/tenancy/usage", s.handle(s.handleTenancyUsage))
	// Moving a tenant between cells (handlers_tenancy_move.go, handlers_tenancy_fence.go).
	const tenancy = "/internal/api/tenancy"
	r.Post(tenancy+"/fence", s.handle(s.handleTenancyFence))
	r.Get(tenancy+"/export/heads", s.handle(s.handleTenancyExportHeads))
	r.Post(tenancy+"/export/messages", s.handle(s.handleTenancyExportMessages))
	r.Post(tenancy+"/export/ids", s.handle(s.handleTenancyExportIDs))
	r.Get(tenancy+"/export/state", s.handle(s.handleTenancyExportState))
	r.Post(tenancy+"/import/state", s.handle(s.handleTenancyImportState))
	r.Post(tenancy+"/import/messages", s.handle(s.handleTenancyImportMessages))
	r.Post(tenancy+"/import/prune", s.handle(s.handleTenancyImportPrune))
	r.Post(tenancy+"/drop", s.handle(s.handleTenancyDrop))
	// Timers, the 1.x API (handlers_timers.go).
	r.Post(v1+"/timers", s.timerRoute(s.handleTimers))
	r.Get(v1+"/timers/{queue}", s.timerRoute(s.handleTimerList))
	r.Get(v1+"/timers/{queue}/*", s.timerRoute(s.handleTimerGet))
	r.Delete(v1+"/timers/{queue}/*", s.timerRoute(s.handleTimerCancel))

	// Streams: the SDKs' Stream runtime, then the operator routes of queenctl streams.
	const streams = "/streams/v1"
	r.Post(streams+"/queries", s.streamRoute(s.handleStreamRegister, false))
	r.Post(streams+"/cycle", s.streamRoute(s.handleStreamCycle, false))
	r.Post(streams+"/state/get", s.streamRoute(s.handleStreamState, true))
	r.Get(streams+"/queries", s.handle(s.handleStreamList))
	r.Get(streams+"/queries/{name}", s.handle(s.handleStreamGet))
	r.Post(streams+"/queries/{name}/reset", s.handle(s.handleStreamReset))
	r.Delete(streams+"/queries/{name}", s.handle(s.handleStreamDelete))
}
