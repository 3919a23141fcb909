package httpapi

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// Bob's data is set up in global scope under its stored names ("bob:orders",
// "bob:g1"), which is what bob's scoped requests store; acme's requests are scoped.

var acmeHeader = []string{testTenancyHeader, "acme"}

// tenantCall is one scoped request of acme's.
func (b *testBundle) asAcme(t *testing.T, method, path, body string) response {
	t.Helper()
	return b.do(t, method, path, body, acmeHeader...)
}

// bobLeased pushes two messages to bob:orders and pops the first in queue mode,
// returning the popped message (with its leaseId) and the transaction id of the
// second, still pending.
func (b *testBundle) bobLeased(t *testing.T) (leased map[string]any, pendingTx string) {
	t.Helper()
	b.pushed(t, "bob:orders", "p", "bob-1", `{"who":"bob"}`)
	b.pushed(t, "bob:orders", "p", "bob-2", `{"who":"bob"}`)
	return b.popPartition(t, "bob:orders", "p", "", 1)[0], "bob-2"
}

// TestTenancyAckAndLeaseOfAnotherTenant: acme's ack, batch ack, transaction ack and
// lease extension with bob's ids answer as unknown, and bob's message stays leased
// to bob and acknowledgeable by him.
func TestTenancyAckAndLeaseOfAnotherTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	m, _ := b.bobLeased(t)
	ack := mustJSON(t, map[string]any{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
		"leaseId": m["leaseId"]})

	r := b.asAcme(t, http.MethodPost, "/api/v1/ack", ack)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, false, r.array(t)[0]["success"])
	require.Equal(t, unresolvable, r.array(t)[0]["error"])

	r = b.asAcme(t, http.MethodPost, "/api/v1/ack/batch", `{"acknowledgments":[`+ack+`]}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, unresolvable, r.array(t)[0]["error"])

	r = b.asAcme(t, http.MethodPost, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{
		map[string]any{"type": "push", "queue": "orders", "payload": map[string]any{}},
		map[string]any{"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"]},
	}}))
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, false, r.object(t)["success"], "body: %s", r.body)
	require.Empty(t, queueNames(t, b, acmeHeader...), "the rolled-back push created nothing")

	r = b.asAcme(t, http.MethodPost, "/api/v1/lease/"+m["leaseId"].(string)+"/extend", `{"seconds":60}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, false, r.array(t)[0]["success"])
	require.Equal(t, "Lease not found", r.array(t)[0]["error"])

	// Still bob's: his lease extends and his ack succeeds.
	r = b.do(t, http.MethodPost, "/api/v1/lease/"+m["leaseId"].(string)+"/extend", `{"seconds":60}`,
		testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.array(t)[0]["success"])
	r = b.do(t, http.MethodPost, "/api/v1/ack", ack, testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.array(t)[0]["success"], "body: %s", r.body)
	require.Equal(t, "orders", r.array(t)[0]["queueName"])
}

// TestTenancyHidesGlobalGroupsOnItsQueues: an operator's global consumer group reading
// acme's queue is not acme's: acme's group listings do not show it (nor its lease id),
// and acme cannot extend its lease; acme's own group and queue mode stay visible, and
// the operator still extends the lease.
func TestTenancyHidesGlobalGroupsOnItsQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	for _, tx := range []string{"a-1", "a-2", "a-3"} {
		b.pushed(t, "acme:orders", "p", tx, `{"who":"acme"}`)
	}
	ops := b.popPartition(t, "acme:orders", "p", "ops-archiver", 1)[0] // global, unscoped group
	b.popPartition(t, "acme:orders", "p", "acme:g1", 1)                // acme's own group
	b.popPartition(t, "acme:orders", "p", "", 1)                       // queue mode

	groups := func(path, key string) []string {
		t.Helper()
		r := b.asAcme(t, http.MethodGet, path, "")
		requireStatus(t, http.StatusOK, r)
		var names []string
		for _, row := range r.array(t) {
			names = append(names, row[key].(string))
		}
		sort.Strings(names)
		return names
	}
	require.Equal(t, []string{"__QUEUE_MODE__", "g1"}, groups("/api/v1/consumer-groups", "name"))
	require.Equal(t, []string{"__QUEUE_MODE__", "g1"}, groups("/api/v1/consumer-groups/lagging?minLagSeconds=0", "consumer_group"))
	require.NotContains(t, string(b.asAcme(t, http.MethodGet, "/api/v1/consumer-groups/lagging?minLagSeconds=0", "").body),
		ops["leaseId"].(string), "the operator's lease id")

	lease := "/api/v1/lease/" + ops["leaseId"].(string) + "/extend"
	r := b.asAcme(t, http.MethodPost, lease, `{"seconds":604800}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "Lease not found", r.array(t)[0]["error"])
	r = b.do(t, http.MethodPost, lease, `{"seconds":60}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, true, r.array(t)[0]["success"], "the operator's own extension")
}

