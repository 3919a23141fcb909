package daemon_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// A broker restarted with tenancy off between two health checks (a minute apart
// here, so that none runs in between) gets no tenant request: the proxy asks every
// new connection for the broker's tenancy before its first request, so the tenant's
// push is 503, the broker stores nothing in global scope, and the broker is
// misconfigured at once, without waiting for a check.
func TestBrokerRestartedWithTenancyOffBetweenChecks(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr, dbURL := ln.Addr().String(), pgtest.NewDBURL(t)
	broker := proxytest.StartBroker(t, daemontest.Options{Listener: ln, DBURL: dbURL})
	p := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL},
		Env: []string{"QUEEN_PROXY_UPSTREAM_CHECK_INTERVAL=1m"}})
	p.WaitBackends(t, "up", 10*time.Second)
	createTenant(t, p, tenantSpec{ID: "acme"})
	k := createKey(t, p, "acme", "write")
	r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	require.NoError(t, broker.Stop())
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	broker = daemontest.Start(t, daemontest.Options{Listener: ln, DBURL: dbURL}) // tenancy off

	r = call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil))
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	require.Equal(t, "unavailable", r.code(t))
	require.Equal(t, map[string]int{"acme:orders": 1}, brokerQueues(t, broker),
		"the push after the restart reached the broker")
	var ups struct {
		Upstreams []struct{ URL, State string } `json:"upstreams"`
	}
	require.Equal(t, http.StatusOK, p.Admin(t, http.MethodGet, "/admin/v1/upstreams", nil, &ups))
	require.Len(t, ups.Upstreams, 1)
	require.Equal(t, "misconfigured", ups.Upstreams[0].State)
}
