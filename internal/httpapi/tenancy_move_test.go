package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTenancyDepthAndDLQMove: depth, retry and replay see only the tenant's queues
// and entries; a replay's redirect lands in the tenant's own queue.
func TestTenancyDepthAndDLQMove(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	bobPID := b.deadLetter(t, "bob:orders", "p", "bob-1", "", `1`)
	bobEntry := b.dlqEntries(t, "bob:orders")[0]["dlqId"].(string)

	r := b.asAcme(t, http.MethodGet, "/api/v1/resources/queues/orders/depth", "")
	requireStatus(t, http.StatusNotFound, r)
	require.Equal(t, "Queue not found", r.object(t)["error"], "bob's queue is not acme's")
	requireStatus(t, http.StatusNotFound, b.asAcme(t, http.MethodPost, "/api/v1/messages/"+bobPID+"/bob-1/retry", ""))
	requireStatus(t, http.StatusNotFound, b.asAcme(t, http.MethodPost, "/api/v1/dlq/"+bobEntry+"/replay", ""))
	require.Len(t, b.dlqEntries(t, "bob:orders"), 1, "bob's entry stays")

	b.deadLetter(t, "acme:orders", "p", "acme-1", "", `2`)
	acmeEntry := rows(t, b.asAcme(t, http.MethodGet, "/api/v1/dlq?queue=orders", "").object(t), "messages")[0]
	r = b.asAcme(t, http.MethodPost, "/api/v1/dlq/"+acmeEntry["dlqId"].(string)+"/replay", `{"queue":"elsewhere"}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "elsewhere", r.object(t)["queue"], "answered without the tenant prefix")
	d := b.asAcme(t, http.MethodGet, "/api/v1/resources/queues/elsewhere/depth", "")
	requireStatus(t, http.StatusOK, d)
	require.Equal(t, []any{"elsewhere", 1.0}, []any{d.object(t)["queue"], d.object(t)["pending"]})
	requireStatus(t, http.StatusOK, b.get(t, "/api/v1/resources/queues/acme:elsewhere/depth"))
}