// TestTenancyMessagesOfAnotherTenant: GET and DELETE of bob's message by id are 404
// and "not found" for acme, and the message is kept; acme's listing has none of bob's.
func TestTenancyMessagesOfAnotherTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	pid := b.pushed(t, "bob:orders", "p", "bob-1", `{"who":"bob"}`)
	r := b.asAcme(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","transactionId":"acme-1","payload":{}}]}`)
	requireStatus(t, http.StatusCreated, r)
	path := "/api/v1/messages/" + pid + "/bob-1"

	requireStatus(t, http.StatusNotFound, b.asAcme(t, http.MethodGet, path, ""))
	r = b.asAcme(t, http.MethodDelete, path, "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, false, r.object(t)["success"])
	r = b.asAcme(t, http.MethodPost, path+"/retry", "")
	requireStatus(t, http.StatusNotFound, r)

	r = b.do(t, http.MethodGet, "/api/v1/messages/"+pid+"/bob-1", "", testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "orders", r.object(t)["queue"])
	require.Equal(t, "orders/p", r.object(t)["queuePath"])

	list := rows(t, b.asAcme(t, http.MethodGet, "/api/v1/messages", "").object(t), "messages")
	require.Len(t, list, 1)
	require.Equal(t, "acme-1", list[0]["transactionId"])
	require.Equal(t, "orders", list[0]["queue"])
	global := rows(t, b.list(t, "/api/v1/messages"), "messages")
	require.Len(t, global, 2, "the global listing has both")
}

// TestTenancyConsumerGroups: deleting acme's group g1 keeps bob's g1; listings and
// details show only the tenant's groups, under relative names.
func TestTenancyConsumerGroups(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	b.pushed(t, "bob:orders", "p", "bob-1", `{}`)
	b.popPartition(t, "bob:orders", "p", "bob:g1", 1)
	r := b.asAcme(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","partition":"p","payload":{}}]}`)
	requireStatus(t, http.StatusCreated, r)
	r = b.asAcme(t, http.MethodGet, "/api/v1/pop/queue/orders?consumerGroup=g1&wait=false", "")
	requireStatus(t, http.StatusOK, r)

	r = b.asAcme(t, http.MethodGet, "/api/v1/consumer-groups", "")
	requireStatus(t, http.StatusOK, r)
	groups := r.array(t)
	require.Len(t, groups, 1, "body: %s", r.body)
	require.Equal(t, "g1", groups[0]["name"])
	require.Equal(t, "orders", groups[0]["queueName"])
	r = b.asAcme(t, http.MethodGet, "/api/v1/consumer-groups/g1", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, []string{"orders"}, keys(r.object(t)))

	r = b.asAcme(t, http.MethodPost, "/api/v1/consumer-groups/g1/queues/orders/seek", `{"toEnd":true}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "g1", r.object(t)["consumerGroup"])
	require.Equal(t, "orders", r.object(t)["queueName"])
	requireStatus(t, http.StatusBadRequest, b.asAcme(t, http.MethodPost,
		"/api/v1/consumer-groups/g1/queues/bob:orders/seek", `{"toEnd":true}`))
	r = b.asAcme(t, http.MethodPost, "/api/v1/consumer-groups/g1/queues/orders/partitions/p/seek", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "orders", r.object(t)["queueName"])
	r = b.asAcme(t, http.MethodPost, "/api/v1/consumer-groups/g1/subscription",
		`{"subscriptionTimestamp":"2026-01-01T00:00:00Z"}`)
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "g1", r.object(t)["consumerGroup"])
	r = b.asAcme(t, http.MethodGet, "/api/v1/consumer-groups/lagging?minLagSeconds=0", "")
	requireStatus(t, http.StatusOK, r)
	for _, c := range r.array(t) {
		require.Equal(t, "orders", c["queueName"])
	}

	r = b.asAcme(t, http.MethodDelete, "/api/v1/consumer-groups/g1", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "g1", r.object(t)["consumerGroup"])
	require.EqualValues(t, 1, r.object(t)["deletedPartitions"])
	r = b.asAcme(t, http.MethodGet, "/api/v1/consumer-groups/g1", "")
	requireStatus(t, http.StatusOK, r)
	require.JSONEq(t, `{}`, string(r.body), "acme's g1 is gone")

	r = b.do(t, http.MethodGet, "/api/v1/consumer-groups/g1", "", testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, []string{"orders"}, keys(r.object(t)), "bob's g1 is intact")

	// Queue mode is no tenant's name: deleting it as acme leaves bob's cursors.
	b.popPartition(t, "bob:orders", "p", "", 1)
	r = b.asAcme(t, http.MethodDelete, "/api/v1/consumer-groups/__QUEUE_MODE__", "")
	requireStatus(t, http.StatusOK, r)
	require.EqualValues(t, 0, r.object(t)["deletedPartitions"])
	r = b.get(t, "/api/v1/consumer-groups/__QUEUE_MODE__")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, []string{"bob:orders"}, keys(r.object(t)))
}

// TestTenancyNamespacePop: a namespace pop sees only the tenant's queues, and
// answers with relative names.
func TestTenancyNamespacePop(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"bob:jobs","namespace":"billing"}`))
	b.pushed(t, "bob:jobs", "", "bob-1", `{}`)
	r := b.asAcme(t, http.MethodGet, "/api/v1/pop?namespace=billing&wait=false", "")
	requireStatus(t, http.StatusNoContent, r)

	requireStatus(t, http.StatusOK, b.asAcme(t, http.MethodPost, "/api/v1/configure", `{"queue":"jobs","namespace":"billing"}`))
	requireStatus(t, http.StatusCreated, b.asAcme(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"jobs","transactionId":"acme-1","payload":{}}]}`))
	r = b.asAcme(t, http.MethodGet, "/api/v1/pop?namespace=billing&wait=false&batch=10&autoAck=true", "")
	requireStatus(t, http.StatusOK, r)
	msgs := rows(t, r.object(t), "messages")
	require.Len(t, msgs, 1)
	require.Equal(t, "acme-1", msgs[0]["transactionId"])
	require.Equal(t, "jobs", msgs[0]["queue"])

	r = b.asAcme(t, http.MethodGet, "/api/v1/resources/namespaces", "")
	requireStatus(t, http.StatusOK, r)
	ns := rows(t, r.object(t), "namespaces")
	require.Len(t, ns, 1)
	require.EqualValues(t, 1, ns[0]["queues"])

	// A queue created by a push takes its namespace and task from the relative name.
	requireStatus(t, http.StatusCreated, b.asAcme(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"ledger.post","transactionId":"acme-2","payload":{}}]}`))
	r = b.asAcme(t, http.MethodGet, "/api/v1/resources/queues/ledger.post", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "ledger", r.object(t)["namespace"])
	require.Equal(t, "post", r.object(t)["task"])
	r = b.asAcme(t, http.MethodGet, "/api/v1/pop?namespace=ledger&task=post&wait=false", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "ledger.post", rows(t, r.object(t), "messages")[0]["queue"])
}

