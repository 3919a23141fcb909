package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
)

// tenantDo sends one request to the daemon as tenant ("" = global) and decodes a
// JSON answer into out (when not nil); it returns the status.
func tenantDo(t *testing.T, srv *daemontest.Server, tenant, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tenant != "" {
		req.Header.Set("X-Queen-Tenant", tenant)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode < 300 && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode
}

// TestTenancyDaemon: a daemon with QUEEN_TENANCY_HEADER keeps two tenants' "orders"
// apart (each pops and lists only its own ten messages; the global view has both
// stored names), and its tenancy_usage job fills GET /internal/api/tenancy/usage, a
// tenant's scheduled timers counted as its messages.
func TestTenancyDaemon(t *testing.T) {
	t.Parallel()
	srv := daemontest.Start(t, daemontest.Options{Env: []string{
		"QUEEN_TENANCY_HEADER=X-Queen-Tenant", "QUEEN_TENANCY_USAGE_INTERVAL=1s",
	}})
	for _, tenant := range []string{"acme", "bob"} {
		items := make([]string, 10)
		for i := range items {
			items[i] = fmt.Sprintf(`{"queue":"orders","payload":{"t":%q,"i":%d}}`, tenant, i)
		}
		require.Equal(t, http.StatusCreated, tenantDo(t, srv, tenant, http.MethodPost, "/api/v1/push",
			`{"items":[`+strings.Join(items, ",")+`]}`, nil))
	}
	for _, tenant := range []string{"acme", "bob"} {
		var list api.QueueList
		require.Equal(t, http.StatusOK, tenantDo(t, srv, tenant, http.MethodGet, "/api/v1/resources/queues", "", &list))
		require.Len(t, list.Queues, 1)
		require.Equal(t, "orders", list.Queues[0].Name)
		var pop struct {
			Messages []struct {
				Queue string          `json:"queue"`
				Data  json.RawMessage `json:"data"`
			} `json:"messages"`
		}
		require.Equal(t, http.StatusOK, tenantDo(t, srv, tenant, http.MethodGet,
			"/api/v1/pop/queue/orders?batch=20&wait=false", "", &pop))
		require.Len(t, pop.Messages, 10)
		for _, m := range pop.Messages {
			require.Equal(t, "orders", m.Queue)
			require.Contains(t, string(m.Data), `"t":"`+tenant+`"`)
		}
	}
	var global api.QueueList
	require.Equal(t, http.StatusOK, tenantDo(t, srv, "", http.MethodGet, "/api/v1/resources/queues", "", &global))
	var names []string
	for _, q := range global.Queues {
		names = append(names, q.Name)
	}
	require.ElementsMatch(t, []string{"acme:orders", "bob:orders"}, names)

	// A tenant with timers only: each counts as the message it becomes, and its queue
	// as the tenant's, before the queue exists (so timers are under the quotas).
	var ops []string
	for i := range 3 {
		ops = append(ops, fmt.Sprintf(`{"op":"schedule","queue":"later","timerKey":"k%d","delayMs":3600000,"txn":"t%d","payload":"e30="}`, i, i))
	}
	require.Equal(t, http.StatusOK, tenantDo(t, srv, "tim", http.MethodPost, "/api/v1/timers", "["+strings.Join(ops, ",")+"]", nil))

	var usage api.TenancyUsage
	require.Eventually(t, func() bool {
		usage = api.TenancyUsage{}
		return tenantDo(t, srv, "", http.MethodGet, "/internal/api/tenancy/usage", "", &usage) == http.StatusOK &&
			len(usage.Tenants) == 3
	}, 30*time.Second, 100*time.Millisecond, "the usage job runs within its interval")
	tim := usage.Tenants[2]
	require.Equal(t, "tim", tim.Tenant)
	require.Equal(t, []string{"later"}, tim.Queues)
	require.EqualValues(t, 3, tim.Messages)
	require.EqualValues(t, 6, tim.Bytes, "three payloads of {}")
	for i, tenant := range []string{"acme", "bob"} {
		u := usage.Tenants[i]
		require.Equal(t, tenant, u.Tenant)
		require.Equal(t, []string{"orders"}, u.Queues)
		require.EqualValues(t, 1, u.Partitions)
		require.EqualValues(t, 10, u.Messages, "popped messages are still stored")
		require.Positive(t, u.Bytes)
	}
}
