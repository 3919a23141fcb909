// Package proxytest runs whole queen-proxy daemons for tests, as internal/daemontest
// does for the broker: listeners on free loopback ports (public and admin), a fresh
// proxy database of its own (pgtest.NewDBURL) unless one is given, logs to t.Log, a
// wait for readiness and a cleanup that requires a clean stop.
//
// Start runs the proxy in the test process (daemon.Run on a goroutine, with its own
// listeners, pools and state); Exec runs it as a child process of the queen-proxy
// binary, built once per test binary, and stops it with SIGTERM. Use Exec where a
// check is about separate processes: two replicas that share only the proxy database
// and the brokers, or a stop by signal. A package that calls Exec runs its tests
// through Main, which removes the binary. Both return a *Proxy with the same methods.
//
// StartBroker runs the real broker a proxy fronts, with tenancy on
// (QUEEN_TENANCY_HEADER) and its usage job paced for tests. It is a test-only
// package: never import it from non-test code.
package proxytest
