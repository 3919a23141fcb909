package daemon_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// An operator works in global scope, where a tenant's queues have their stored names:
// it reads, pushes to and deletes "acme:orders" through the proxy. The ':' stays
// refused to tenants, whose names the broker prefixes.
func TestOperatorsUseStoredQueueNames(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	k := createKey(t, b.proxy, "acme", "admin")
	createUser(t, b.proxy, "op", "operator-password", "admin", "")
	op := login(t, b.proxy, "op", "operator-password")
	r := call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", k.Key, pushBody("orders", 2, nil))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)

	r = call(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues/acme:orders", op, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var q struct {
		Name string `json:"name"`
	}
	r.json(t, &q)
	require.Equal(t, "acme:orders", q.Name)

	r = call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", op, pushBody("acme:orders", 1, nil))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Equal(t, map[string]int{"acme:orders": 3}, brokerQueues(t, b.broker))

	for _, path := range []string{"/api/v1/resources/queues/acme:orders", "/api/v1/resources/queues/a:b"} {
		r = call(t, http.MethodGet, b.proxy.URL+path, k.Key, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "a tenant's %s: %s", path, r.body)
		require.Equal(t, "invalid_argument", r.code(t))
	}
	r = call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", k.Key, pushBody("acme:orders", 1, nil))
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)

	r = call(t, http.MethodDelete, b.proxy.URL+"/api/v1/resources/queues/acme:orders", op, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Empty(t, brokerQueues(t, b.broker))
}
