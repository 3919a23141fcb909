// Package gateway is queen-proxy's public HTTP side: the deny-by-default routing
// table of broker routes, credential checks (API keys and login sessions), the
// login routes and page (/login, /api/login, /api/me, /api/logout, /api/auth/*),
// admission (scope, queue
// allowlists, body limits, concurrency, token buckets, quotas), forwarding to the
// brokers with streamed answers, the broker pool and its health checks, the usage
// snapshot behind quotas, and the per-tenant metering of what passes.
//
// A request is checked in this order, and a refused one reaches no broker: path
// (canonical, else 400) → route (404) → credential (400/401) → tenant status, scope,
// allowlist (403) → body (413/400) → concurrency → both buckets → quotas → forward.
// Operators (users without a tenant) skip the tenant checks and are forwarded in
// global scope by role, global routes included.
package gateway
