package daemon_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// Global routes, unknown routes and non-canonical paths never reach a broker.
func TestGlobalRoutesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	adm := createKey(t, b.proxy, "acme", "admin")
	before := b.shim.Hits()

	r := call(t, http.MethodPost, b.proxy.URL+"/api/v1/system/maintenance", adm.Key, map[string]bool{"enabled": true})
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, "forbidden", r.code(t))
	require.Equal(t, http.StatusForbidden, call(t, http.MethodGet, b.proxy.URL+"/metrics/prometheus", "", nil).status)
	require.Equal(t, http.StatusForbidden, call(t, http.MethodGet, b.proxy.URL+"/internal/api/tenancy", adm.Key, nil).status)
	require.Equal(t, http.StatusNotFound, call(t, http.MethodGet, b.proxy.URL+"/api/v1/nope", adm.Key, nil).status)
	require.Equal(t, http.StatusNotFound, call(t, http.MethodPut, b.proxy.URL+"/api/v1/push", adm.Key, nil).status)
	r = call(t, http.MethodGet, b.proxy.URL+"/api/v1/pop/queue/..%2Fbob", adm.Key, nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "non_canonical_path", r.code(t))
	r = call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", adm.Key, pushBody("bob:orders", 1, nil))
	require.Equal(t, http.StatusBadRequest, r.status)
	for _, h := range []string{"X-Queen-Tenant", "x-queen-tenant"} {
		r = call(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", adm.Key, nil, h, "bob", h, "bob")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "forbidden_header", r.code(t))
	}
	require.Equal(t, before, b.shim.Hits(), "refused requests reached the broker")

	// The maintenance mode is unchanged at the broker.
	r = call(t, http.MethodGet, b.broker.URL+"/api/v1/system/maintenance", "", nil)
	var m struct {
		Enabled bool `json:"enabled"`
	}
	r.json(t, &m)
	require.False(t, m.Enabled)
}

// A broker with tenancy off is misconfigured: tenant requests get 503 within two
// check intervals.
func TestTenancyOffBrokerGetsNoTenantTraffic(t *testing.T) {
	t.Parallel()
	broker := daemontest.Start(t, daemontest.Options{})
	p := proxytest.Start(t, proxytest.Options{Upstreams: []string{broker.URL}})
	start := time.Now()
	p.WaitUpstreams(t, "misconfigured", 2*time.Second)
	require.Less(t, time.Since(start), 2*200*time.Millisecond+time.Second)
	createTenant(t, p, tenantSpec{ID: "acme"})
	k := createKey(t, p, "acme", "write")
	r := call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", k.Key, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "unavailable", r.code(t))
	require.Equal(t, "1", r.header.Get("Retry-After"))
}

// A body over the tenant's maxRequestBytes is 413; with one of two brokers stopped,
// requests succeed again within two check intervals.
func TestBodyLimitAndFailover(t *testing.T) {
	t.Parallel()
	b1 := daemontest.Start(t, daemontest.Options{})
	b2 := daemontest.Start(t, daemontest.Options{DBURL: b1.DBURL})
	s1 := proxytest.NewShim(t, b1.URL, b1.DBURL, "acme")
	s2 := proxytest.NewShim(t, b2.URL, b2.DBURL, "acme")
	p := proxytest.Start(t, proxytest.Options{Upstreams: []string{s1.URL, s2.URL}})
	p.WaitUpstreams(t, "up", 10*time.Second)
	createTenant(t, p, tenantSpec{ID: "acme", Limits: map[string]any{"maxRequestBytes": 2048}})
	k := createKey(t, p, "acme", "write")

	r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 100, nil))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	require.Equal(t, "payload_too_large", r.code(t))
	require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil)).status)

	require.NoError(t, b2.Stop())
	stopped := time.Now()
	eventually(t, 2*200*time.Millisecond+2*time.Second, func() bool {
		for range 10 {
			if call(t, http.MethodGet, p.URL+"/api/v1/resources/queues", k.Key, nil).status != http.StatusOK {
				return false
			}
		}
		return true
	}, "requests do not succeed after one broker stopped")
	t.Logf("all requests succeed %s after the stop", time.Since(stopped))
}
