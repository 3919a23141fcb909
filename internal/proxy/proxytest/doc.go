// Package proxytest runs whole queen-proxy daemons in a test process, as
// internal/daemontest does for the broker: listeners on 127.0.0.1:0 (public and
// admin), a fresh proxy database of its own (pgtest.NewDBURL) unless one is given,
// logs to t.Log, a wait for readiness and a cleanup that requires a clean stop.
// StartBroker runs the real broker a proxy fronts, with tenancy on
// (QUEEN_TENANCY_HEADER) and its usage job paced for tests. It is a test-only
// package: never import it from non-test code.
package proxytest
