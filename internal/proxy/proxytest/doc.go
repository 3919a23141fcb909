// Package proxytest runs whole queen-proxy daemons in a test process, as
// internal/daemontest does for the broker: listeners on 127.0.0.1:0 (public and
// admin), a fresh proxy database of its own (pgtest.NewDBURL) unless one is given,
// logs to t.Log, a wait for readiness and a cleanup that requires a clean stop. It is
// a test-only package: never import it from non-test code.
//
// Shim stands in for the broker side of tenancy until brokers implement it: an HTTP
// server in front of a real broker that answers GET /internal/api/tenancy as a broker
// with tenancy on would, computes GET /internal/api/tenancy/usage from the broker's
// database for one tenant, records the tenancy header of every request it forwards,
// and forwards everything else unchanged.
package proxytest
