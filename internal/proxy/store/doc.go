// Package store is queen-proxy's only user of pgx: the pool on the proxy's own
// database, every query (tenants, keys, audit log, replicas, limiter demand,
// metering), the auth-change notifications and their listener. Database errors are
// translated once, in interpretError, into the tenant package's sentinels. Changes
// that affect authentication notify the channel queen_proxy_auth in their own
// transaction, so every replica hears of them once they are committed.
package store