// TestTenancyTraces: trace names, traces by name and by message show only the
// tenant's; a trace on bob's message is 404 for acme.
func TestTenancyTraces(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	bobPID := b.pushed(t, "bob:orders", "", "bob-1", `{}`)
	requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/traces", mustJSON(t, map[string]any{
		"partitionId": bobPID, "transactionId": "bob-1", "data": map[string]any{}, "traceNames": "t-bob"})))
	r := b.asAcme(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","transactionId":"acme-1","payload":{}}]}`)
	requireStatus(t, http.StatusCreated, r)
	acmePID := r.array(t)[0]["partition_id"].(string)
	requireStatus(t, http.StatusCreated, b.asAcme(t, http.MethodPost, "/api/v1/traces", mustJSON(t, map[string]any{
		"partitionId": acmePID, "transactionId": "acme-1", "data": map[string]any{}, "traceNames": "t-acme",
		"consumerGroup": "g1"})))

	requireStatus(t, http.StatusNotFound, b.asAcme(t, http.MethodPost, "/api/v1/traces", mustJSON(t, map[string]any{
		"partitionId": bobPID, "transactionId": "bob-1", "data": map[string]any{}, "traceNames": "t-acme"})))

	r = b.asAcme(t, http.MethodGet, "/api/v1/traces/names", "")
	requireStatus(t, http.StatusOK, r)
	names := rows(t, r.object(t), "trace_names")
	require.Equal(t, []any{"t-acme"}, field(names, "trace_name"))
	require.EqualValues(t, 1, r.object(t)["total"])

	r = b.asAcme(t, http.MethodGet, "/api/v1/traces/by-name/t-bob", "")
	requireStatus(t, http.StatusOK, r)
	require.EqualValues(t, 0, r.object(t)["total"])
	r = b.asAcme(t, http.MethodGet, "/api/v1/traces/by-name/t-acme", "")
	requireStatus(t, http.StatusOK, r)
	tr := rows(t, r.object(t), "traces")
	require.Len(t, tr, 1)
	require.Equal(t, "orders", tr[0]["queue_name"])
	require.Equal(t, "g1", tr[0]["consumer_group"])

	r = b.asAcme(t, http.MethodGet, "/api/v1/traces/"+bobPID+"/bob-1", "")
	requireStatus(t, http.StatusOK, r)
	require.Empty(t, rows(t, r.object(t), "traces"))

	r = b.get(t, "/api/v1/traces/names")
	require.Len(t, rows(t, r.object(t), "trace_names"), 2, "the global view has both names")
}

