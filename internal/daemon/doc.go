// Package daemon is queen's composition root: it builds the logger, the store, the
// broker and the HTTP server from a config.Config, waits for PostgreSQL and applies
// the schema, and serves, in the appliance shell (internal/appliance) that queen-proxy
// runs in too. Each part it opens registers its close where it is opened, so a failed
// start closes what was opened. Its long-running components run under one
// appliance.Lifecycle, in the tiers of lifecycle.go, so that one failing stops the
// others; a stop, on cancellation or failure, goes through named stages in a fixed
// order: not ready, the shutdown delay, stop accepting, drain (parked long-polls,
// in-flight requests), stop the background components, close the spool, close the
// pool.
//
// It holds wiring only; every rule lives in the packages it wires.
package daemon
