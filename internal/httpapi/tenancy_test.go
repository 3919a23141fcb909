package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
)

const testTenancyHeader = "X-Queen-Tenant"

// TestEveryRouteHasATenantRule: every route with an access level, registered or not
// yet, has a row in tenantScope, and tenantScope names no route that has none.
func TestEveryRouteHasATenantRule(t *testing.T) {
	t.Parallel()
	s := New(Options{}, nil, nil)
	require.NoError(t, chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		_, ok := tenantScope[method+" "+route]
		require.True(t, ok, "route %q has no tenant rule: add it to tenantScope in auth_routes.go", method+" "+route)
		return nil
	}))
	for rt := range routeLevels {
		_, ok := tenantScope[rt]
		require.True(t, ok, "route %q has no tenant rule: add it to tenantScope in auth_routes.go", rt)
	}
	for rt := range tenantScope {
		_, ok := routeLevels[rt]
		require.True(t, ok, "tenantScope row %q names no route of routeLevels", rt)
	}
}

func TestIsTenantID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"acme", true}, {"a1", true}, {"bob-2", true}, {"a", false}, {"", false}, {"Acme", false},
		{"1acme", false}, {"acme-", false}, {"acme:x", false}, {"acme,bob", false}, {"system", false},
		{"a234567890123456789012345678901b", true}, {"a2345678901234567890123456789012b", false},
	} {
		t.Run(fmt.Sprintf("%q", tc.id), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.ok, isTenantID(tc.id))
		})
	}
}

// queueNames lists the names of GET /api/v1/resources/queues, sorted.
func queueNames(t *testing.T, b *testBundle, headers ...string) []string {
	t.Helper()
	r := b.do(t, http.MethodGet, "/api/v1/resources/queues", "", headers...)
	requireStatus(t, http.StatusOK, r)
	var names []string
	for _, q := range r.object(t)["queues"].([]any) {
		names = append(names, q.(map[string]any)["name"].(string))
	}
	sort.Strings(names)
	return names
}

// TestTenancyIsolation: two tenants using the same queue name each see only their own
// queue and messages; the global view has both, under their stored names.
func TestTenancyIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	for _, tenant := range []string{"acme", "bob"} {
		h := []string{testTenancyHeader, tenant}
		var items []map[string]any
		for i := range 10 {
			items = append(items, map[string]any{"queue": "orders", "payload": map[string]any{"t": tenant, "i": i}})
		}
		r := b.do(t, http.MethodPost, "/api/v1/push", mustJSON(t, map[string]any{"items": items}), h...)
		requireStatus(t, http.StatusCreated, r)
		for _, res := range r.array(t) {
			require.Equal(t, "orders", res["queueName"], "body: %s", r.body)
		}
	}
	for _, tenant := range []string{"acme", "bob"} {
		h := []string{testTenancyHeader, tenant}
		require.Equal(t, []string{"orders"}, queueNames(t, b, h...))
		r := b.do(t, http.MethodGet, "/api/v1/pop/queue/orders?batch=20&wait=false&autoAck=true", "", h...)
		requireStatus(t, http.StatusOK, r)
		msgs := r.object(t)["messages"].([]any)
		require.Len(t, msgs, 10)
		for _, m := range msgs {
			m := m.(map[string]any)
			require.Equal(t, tenant, m["data"].(map[string]any)["t"])
			require.Equal(t, "orders", m["queue"])
		}
		r = b.do(t, http.MethodGet, "/api/v1/resources/queues/orders", "", h...)
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, "orders", r.object(t)["name"])
	}
	require.Equal(t, []string{"acme:orders", "bob:orders"}, queueNames(t, b))

	r := b.do(t, http.MethodDelete, "/api/v1/resources/queues/orders", "", testTenancyHeader, "acme")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.object(t)["existed"])
	require.Equal(t, []string{"bob:orders"}, queueNames(t, b))
}

