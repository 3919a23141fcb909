// Package admin is queen-proxy's admin API, served on its own (loopback) listener
// only: tenants, API keys, usage, upstreams and replicas under /admin/v1, plus the
// Prometheus metrics, whose tenant labels are not for the public port. Every call
// needs Authorization: Bearer <QUEEN_PROXY_ADMIN_TOKEN>, compared by digest in
// constant time; every change is written to the audit log by the store.
package admin
