// Package daemon is queen's composition root: it builds the logger, the store, the
// broker and the HTTP server from a config.Config, waits for PostgreSQL and applies
// the schema, serves, and on cancellation drains in stages (stop accepting, answer
// parked long-polls, finish in-flight requests, close the pool).
//
// It holds wiring only; every rule lives in the packages it wires.
package daemon