// TestTenancyBreakouts: a tenant cannot name another tenant's queue.
func TestTenancyBreakouts(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	b.pushOne(t, "bob:orders", "", "", `{"x":1}`) // global scope: the stored name
	acme := []string{testTenancyHeader, "acme"}

	r := b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"bob:orders","payload":{}}]}`, acme...)
	requireStatus(t, http.StatusBadRequest, r)
	r = b.do(t, http.MethodPost, "/api/v1/configure", `{"queue":"bob:orders"}`, acme...)
	requireStatus(t, http.StatusBadRequest, r)
	for _, path := range []string{
		"/api/v1/pop/queue/..%2Fbob?wait=false", "/api/v1/pop/queue/bob:orders?wait=false",
		"/api/v1/pop/queue/bob%3Aorders?wait=false", "/api/v1/resources/queues/bob:orders",
	} {
		r = b.do(t, http.MethodGet, path, "", acme...)
		requireStatus(t, http.StatusBadRequest, r)
	}
	r = b.do(t, http.MethodDelete, "/api/v1/resources/queues/bob:orders", "", acme...)
	requireStatus(t, http.StatusBadRequest, r)
	r = b.do(t, http.MethodGet, "/api/v1/resources/queues/orders", "", acme...)
	requireStatus(t, http.StatusNotFound, r)

	// bob's message is intact.
	r = b.do(t, http.MethodGet, "/api/v1/pop/queue/orders?wait=false&autoAck=true", "", testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	require.Len(t, r.object(t)["messages"], 1)
}

// TestTenancyRefusals: malformed or repeated headers are 400; global-only and
// not-yet-scoped routes refuse tenants; health ignores the header.
func TestTenancyRefusals(t *testing.T) {
	t.Parallel()
	b := noDBServer(t, Options{TenancyHeader: testTenancyHeader})
	for _, v := range []string{"", "Acme", "acme,bob", "system", "a"} {
		r := b.do(t, http.MethodGet, "/api/v1/resources/queues", "", testTenancyHeader, v)
		requireStatus(t, http.StatusBadRequest, r)
		// The 1.x brokers' text, which 1.x clients may look for, leads.
		require.Contains(t, r.object(t)["error"], "invalid "+strings.ToLower(testTenancyHeader)+" header (must be a UUID", v)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.srv.URL+"/api/v1/resources/queues", nil)
	require.NoError(t, err)
	req.Header.Add("x-queen-tenant", "acme")
	req.Header.Add("X-QUEEN-TENANT", "acme")
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a repeated header")

	for _, rt := range [][2]string{
		{http.MethodPost, "/api/v1/system/maintenance"}, {http.MethodGet, "/internal/api/tenancy"},
		{http.MethodGet, "/api/v1/status/buffers"}, {http.MethodGet, "/api/v1/analytics/consumer-lag"},
	} {
		r := b.do(t, rt[0], rt[1], `{}`, testTenancyHeader, "acme")
		requireError(t, r, http.StatusForbidden, "forbidden", "this route is not available to tenants", "")
	}
	r := b.do(t, http.MethodGet, "/health/live", "", testTenancyHeader, "NOT valid")
	requireStatus(t, http.StatusOK, r)
}

// TestTenancyEndpoint: GET /internal/api/tenancy announces the header.
func TestTenancyEndpoint(t *testing.T) {
	t.Parallel()
	r := noDBServer(t, Options{TenancyHeader: testTenancyHeader}).get(t, "/internal/api/tenancy")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, map[string]any{"enabled": true, "header": testTenancyHeader, "separator": ":"}, r.object(t))
	r = noDBServer(t, Options{}).get(t, "/internal/api/tenancy")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, false, r.object(t)["enabled"])
}

// TestTenancyOffIgnoresTheHeader: without TenancyHeader the header changes nothing.
func TestTenancyOffIgnoresTheHeader(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	r := b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","payload":{}}]}`, testTenancyHeader, "acme")
	requireStatus(t, http.StatusCreated, r)
	r = b.do(t, http.MethodPost, "/api/v1/system/maintenance", `{"enabled":false}`, testTenancyHeader, "acme")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, []string{"orders"}, queueNames(t, b, testTenancyHeader, "acme"))
}

