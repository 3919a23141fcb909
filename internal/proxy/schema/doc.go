// Package schema holds queen-proxy's DDL (schema queen_proxy) as embedded .sql files
// and applies them idempotently at every boot under an advisory lock of its own, so
// that proxy replicas booting together never race and a database shared with a broker
// never blocks the broker's apply. Changes are additive only.
package schema
