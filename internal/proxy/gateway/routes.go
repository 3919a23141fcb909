package gateway

import (
	"net/http"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// access says who may call a broker route through the proxy.
type access int

const (
	// accessTenant routes are forwarded for tenant credentials of enough scope.
	accessTenant access = iota
	// accessGlobal routes are never forwarded for tenants (403); operators reach
	// them by role.
	accessGlobal
	// accessPublic routes are forwarded without credentials (dashboard files).
	accessPublic
)

// queueCheck says how a queue allowlist applies to a route.
type queueCheck int

const (
	// queuesByID routes address data by id only: allowlisted keys pass.
	queuesByID queueCheck = iota
	// queuesPath routes name their queue in the {queue} path parameter.
	queuesPath
	// queuesBody routes name their queues in the body (push, transaction, configure,
	// a requeue's filter); a body that selects by id spans queues.
	queuesBody
	// queuesQuery routes name their queue in the queue query parameter.
	queuesQuery
	// queuesSpan routes span queues: allowlisted keys are refused.
	queuesSpan
)

// bodyKind says whether the proxy decodes a route's body.
type bodyKind int

const (
	bodyStream bodyKind = iota
	bodyPush
	bodyTransaction
	bodyConfigure
	bodyAck
	bodyAckBatch
	bodyRequeue
	bodyReplay
	bodyTimers
)

// route is one classified broker route.
type route struct {
	method, pattern string
	access          access
	scope           tenant.Scope
	queues          queueCheck
	body            bodyKind
	pop             bool
	// moves marks the routes that move dead letters back into a queue (requeue, retry,
	// replay): each stores new messages, and a replay may create the queue it names, so
	// quotas check them as a push of at least one message (the proxy cannot know how
	// many a requeue moves).
	moves bool
	// page marks the dashboard's pages: with login on they need a session, and they
	// are forwarded with the session's user as a hint to the page.
	page bool
}

const v1 = "/api/v1"

// routeTable is every broker route the proxy knows. Anything else is a JSON 404, so a
// new broker route stays hidden until it is classified here.
var routeTable = []route{
	// Write: names checked against allowlists.
	{method: http.MethodPost, pattern: v1 + "/configure", scope: tenant.ScopeWrite, queues: queuesBody, body: bodyConfigure},
	{method: http.MethodPost, pattern: v1 + "/push", scope: tenant.ScopePush, queues: queuesBody, body: bodyPush},
	{method: http.MethodPost, pattern: v1 + "/transaction", scope: tenant.ScopeWrite, queues: queuesBody, body: bodyTransaction},
	{method: http.MethodGet, pattern: v1 + "/pop/queue/{queue}", scope: tenant.ScopeWrite, queues: queuesPath, pop: true},
	{method: http.MethodGet, pattern: v1 + "/pop/queue/{queue}/partition/{partition}", scope: tenant.ScopeWrite, queues: queuesPath, pop: true},
	{method: http.MethodPost, pattern: v1 + "/consumer-groups/{group}/queues/{queue}/seek", scope: tenant.ScopeWrite, queues: queuesPath},
	{method: http.MethodPost, pattern: v1 + "/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", scope: tenant.ScopeWrite, queues: queuesPath},
	{method: http.MethodPost, pattern: v1 + "/dlq/requeue", scope: tenant.ScopeWrite, queues: queuesBody, body: bodyRequeue, moves: true},
	{method: http.MethodGet, pattern: v1 + "/timers/{queue}", scope: tenant.ScopeRead, queues: queuesPath},
	{method: http.MethodGet, pattern: v1 + "/timers/{queue}/*", scope: tenant.ScopeRead, queues: queuesPath},
	{method: http.MethodDelete, pattern: v1 + "/timers/{queue}/*", scope: tenant.ScopeWrite, queues: queuesPath},
	// Write: by id.
	{method: http.MethodPost, pattern: v1 + "/ack", scope: tenant.ScopeWrite, body: bodyAck},
	{method: http.MethodPost, pattern: v1 + "/ack/batch", scope: tenant.ScopeWrite, body: bodyAckBatch},
	{method: http.MethodPost, pattern: v1 + "/lease/{leaseId}/extend", scope: tenant.ScopeWrite},
	// Write: spanning queues.
	{method: http.MethodGet, pattern: v1 + "/pop", scope: tenant.ScopeWrite, queues: queuesSpan, pop: true},
	{method: http.MethodPost, pattern: v1 + "/traces", scope: tenant.ScopeWrite, queues: queuesSpan},
	{method: http.MethodPost, pattern: v1 + "/consumer-groups/{group}/subscription", scope: tenant.ScopeWrite, queues: queuesSpan},
	{method: http.MethodDelete, pattern: v1 + "/messages/{partitionId}/{transactionId}", scope: tenant.ScopeWrite, queues: queuesSpan},
	{method: http.MethodPost, pattern: v1 + "/messages/{partitionId}/{transactionId}/retry", scope: tenant.ScopeWrite, queues: queuesSpan, moves: true},
	{method: http.MethodPost, pattern: v1 + "/dlq/{id}/replay", scope: tenant.ScopeWrite, queues: queuesSpan, body: bodyReplay, moves: true},
	// The KV store and timer scheduling: tenant-scoped by the broker, not by queue, so
	// a key limited to some queues is refused.
	{method: http.MethodPost, pattern: v1 + "/kv", scope: tenant.ScopeWrite, queues: queuesSpan},
	{method: http.MethodPut, pattern: v1 + "/kv/{ns}/*", scope: tenant.ScopeWrite, queues: queuesSpan},
	{method: http.MethodDelete, pattern: v1 + "/kv/{ns}/*", scope: tenant.ScopeWrite, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/kv/{ns}/*", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/resources/kv/namespaces", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodPost, pattern: v1 + "/resources/kv/list", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodPost, pattern: v1 + "/timers", scope: tenant.ScopePush, queues: queuesSpan, body: bodyTimers},
	// Read: one queue.
	{method: http.MethodGet, pattern: v1 + "/resources/queues/{queue}", scope: tenant.ScopeRead, queues: queuesPath},
	{method: http.MethodGet, pattern: v1 + "/resources/queues/{queue}/depth", scope: tenant.ScopeRead, queues: queuesPath},
	{method: http.MethodGet, pattern: v1 + "/status/queues/{queue}", scope: tenant.ScopeRead, queues: queuesPath},
	{method: http.MethodGet, pattern: v1 + "/status/queues/{queue}/messages", scope: tenant.ScopeRead, queues: queuesPath},
	// Read: spanning queues.
	{method: http.MethodGet, pattern: v1 + "/resources/queues", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/resources/overview", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/resources/namespaces", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/resources/tasks", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/resources/partitions", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/messages", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/messages/{partitionId}/{transactionId}", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/dlq", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/traces/names", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/traces/by-name/{traceName}", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/traces/{partitionId}/{transactionId}", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/consumer-groups", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/consumer-groups/lagging", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/consumer-groups/{group}", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/status", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/status/queues", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/status/analytics", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/analytics/queue-lag", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/analytics/queue-ops", scope: tenant.ScopeRead, queues: queuesSpan},
	{method: http.MethodGet, pattern: v1 + "/analytics/queue-parked-replicas", scope: tenant.ScopeRead, queues: queuesSpan},
	// Admin: deletes.
	{method: http.MethodDelete, pattern: v1 + "/resources/queues/{queue}", scope: tenant.ScopeAdmin, queues: queuesPath},
	{method: http.MethodDelete, pattern: v1 + "/consumer-groups/{group}/queues/{queue}", scope: tenant.ScopeAdmin, queues: queuesPath},
	{method: http.MethodDelete, pattern: v1 + "/consumer-groups/{group}", scope: tenant.ScopeAdmin, queues: queuesSpan},
	{method: http.MethodDelete, pattern: v1 + "/dlq", scope: tenant.ScopeAdmin, queues: queuesQuery},
	// Never for tenants, whatever the method. Operators reach them by role, at the
	// broker's levels.
	{pattern: v1 + "/system/*", access: accessGlobal, scope: tenant.ScopeAdmin},
	{pattern: "/internal/*", access: accessGlobal, scope: tenant.ScopeAdmin},
	{pattern: v1 + "/migration/*", access: accessGlobal, scope: tenant.ScopeAdmin},
	{method: http.MethodPost, pattern: v1 + "/stats/refresh", access: accessGlobal, scope: tenant.ScopeAdmin},
	{method: http.MethodGet, pattern: v1 + "/analytics/system-metrics", access: accessGlobal, scope: tenant.ScopeRead},
	{method: http.MethodGet, pattern: v1 + "/analytics/worker-metrics", access: accessGlobal, scope: tenant.ScopeRead},
	{method: http.MethodGet, pattern: v1 + "/analytics/postgres-stats", access: accessGlobal, scope: tenant.ScopeRead},
	{method: http.MethodGet, pattern: v1 + "/analytics/retention", access: accessGlobal, scope: tenant.ScopeRead},
	{method: http.MethodGet, pattern: v1 + "/analytics/consumer-lag", access: accessGlobal, scope: tenant.ScopeRead},
	{method: http.MethodGet, pattern: v1 + "/status/buffers", access: accessGlobal, scope: tenant.ScopeRead},
	{method: http.MethodPost, pattern: "/streams/v1/state/get", access: accessGlobal, scope: tenant.ScopeRead},
	{pattern: "/streams/v1/*", access: accessGlobal, scope: tenant.ScopeWrite},
	{pattern: "/metrics", access: accessGlobal, scope: tenant.ScopeRead},
	{pattern: "/metrics/*", access: accessGlobal, scope: tenant.ScopeRead},
	// Dashboard files, and its pages: / and the deep links of its history-mode routes
	// (a reload of /queues/orders), which the broker answers with the same page.
	{method: http.MethodGet, pattern: "/", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/assets/*", access: accessPublic},
	{method: http.MethodGet, pattern: "/operations", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/queues", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/queues/*", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/consumers", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/messages", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/traces", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/analytics", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/dlq", access: accessPublic, page: true},
	{method: http.MethodGet, pattern: "/system", access: accessPublic, page: true},
	// The 1.x liveness answer touches no database and says nothing about a tenant.
	{method: http.MethodGet, pattern: "/status", access: accessPublic},
	{method: http.MethodHead, pattern: "/status", access: accessPublic},
}

// unproxiedRoute is a broker route the proxy deliberately does not forward, and why.
type unproxiedRoute struct {
	method, pattern, reason string
}

// unproxied lists the broker routes that routeTable leaves out on purpose: the proxy
// answers them itself, or they get its JSON 404. A test walks the broker's router and
// fails on a route that is in neither list.
var unproxied = []unproxiedRoute{
	// The proxy's own: a load balancer probes the proxy, which answers for itself.
	{http.MethodGet, "/health", "the proxy answers its own health routes"},
	{http.MethodHead, "/health", "the proxy answers its own health routes"},
	{http.MethodGet, "/health/live", "the proxy answers its own health routes"},
	{http.MethodHead, "/health/live", "the proxy answers its own health routes"},
	{http.MethodGet, "/health/ready", "the proxy answers its own health routes"},
	{http.MethodHead, "/health/ready", "the proxy answers its own health routes"},
	{http.MethodGet, v1 + "/auth/whoami", "it describes the broker's token, which behind the proxy is the one the proxy mints; " +
		"the proxy's GET /api/me says who the caller is"},
	{http.MethodGet, "/auth/me", "the broker's standalone identity is wrong behind the proxy, which signs callers in itself " +
		"(GET /api/me, /login); the proxy answers the 1.x no_such_route 404"},
	{http.MethodGet, "/auth/login", "the proxy has its own sign-in page (/login); it answers the 1.x no_such_route 404"},
	{http.MethodPost, "/auth/logout", "the proxy ends its own sessions (POST /api/logout); it answers the 1.x no_such_route 404"},
	{http.MethodPost, v1 + "/ephemeral/push", ephemeralReason},
	{http.MethodGet, v1 + "/ephemeral/pop", ephemeralReason},
	{http.MethodPost, v1 + "/ephemeral/ack", ephemeralReason},
	{http.MethodPost, v1 + "/ephemeral/configure", ephemeralReason},
	{http.MethodPost, v1 + "/ephemeral/reset", ephemeralReason},
	{http.MethodDelete, v1 + "/ephemeral/queue/{queue}", ephemeralReason},
	{http.MethodGet, v1 + "/ephemeral/queues", ephemeralReason},
	{http.MethodGet, v1 + "/ephemeral/queues/{queue}/depth", ephemeralReason},
}

// ephemeralReason is why the ephemeral family is not proxied.
const ephemeralReason = "the 1.x ephemeral-queue family, which no broker builds: the proxy answers the same 404 ephemeral_unsupported without a round trip"
