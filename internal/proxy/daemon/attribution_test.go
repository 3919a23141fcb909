package daemon_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/tenant"
	"github.com/queenmq/queen/internal/testwait"
)

// A revoked or expired key is the tenant's own credential: its 401 counts in
// queen_proxy_tenant_requests_total{tenant,result="unauthenticated"}. An unknown key
// names no tenant and counts for none.
func TestRefusedKeysCountForTheirTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	revoked, expired := createKey(t, b.proxy, "acme", "read"), createKey(t, b.proxy, "acme", "read")
	require.Equal(t, http.StatusOK, b.proxy.Admin(t, http.MethodDelete, "/admin/v1/keys/"+revoked.ID, nil, nil))
	require.Equal(t, http.StatusCreated, b.proxy.Admin(t, http.MethodPost, "/admin/v1/keys/"+expired.ID+"/rotate",
		map[string]int{"graceSeconds": 0}, nil))
	_, unknown := tenant.NewKey()

	refused := 0
	for _, key := range []string{revoked.Key, expired.Key} {
		testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
			r := call(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", key, nil)
			if r.status != http.StatusUnauthorized {
				return fmt.Errorf("the key still answers %d", r.status)
			}
			refused++
			return nil
		})
	}
	require.Equal(t, http.StatusUnauthorized, call(t, http.MethodGet, b.proxy.URL+"/api/v1/resources/queues", unknown, nil).status)

	lines := metric(t, b.proxy, "queen_proxy_tenant_requests_total")
	require.Contains(t, lines, fmt.Sprintf(`queen_proxy_tenant_requests_total{result="unauthenticated",tenant="acme"} %d`, refused))
	require.Equal(t, 1, strings.Count(lines, `result="unauthenticated"`), "another tenant got a refusal: %s", lines)
	require.Contains(t, scrapeProxyMetrics(t, b.proxy), `queen_proxy_auth_failures_total{reason="unknown_key"} 1`)
}
