// Package telemetry exports the broker's own state as Prometheus metrics and as the
// periodic "rates and sizes" log line. It reads the broker and the store and writes
// nothing.
//
// Every family is registered on a [prometheus.Registerer] the daemon passes in (never
// the default registry) and is named queen_<area>_<what>_<unit>. Labels are bounded:
// a queue name is allowed, a partition or a message id is not. The families, their
// labels and what to alert on are listed in docs/observability.md.
//
// A scrape never runs SQL. Three kinds of sources feed the families:
//
//   - in-memory state read at scrape time: pool statistics (pgxpool counters),
//     parked long-polls, uptime;
//   - the backlog reading (per-queue depth, oldest pending age, dead letters), one
//     bounded query run by [Telemetry.Run] every [DefaultRefreshInterval] and cached;
//     a scrape serves the cache. When the last refresh failed the backlog families are
//     omitted (as upstream omits its DB-derived families) and
//     queen_metrics_refresh_success is 0;
//   - the broker's in-memory activity counters (push, pop and ack totals, requests
//     and database errors).
//
// HTTP request metrics live with the router in package httpapi, and the Go runtime
// and process collectors are added by the daemon, which owns the registry.
//
// The backlog refresh runs on every replica, not under the maintenance runner's
// cluster-wide lock: each replica's scrape serves its own cached reading, so a replica
// that skipped the query would have no backlog families to serve.
package telemetry
