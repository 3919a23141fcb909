package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

// Global routes, unknown routes and non-canonical paths never reach a broker.
func TestGlobalRoutesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	adm := createKey(t, b.proxy, "acme", "admin")
	before := brokerAPIRequests(t, b.broker)

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
	require.Equal(t, before, brokerAPIRequests(t, b.broker), "refused requests reached the broker")
	require.Empty(t, brokerQueues(t, b.broker))

	// The maintenance mode is unchanged at the broker.
	r = call(t, http.MethodGet, b.broker.URL+"/api/v1/system/maintenance", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	var m api.MaintenanceStatus
	r.json(t, &m)
	require.False(t, m.MaintenanceMode)
}

// A broker with tenancy off, or scoping by another header, is misconfigured: the
// proxy's first check says so (its state goes from unknown straight to misconfigured,
// as its log shows), tenant requests get 503, and the broker sees none of them. The
// check counts, not the clock: the 30 s wait only turns a stuck check into a failure.
func TestTenancyOffBrokerGetsNoTenantTraffic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"TenancyOff", nil},
		{"AnotherHeader", []string{"QUEEN_TENANCY_HEADER=X-Other-Tenant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			broker := daemontest.Start(t, daemontest.Options{Env: tc.env})
			logs := &testlog.Buffer{}
			p := proxytest.Start(t, proxytest.Options{Backends: []string{broker.URL}, Logs: logs, Env: []string{"LOG_LEVEL=info"}})
			createTenant(t, p, tenantSpec{ID: "acme"})
			k := createKey(t, p, "acme", "write")
			p.WaitBackends(t, "misconfigured", 30*time.Second)
			require.Equal(t, []string{"unknown>misconfigured"}, backendMoves(logs, broker.URL),
				"the first check did not decide: %s", logs.Tail(4096))
			before := brokerAPIRequests(t, broker)
			r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil))
			require.Equal(t, http.StatusServiceUnavailable, r.status)
			require.Equal(t, "unavailable", r.code(t))
			require.Equal(t, "1", r.header.Get("Retry-After"))
			require.Equal(t, before, brokerAPIRequests(t, broker), "a tenant request reached the misconfigured broker")
			require.Empty(t, brokerQueues(t, broker))
		})
	}
}

// A body over the tenant's maxRequestBytes is 413; with one of two brokers stopped,
// the checks take it out (up to down, in the proxy's log) and requests succeed again.
func TestBodyLimitAndFailover(t *testing.T) {
	t.Parallel()
	b1 := proxytest.StartBroker(t, daemontest.Options{})
	b2 := proxytest.StartBroker(t, daemontest.Options{DBURL: b1.DBURL})
	logs := &testlog.Buffer{}
	p := proxytest.Start(t, proxytest.Options{Backends: []string{b1.URL, b2.URL}, Logs: logs, Env: []string{"LOG_LEVEL=info"}})
	p.WaitBackends(t, "up", 10*time.Second)
	createTenant(t, p, tenantSpec{ID: "acme", Limits: map[string]any{"maxRequestBytes": 2048}})
	k := createKey(t, p, "acme", "write")

	r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 100, nil))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	require.Equal(t, "payload_too_large", r.code(t))
	require.Empty(t, brokerQueues(t, b1), "the refused push reached a broker")

	// A streamed route's body, sent chunked (no Content-Length to refuse it by), is cut
	// at the limit on its way to the broker: 413 as well, not a broker failure.
	chunked := io.MultiReader(strings.NewReader(`{"seconds":60,"pad":"`), strings.NewReader(strings.Repeat("x", 3000)),
		strings.NewReader(`"}`))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		p.URL+"/api/v1/lease/019dc9b7-0000-7000-8000-000000000001/extend", chunked)
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+k.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", raw)
	require.Contains(t, string(raw), "payload_too_large")

	// Both brokers take the tenant's requests.
	seen1, seen2 := brokerAPIRequests(t, b1), brokerAPIRequests(t, b2)
	for range 20 {
		require.Equal(t, http.StatusCreated, call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil)).status)
	}
	require.Greater(t, brokerAPIRequests(t, b1), seen1, "broker 1 took no request")
	require.Greater(t, brokerAPIRequests(t, b2), seen2, "broker 2 took no request")

	// With one stopped, the checks (every 200 ms here) mark it down and requests
	// succeed again. The event is asserted, not its timing: the 30 s wait only turns
	// a proxy that never recovers into a failure.
	require.NoError(t, b2.Stop())
	stopped := time.Now()
	testwait.For(t, 30*time.Second, 20*time.Millisecond, func() error {
		if moves := backendMoves(logs, b2.URL); !slices.Contains(moves, "up>down") {
			return fmt.Errorf("the stopped broker is not marked down: its moves are %v", moves)
		}
		for range 10 {
			if r := call(t, http.MethodPost, p.URL+"/api/v1/push", k.Key, pushBody("orders", 1, nil)); r.status != http.StatusCreated {
				return fmt.Errorf("a push after the stop answered %d: %s", r.status, r.body)
			}
		}
		return nil
	})
	t.Logf("all requests succeed %s after the stop", time.Since(stopped))
	require.GreaterOrEqual(t, brokerQueues(t, b1)["acme:orders"], 30, "the pushes after the stop are not stored")
}

// backendMoves lists the state changes the proxy logged for the backend at url, in
// order, as "from>to".
func backendMoves(logs *testlog.Buffer, url string) []string {
	var moves []string
	for line := range strings.Lines(logs.String()) {
		if !strings.Contains(line, `msg="backend state"`) || !strings.Contains(line, "upstream="+url+" ") {
			continue
		}
		var from, to string
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "from="); ok {
				from = v
			} else if v, ok := strings.CutPrefix(f, "to="); ok {
				to = v
			}
		}
		moves = append(moves, from+">"+to)
	}
	return moves
}