// TestTenancyDLQ: the dead-letter listing, purge and requeue touch only the tenant's
// entries.
func TestTenancyDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	bobPID := b.deadLetter(t, "bob:orders", "p", "bob-1", "", `{}`)

	r := b.asAcme(t, http.MethodGet, "/api/v1/dlq", "")
	requireStatus(t, http.StatusOK, r)
	require.EqualValues(t, 0, r.object(t)["total"])
	r = b.asAcme(t, http.MethodDelete, "/api/v1/dlq?queue=orders", "")
	requireStatus(t, http.StatusOK, r)
	require.EqualValues(t, 0, r.object(t)["deleted"])
	r = b.asAcme(t, http.MethodPost, "/api/v1/dlq/requeue", mustJSON(t, map[string]any{
		"items": []any{map[string]any{"partitionId": bobPID, "transactionId": "bob-1"}}}))
	requireStatus(t, http.StatusNotFound, r)

	r = b.do(t, http.MethodGet, "/api/v1/dlq", "", testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	entries := rows(t, r.object(t), "messages")
	require.Len(t, entries, 1, "bob's entry is kept")
	require.Equal(t, "orders", entries[0]["queue"])
	require.Equal(t, "orders", entries[0]["queueName"])

	r = b.do(t, http.MethodPost, "/api/v1/dlq/requeue", `{"filter":{"queue":"orders"}}`, testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	require.EqualValues(t, 1, r.object(t)["requeued"])
	require.Equal(t, "orders", rows(t, r.object(t), "items")[0]["queue"])
}

// TestTenancyStatusViews: the status and resource listings cover the tenant's queues
// only, under relative names; another tenant's queue is 404.
func TestTenancyStatusViews(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	b.pushed(t, "bob:orders", "p", "bob-1", `{}`)
	requireStatus(t, http.StatusCreated, b.asAcme(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"orders","partition":"p","payload":{}},{"queue":"billing","payload":{}}]}`))

	r := b.asAcme(t, http.MethodGet, "/api/v1/status/queues", "")
	requireStatus(t, http.StatusOK, r)
	var names []string
	for _, q := range rows(t, r.object(t), "queues") {
		names = append(names, q["name"].(string))
	}
	sort.Strings(names)
	require.Equal(t, []string{"billing", "orders"}, names)

	r = b.asAcme(t, http.MethodGet, "/api/v1/status/queues/orders", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "orders", r.object(t)["queue"].(map[string]any)["name"])

	// Consumer groups are answered under their relative names too.
	requireStatus(t, http.StatusOK, b.asAcme(t, http.MethodGet, "/api/v1/pop/queue/orders?consumerGroup=g1", ""))
	for _, path := range []string{"/api/v1/status/queues/orders", "/api/v1/resources/queues/orders", "/api/v1/status"} {
		r = b.asAcme(t, http.MethodGet, path, "")
		requireStatus(t, http.StatusOK, r)
		groups := rows(t, r.object(t), "consumerGroups")
		require.NotEmpty(t, groups, path)
		var seen []string
		for _, g := range groups {
			seen = append(seen, g["group"].(string))
		}
		require.Contains(t, seen, "g1", "%s: %s", path, r.body)
		for _, g := range seen {
			require.NotContains(t, g, ":", "%s: %s", path, r.body)
		}
	}
	r = b.asAcme(t, http.MethodGet, "/api/v1/status/queues/orders/messages", "")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, "orders", r.array(t)[0]["queue"])

	r = b.asAcme(t, http.MethodGet, "/api/v1/resources/partitions", "")
	requireStatus(t, http.StatusOK, r)
	require.EqualValues(t, 2, r.object(t)["total"])
	for _, p := range rows(t, r.object(t), "partitions") {
		require.NotContains(t, p["queue"], ":")
	}

	requireStatus(t, http.StatusNotFound, b.do(t, http.MethodGet, "/api/v1/status/queues/billing", "",
		testTenancyHeader, "bob"))
	requireStatus(t, http.StatusBadRequest, b.asAcme(t, http.MethodGet, "/api/v1/status/queues/bob:orders", ""))
}

// TestTenancyUsageRoute: GET /internal/api/tenancy/usage has computedAt null and no
// tenants until the usage was computed, then answers it; tenants are refused.
func TestTenancyUsageRoute(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{TenancyHeader: testTenancyHeader}, st)

	r := b.get(t, "/internal/api/tenancy/usage")
	requireStatus(t, http.StatusOK, r)
	require.Equal(t, map[string]any{"computedAt": nil, "tenants": []any{}}, r.object(t))

	requireStatus(t, http.StatusCreated, b.asAcme(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"orders","payload":{"n":1}},{"queue":"orders","payload":{"n":2}}]}`))
	computed := time.Now().UTC().Truncate(time.Millisecond)
	n, err := st.TenantUsageRefresh(t.Context(), computed)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	r = b.get(t, "/internal/api/tenancy/usage")
	requireStatus(t, http.StatusOK, r)
	body := r.object(t)
	require.Equal(t, api.FormatMillis(computed), body["computedAt"])
	tenants := rows(t, body, "tenants")
	require.Len(t, tenants, 1)
	require.Equal(t, "acme", tenants[0]["tenant"])
	require.Equal(t, []any{"orders"}, tenants[0]["queues"])
	require.EqualValues(t, 1, tenants[0]["partitions"])
	require.EqualValues(t, 2, tenants[0]["messages"])
	require.Positive(t, tenants[0]["bytes"])

	requireStatus(t, http.StatusForbidden, b.asAcme(t, http.MethodGet, "/internal/api/tenancy/usage", ""))
}

