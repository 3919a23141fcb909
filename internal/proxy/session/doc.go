// Package session is queen-proxy's login machinery, free of HTTP and SQL: password
// hashes (bcrypt, cost 12, with a dummy hash for unknown users so that a miss costs
// what a hit does), session tokens (HS256 with QUEEN_PROXY_SESSION_KEY, audience
// queen-proxy, the claims qp_role and qp_tenant and never a role claim, so that no
// broker accepts one) and the failure counters behind the failed-login lockout (per
// user and per client IP) and the unknown-API-key limit (per client IP), each over a
// sliding window.
package session
