package daemon_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForwardPushPopAck(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	k := createKey(t, b.proxy, "acme", "write")

	r := call(t, http.MethodPost, b.proxy.URL+"/api/v1/push", k.Key, pushBody("orders", 3, nil))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = call(t, http.MethodGet, b.proxy.URL+"/api/v1/pop/queue/orders?batch=10&wait=false", k.Key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var pop struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
		} `json:"messages"`
	}
	r.json(t, &pop)
	require.Len(t, pop.Messages, 3)
	// The broker scoped the push to the key's tenant: it stores acme:orders.
	require.Equal(t, map[string]int{"acme:orders": 3}, brokerQueues(t, b.broker))
}
