// Package daemon is queen-proxy's composition root: it builds the logger, the
// metrics registry, the store (schema applied at boot), the auth cache and its
// listener, the limiter, the meter, the gateway and the admin API, and runs them in
// the appliance shell (internal/appliance), as the broker does: a failed open unwinds
// what was opened; a stop goes through the stages not ready, the shutdown delay
// (QUEEN_PROXY_SHUTDOWN_DELAY), stop accepting, drain requests within the shutdown
// timeout (then cancel what is left, parked pops included), stop the background loops
// (the meter's last flush), close the pool. SIGHUP is logged, not fatal.
package daemon
