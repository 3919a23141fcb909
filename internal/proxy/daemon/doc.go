// Package daemon is queen-proxy's composition root: it builds the logger, the
// metrics registry, the store (schema applied at boot), the auth cache and its
// listener, the limiter, the meter, the gateway and the admin API, runs them under
// one errgroup, and stops in stages: not ready, stop accepting and drain requests
// within the shutdown timeout (then cancel what is left, parked pops included),
// stop the background loops (the meter's last flush), close the pool.
package daemon