// TestTenancyWithJWT: the token's claim decides the tenant; a header that disagrees
// with it, or a header without a claim on a non-admin token, is 403.
func TestTenancyWithJWT(t *testing.T) {
	t.Parallel()
	v, sg := hsMode(t)
	b := setup(t, Options{Verifier: v, TenancyHeader: testTenancyHeader})
	acmeTok := sg.token(t, "acme/k1", "read-write", "queen_tenant", "acme")
	push := `{"items":[{"queue":"orders","payload":{}}]}`

	r := b.do(t, http.MethodPost, "/api/v1/push", push, bearer(acmeTok)...)
	requireStatus(t, http.StatusCreated, r)
	r = b.do(t, http.MethodPost, "/api/v1/push", push, append(bearer(acmeTok), testTenancyHeader, "acme")...)
	requireStatus(t, http.StatusCreated, r)
	r = b.do(t, http.MethodPost, "/api/v1/push", push, append(bearer(acmeTok), testTenancyHeader, "bob")...)
	requireStatus(t, http.StatusForbidden, r)
	rw := sg.token(t, "svc", "read-write")
	r = b.do(t, http.MethodPost, "/api/v1/push", push, append(bearer(rw), testTenancyHeader, "bob")...)
	requireStatus(t, http.StatusForbidden, r)
	bad := sg.token(t, "x", "read-write", "queen_tenant", 7)
	r = b.do(t, http.MethodPost, "/api/v1/push", push, bearer(bad)...)
	requireStatus(t, http.StatusForbidden, r)

	// A 1.x tenant (a UUID, any case) is claimed as the header names it; the 1.x
	// default tenant's UUID never means global in a claim.
	const uuidTenant = "0198F2C1-AAAA-7BBB-8CCC-123456789ABC"
	uuidTok := sg.token(t, "u/k1", "read-write", "queen_tenant", uuidTenant)
	r = b.do(t, http.MethodPost, "/api/v1/push", push, bearer(uuidTok)...)
	requireStatus(t, http.StatusCreated, r)
	r = b.do(t, http.MethodPost, "/api/v1/push", push, append(bearer(uuidTok), testTenancyHeader, strings.ToLower(uuidTenant))...)
	requireStatus(t, http.StatusCreated, r)
	defaultTok := sg.token(t, "d", "read-write", "queen_tenant", "00000000-0000-0000-0000-000000000001")
	requireStatus(t, http.StatusForbidden, b.do(t, http.MethodPost, "/api/v1/push", push, bearer(defaultTok)...))

	admin := sg.token(t, "op", "admin")
	require.Equal(t, []string{"orders"}, queueNames(t, b, append(bearer(admin), testTenancyHeader, strings.ToLower(uuidTenant))...))
	require.Equal(t, []string{"orders"}, queueNames(t, b, append(bearer(admin), testTenancyHeader, "acme")...))
	require.Empty(t, queueNames(t, b, append(bearer(admin), testTenancyHeader, "bob")...))
	require.Equal(t, []string{strings.ToLower(uuidTenant) + ":orders", "acme:orders"}, queueNames(t, b, bearer(admin)...))
}

// TestTenancyUUIDsOf1xClients: the tenant values Queen 1.x clients send are UUIDs. A
// canonical UUID in any case is one tenant (lowercased), its own island; the 1.x
// default tenant's UUID is the global scope; a UUID that is not canonical is 400.
func TestTenancyUUIDsOf1xClients(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	const upper = "0198F2C1-B0C1-7A2E-9A51-3C7D2E8F0A11"
	lower := strings.ToLower(upper)
	r := b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"uuid-q","payload":1}]}`, testTenancyHeader, upper)
	requireStatus(t, http.StatusCreated, r)
	require.Equal(t, []string{"uuid-q"}, queueNames(t, b, testTenancyHeader, lower), "the same tenant, lowercased")
	require.Equal(t, []string{lower + ":uuid-q"}, queueNames(t, b), "stored under the lowercased UUID")
	require.Empty(t, queueNames(t, b, testTenancyHeader, "acme"), "another tenant sees nothing")

	// A queue a push creates takes namespace and task from the relative name, for a UUID
	// tenant as for a tenant id; namespace pops and filters find it.
	r = b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"shop.cart","transactionId":"u-1","payload":1}]}`,
		testTenancyHeader, upper)
	requireStatus(t, http.StatusCreated, r)
	r = b.do(t, http.MethodGet, "/api/v1/resources/queues/shop.cart", "", testTenancyHeader, lower)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, []any{"shop", "cart"}, []any{r.object(t)["namespace"], r.object(t)["task"]})
	r = b.do(t, http.MethodGet, "/api/v1/pop?namespace=shop&task=cart&wait=false&autoAck=true", "", testTenancyHeader, lower)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "u-1", rows(t, r.object(t), "messages")[0]["transactionId"])

	r = b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"default-q","payload":1}]}`,
		testTenancyHeader, "00000000-0000-0000-0000-000000000001")
	requireStatus(t, http.StatusCreated, r)
	require.Contains(t, queueNames(t, b), "default-q", "the 1.x default tenant is the global scope")

	for _, v := range []string{"0198f2c1b0c17a2e9a513c7d2e8f0a11", "{0198f2c1-b0c1-7a2e-9a51-3c7d2e8f0a11}", "0198f2c1-b0c1-7a2e-9a51-3c7d2e8f0a1g"} {
		r := b.do(t, http.MethodGet, "/api/v1/resources/queues", "", testTenancyHeader, v)
		requireStatus(t, http.StatusBadRequest, r)
	}
}
