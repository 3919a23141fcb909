// Package admin is queen-proxy's admin API, served on its own (loopback) listener
// only: tenants, API keys, users, usage, backends (the brokers, at
// /admin/v1/upstreams) and replicas under /admin/v1, plus the Prometheus metrics,
// whose tenant labels are not for the public port.
// Every call needs Authorization: Bearer <QUEEN_PROXY_ADMIN_TOKEN>, compared by
// digest in constant time, or the session of an operator (a user without a tenant)
// with role admin. The handlers are thin over package manage, which the
// queen-proxy command line shares; every change is written to the audit log by the
// store, with who made it.
package admin