// TestTenancyErrorTextsNameRelativeQueues: the messages the broker writes about a
// tenant's queue (full at maxSize, a duplicate in a transaction) name it as the tenant
// does, never with the stored prefix.
func TestTenancyErrorTextsNameRelativeQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TenancyHeader: testTenancyHeader})
	requireStatus(t, http.StatusOK, b.asAcme(t, http.MethodPost, "/api/v1/configure", `{"queue":"fullq","options":{"maxSize":1}}`))
	r := b.asAcme(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"fullq","payload":1},{"queue":"fullq","payload":2}]}`)
	requireStatus(t, http.StatusCreated, r)
	res := r.array(t)
	require.Equal(t, `queue "fullq" is full: maxSize reached`, res[1]["error"])

	requireStatus(t, http.StatusCreated, b.asAcme(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"txd","transactionId":"d1","payload":1}]}`))
	r = b.asAcme(t, http.MethodPost, "/api/v1/transaction",
		`{"operations":[{"type":"push","items":[{"queue":"txd","transactionId":"d1","payload":1}]}]}`)
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	require.Equal(t, false, m["success"])
	require.NotContains(t, m["error"], "acme:", "%v", m)
	require.Contains(t, m["error"], `queue "txd"`, "%v", m)
	for _, x := range m["results"].([]any) {
		if e, ok := x.(map[string]any)["error"].(string); ok {
			require.NotContains(t, e, "acme:", "%v", x)
		}
	}

	// Error answers through the common error table: a requeue of a dead letter the
	// group does not have.
	r = b.asAcme(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"rq","transactionId":"r1","payload":1}]}`)
	requireStatus(t, http.StatusCreated, r)
	pid := r.array(t)[0]["partition_id"].(string)
	r = b.asAcme(t, http.MethodPost, "/api/v1/dlq/requeue",
		`{"items":[{"partitionId":"`+pid+`","transactionId":"r1","consumerGroup":"g1"}]}`)
	requireStatus(t, http.StatusNotFound, r)
	require.Contains(t, r.object(t)["error"], `consumer group "g1"`, "%s", r.body)
	require.NotContains(t, r.object(t)["error"], "acme:", "%s", r.body)
}
