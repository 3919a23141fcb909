package daemon_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
)

// deadLetter pushes one message to queue as the key's tenant, pops it and acks it as
// dead-lettered; it returns the message's partition id.
func (p *tenantPair) deadLetter(t *testing.T, key createdKey, tenantID, queue, txID string) string {
	t.Helper()
	r := p.do(t, key, http.MethodPost, "/api/v1/push", map[string]any{"items": []map[string]any{
		{"queue": queue, "transactionId": txID, "payload": map[string]string{"t": tenantID}}}})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	msgs := p.pop(t, key, queue, 1, "")
	require.Len(t, msgs, 1)
	require.Equal(t, txID, msgs[0].TransactionID)
	r = p.do(t, key, http.MethodPost, "/api/v1/ack", map[string]any{"transactionId": txID,
		"partitionId": msgs[0].PartitionID, "leaseId": msgs[0].LeaseID, "status": "dlq", "error": "failed " + txID})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var res []map[string]any
	r.json(t, &res)
	require.Equal(t, true, res[0]["success"], "%s", r.body)
	return msgs[0].PartitionID
}

// dlq lists the transaction ids of the key's tenant's dead-letter entries of queue.
func (p *tenantPair) dlq(t *testing.T, key createdKey, queue string) []string {
	t.Helper()
	r := p.do(t, key, http.MethodGet, "/api/v1/dlq?queue="+queue, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var list struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	r.json(t, &list)
	ids := []string{}
	for _, m := range list.Messages {
		ids = append(ids, m.TransactionID)
	}
	return ids
}

// requeued checks a 200 requeue answer: the transaction ids requeued, each in queue
// as the tenant names it (the broker's stored name carries the tenant's prefix).
func requeued(t *testing.T, r reply, queue string, txIDs ...string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var res api.DLQRequeueResponse
	r.json(t, &res)
	require.Equal(t, len(txIDs), res.Requeued, "%s", r.body)
	for i, it := range res.Items {
		require.Equal(t, txIDs[i], it.TransactionID)
		require.Equal(t, queue, it.Queue)
	}
}

// The dead-letter routes that change state (DELETE /dlq, POST /dlq/requeue and the
// retry of one message) reach the broker in the tenant's scope, and a key limited to
// some queues is refused, before the broker, a queue outside its list or a selection
// by id; GET /analytics/consumer-lag is cluster-wide: operators only.
func TestDeadLetterRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createTenant(t, b.proxy, tenantSpec{ID: "acme"})
	createTenant(t, b.proxy, tenantSpec{ID: "bob"})
	p := &tenantPair{testBundle: b, acme: createKey(t, b.proxy, "acme", "admin"), bob: createKey(t, b.proxy, "bob", "admin")}
	ordersOnly := createKey(t, b.proxy, "acme", "admin", "orders*")

	ordersPID := p.deadLetter(t, p.acme, "acme", "orders", "o-1")
	p.deadLetter(t, p.acme, "acme", "orders", "o-2")
	billingPID := p.deadLetter(t, p.acme, "acme", "billing", "b-1")
	p.deadLetter(t, p.bob, "bob", "orders", "bob-1")

	t.Run("RefusedBeforeTheBroker", func(t *testing.T) {
		before := brokerAPIRequests(t, b.broker)
		for _, tc := range []struct {
			name, method, path string
			body               any
			status             int
		}{
			{"DeleteOtherQueue", http.MethodDelete, "/api/v1/dlq?queue=billing", nil, http.StatusForbidden},
			{"DeleteSecondQueueValue", http.MethodDelete, "/api/v1/dlq?queue=orders&queue=billing", nil, http.StatusForbidden},
			{"DeleteNoQueue", http.MethodDelete, "/api/v1/dlq", nil, http.StatusForbidden},
			{"DeletePrefixedQueue", http.MethodDelete, "/api/v1/dlq?queue=bob:orders", nil, http.StatusBadRequest},
			{"RequeueOtherQueue", http.MethodPost, "/api/v1/dlq/requeue", map[string]any{"filter": map[string]any{"queue": "billing"}}, http.StatusForbidden},
			{"RequeueFilterWithoutQueue", http.MethodPost, "/api/v1/dlq/requeue", map[string]any{"filter": map[string]any{}}, http.StatusForbidden},
			{"RequeueByID", http.MethodPost, "/api/v1/dlq/requeue", map[string]any{"items": []any{
				map[string]string{"partitionId": ordersPID, "transactionId": "o-1"}}}, http.StatusForbidden},
			{"RequeuePrefixedQueue", http.MethodPost, "/api/v1/dlq/requeue", map[string]any{"filter": map[string]any{"queue": "bob:orders"}}, http.StatusBadRequest},
			{"RetryByID", http.MethodPost, "/api/v1/messages/" + ordersPID + "/o-1/retry", nil, http.StatusForbidden},
		} {
			r := p.do(t, ordersOnly, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
			if tc.status == http.StatusForbidden {
				require.Equal(t, "forbidden", r.code(t), tc.name)
			}
		}
		r := call(t, http.MethodGet, b.proxy.URL+"/api/v1/analytics/consumer-lag", p.acme.Key, nil)
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Equal(t, "forbidden", r.code(t))
		require.Equal(t, before, brokerAPIRequests(t, b.broker), "refused requests reached the broker")
		require.ElementsMatch(t, []string{"o-1", "o-2"}, p.dlq(t, p.acme, "orders"))
		require.Equal(t, []string{"b-1"}, p.dlq(t, p.acme, "billing"))
	})

	t.Run("RetryInTheTenantsScope", func(t *testing.T) {
		r := p.do(t, p.bob, http.MethodPost, "/api/v1/messages/"+ordersPID+"/o-1/retry", nil)
		require.Equal(t, http.StatusNotFound, r.status, "bob retried acme's message: %s", r.body)
		r = p.do(t, p.acme, http.MethodPost, "/api/v1/messages/"+ordersPID+"/o-1/retry", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var moved api.DLQMoveResponse
		r.json(t, &moved)
		require.Equal(t, api.DLQMoveMoved, moved.Result, "%s", r.body)
		require.Equal(t, "orders", moved.Queue, "answered with the tenant's own queue name")
		require.Equal(t, "o-1", moved.OriginalTransactionID)
		require.NotNil(t, moved.ReplayedAs)
		require.Equal(t, "orders", moved.ReplayedAs.QueueName)
		require.Equal(t, []string{"o-2"}, p.dlq(t, p.acme, "orders"))
	})

	t.Run("RequeueByFilterInTheTenantsScope", func(t *testing.T) {
		r := p.do(t, ordersOnly, http.MethodPost, "/api/v1/dlq/requeue", map[string]any{"filter": map[string]any{"queue": "orders"}})
		requeued(t, r, "orders", "o-2")
		require.Empty(t, p.dlq(t, p.acme, "orders"))
		require.Equal(t, []string{"bob-1"}, p.dlq(t, p.bob, "orders"), "acme's requeue reached bob's queue of the same name")
	})

	t.Run("RequeueByIDWithAnAllQueuesKey", func(t *testing.T) {
		r := p.do(t, p.acme, http.MethodPost, "/api/v1/dlq/requeue", map[string]any{"items": []any{
			map[string]string{"partitionId": billingPID, "transactionId": "b-1"}}})
		requeued(t, r, "billing", "b-1")
		require.Empty(t, p.dlq(t, p.acme, "billing"))
	})

	t.Run("DeleteInTheTenantsScope", func(t *testing.T) {
		// A queue of its own: the requeued messages wait in orders.
		p.deadLetter(t, p.acme, "acme", "orders-late", "o-3")
		p.deadLetter(t, p.bob, "bob", "orders-late", "bob-2")
		r := p.do(t, ordersOnly, http.MethodDelete, "/api/v1/dlq?queue=orders-late", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var res api.DLQPurgeResponse
		r.json(t, &res)
		require.Equal(t, api.DLQPurgeResponse{Deleted: 1}, res)
		require.Empty(t, p.dlq(t, p.acme, "orders-late"))
		require.Equal(t, []string{"bob-2"}, p.dlq(t, p.bob, "orders-late"), "acme's delete reached bob's queue of the same name")
	})

	t.Run("ConsumerLagForOperators", func(t *testing.T) {
		createUser(t, b.proxy, "op", "operator-password", "admin", "")
		op := login(t, b.proxy, "op", "operator-password")
		r := call(t, http.MethodGet, b.proxy.URL+"/api/v1/analytics/consumer-lag", op, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var lag map[string]any
		r.json(t, &lag)
		require.Contains(t, lag, "series", "not the broker's consumer-lag answer: %s", r.body)
		require.Contains(t, lag, "timeRange", "not the broker's consumer-lag answer: %s", r.body)
	})
}
