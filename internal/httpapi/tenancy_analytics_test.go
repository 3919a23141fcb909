package httpapi

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// asTenant is one request scoped to tenant.
func (b *testBundle) asTenant(t *testing.T, tenant, method, path string) response {
	t.Helper()
	r := b.do(t, method, path, "", testTenancyHeader, tenant)
	requireStatus(t, http.StatusOK, r)
	return r
}

// tenantActivity sets up two tenants with activity, flushed to the analytics tables:
//   - acme: queue orders (namespace shop), 3 messages pushed in one request, 2 popped
//     with autoAck; parked averages of 2 on replica h1/w1 and 3 on h2/w2 a minute ago.
//   - bob: queue orders (created by the push: namespace orders), 5 pushed in one
//     request, 1 popped and left leased; queue billing (namespace fin), 1 pushed,
//     popped and dead-lettered with "failed b-dlq"; a parked average of 1 on orders
//     at h1/w1.
func tenantActivity(t *testing.T) *testBundle {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := start(t, Options{TenancyHeader: testTenancyHeader}, st)

	acme := func(method, path, body string) response {
		return b.do(t, method, path, body, testTenancyHeader, "acme")
	}
	requireStatus(t, http.StatusOK, acme(http.MethodPost, "/api/v1/configure", `{"queue":"orders","namespace":"shop"}`))
	requireStatus(t, http.StatusCreated, acme(http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"orders","payload":{}},{"queue":"orders","payload":{}},{"queue":"orders","payload":{}}]}`))
	r := acme(http.MethodGet, "/api/v1/pop/queue/orders?batch=2&wait=false&autoAck=true", "")
	requireStatus(t, http.StatusOK, r)
	require.Len(t, rows(t, r.object(t), "messages"), 2)

	r = b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","payload":{}},{"queue":"orders","payload":{}},`+
		`{"queue":"orders","payload":{}},{"queue":"orders","payload":{}},{"queue":"orders","payload":{}}]}`,
		testTenancyHeader, "bob")
	requireStatus(t, http.StatusCreated, r)
	r = b.do(t, http.MethodGet, "/api/v1/pop/queue/orders?batch=1&wait=false", "", testTenancyHeader, "bob")
	requireStatus(t, http.StatusOK, r)
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"bob:billing","namespace":"fin"}`))
	b.deadLetter(t, "bob:billing", "Default", "b-dlq", "", `{}`)

	_, err = b.broker.Analytics().Flush(t.Context())
	require.NoError(t, err)
	minute := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	for _, f := range []store.ActivityFlush{
		{Hostname: "h1", WorkerID: "w1", PID: 1, Parked: []store.ParkedReplica{
			{Bucket: minute, Queue: "acme:orders", Parked: 2, Max: 2}, {Bucket: minute, Queue: "bob:orders", Parked: 1, Max: 1}}},
		{Hostname: "h2", WorkerID: "w2", PID: 2, Parked: []store.ParkedReplica{
			{Bucket: minute, Queue: "acme:orders", Parked: 3, Max: 3}}},
	} {
		require.NoError(t, st.ActivityAdd(t.Context(), f))
	}
	return b
}

// sortedField collects the string key of every row, sorted.
func sortedField(t *testing.T, rs []map[string]any, key string) []string {
	t.Helper()
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		s, ok := r[key].(string)
		require.True(t, ok, "%s is not a string in %v", key, r)
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sumField sums the numeric key of every row.
func sumField(rs []map[string]any, key string) float64 {
	var n float64
	for _, r := range rs {
		n += r[key].(float64)
	}
	return n
}

// TestTenancyAnalyticsReports: the reports of the analytics service count only the
// tenant's queues, under relative names, and show a tenant none of the per-broker
// parts; the global view has both tenants under stored names and the broker's parts.
func TestTenancyAnalyticsReports(t *testing.T) {
	t.Parallel()
	b := tenantActivity(t)

	t.Run("Status", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			tenant                string
			queues                []string
			total, push, pop, ack float64
			ingested, leases, dlq float64
			topErrors             []any
		}{
			{tenant: "acme", queues: []string{"orders"}, total: 3, push: 1, pop: 1, ack: 0, ingested: 3, leases: 0,
				dlq: 0, topErrors: []any{}},
			{tenant: "bob", queues: []string{"billing", "orders"}, total: 6, push: 2, pop: 2, ack: 1, ingested: 6,
				leases: 1, dlq: 1, topErrors: []any{map[string]any{"error": "failed b-dlq", "count": float64(1)}}},
		} {
			m := b.asTenant(t, tc.tenant, http.MethodGet, "/api/v1/status").object(t)
			require.Equal(t, tc.queues, sortedField(t, rows(t, m, "queues"), "name"), tc.tenant)
			msgs := obj(t, m["messages"])
			require.Equal(t, tc.total, msgs["total"], tc.tenant)
			require.Equal(t, map[string]any{"push": tc.push, "pop": tc.pop, "ack": tc.ack}, msgs["requests"], tc.tenant)
			require.Equal(t, tc.leases, obj(t, m["leases"])["active"], tc.tenant)
			dl := obj(t, m["deadLetterQueue"])
			require.Equal(t, tc.dlq, dl["totalMessages"], tc.tenant)
			require.Equal(t, tc.topErrors, dl["topErrors"], tc.tenant)
			require.Equal(t, []any{}, m["workers"], "%s: no broker processes", tc.tenant)
			require.Equal(t, float64(0), obj(t, m["errors"])["dbErrors"], tc.tenant)
			require.Equal(t, tc.dlq, obj(t, m["errors"])["dlqMessages"], tc.tenant)
			points := rows(t, m, "throughput")
			require.Len(t, points, 60, "%s: the same series shape", tc.tenant)
			require.Equal(t, tc.ingested, sumField(points, "ingested"), tc.tenant)
			for _, p := range points {
				for _, k := range []string{"queenCpuUserPct", "queenCpuSysPct", "queenRssMb", "dbPoolActive",
					"dbPoolIdle", "dbPoolSize", "avgEventLoopLagMs", "maxEventLoopLagMs", "dbErrors"} {
					require.Equal(t, float64(0), p[k], "%s: %s of %v", tc.tenant, k, p)
				}
				require.Contains(t, p, "minFreeSlots")
				require.Nil(t, p["minFreeSlots"], tc.tenant)
			}
		}

		m := b.list(t, "/api/v1/status")
		require.Equal(t, []string{"acme:orders", "bob:billing", "bob:orders"}, sortedField(t, rows(t, m, "queues"), "name"))
		require.Equal(t, float64(9), obj(t, m["messages"])["total"])
		require.Equal(t, float64(3), obj(t, obj(t, m["messages"])["requests"])["push"])
		require.NotEmpty(t, rows(t, m, "workers"), "the global view has the broker processes")
		require.Positive(t, sumField(rows(t, m, "throughput"), "dbPoolSize"), "and their pool gauges")
	})

	t.Run("StatusFilteredByRelativeQueue", func(t *testing.T) {
		t.Parallel()
		m := b.asTenant(t, "bob", http.MethodGet, "/api/v1/status?queue=orders").object(t)
		require.Equal(t, []string{"orders"}, sortedField(t, rows(t, m, "queues"), "name"))
		require.Equal(t, float64(5), obj(t, m["messages"])["total"])
		m = b.asTenant(t, "acme", http.MethodGet, "/api/v1/status?queue=billing").object(t)
		require.Empty(t, rows(t, m, "queues"), "bob's billing is no queue of acme's")
		require.Equal(t, float64(0), obj(t, m["messages"])["total"])

		r := b.do(t, http.MethodGet, "/api/v1/status?queue=bob:orders", "", testTenancyHeader, "acme")
		requireStatus(t, http.StatusBadRequest, r)
		require.Equal(t, "queue", r.object(t)["field"])
	})

	t.Run("StatusAnalytics", func(t *testing.T) {
		t.Parallel()
		for tenant, want := range map[string]float64{"acme": 3, "bob": 6} {
			m := b.asTenant(t, tenant, http.MethodGet, "/api/v1/status/analytics?interval=minute").object(t)
			require.Equal(t, want, sumField(rows(t, m, "dataPoints"), "messages"), tenant)
		}
		m := b.asTenant(t, "bob", http.MethodGet, "/api/v1/status/analytics?queue=billing").object(t)
		require.Equal(t, float64(1), sumField(rows(t, m, "dataPoints"), "messages"))
		m = b.list(t, "/api/v1/status/analytics?interval=minute")
		require.Equal(t, float64(9), sumField(rows(t, m, "dataPoints"), "messages"))
	})

	t.Run("Overview", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			tenant                                string
			queues, partitions, namespaces, total float64
		}{
			{"acme", 1, 1, 1, 3},
			{"bob", 2, 2, 2, 6}, // fin, and orders: a pushed queue's namespace comes from its name
			{"", 3, 3, 3, 9},
		} {
			var m map[string]any
			if tc.tenant == "" {
				m = b.list(t, "/api/v1/resources/overview")
			} else {
				m = b.asTenant(t, tc.tenant, http.MethodGet, "/api/v1/resources/overview").object(t)
			}
			requireTypes(t, m, map[string]string{"queues": "number", "partitions": "number", "namespaces": "number",
				"tasks": "number", "messages": "object", "lag": "object", "throughput": "object", "timestamp": "string",
				"statsAge": "number"})
			require.Equal(t, tc.queues, m["queues"], tc.tenant)
			require.Equal(t, tc.partitions, m["partitions"], tc.tenant)
			require.Equal(t, tc.namespaces, m["namespaces"], tc.tenant)
			require.Equal(t, tc.total, obj(t, m["messages"])["total"], tc.tenant)
		}
	})

	t.Run("QueueLag", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			tenant string
			queues []string
			popped float64
		}{
			{"acme", []string{"orders"}, 2},
			{"bob", []string{"billing", "orders"}, 2},
		} {
			r := b.asTenant(t, tc.tenant, http.MethodGet, "/api/v1/analytics/queue-lag")
			require.Equal(t, tc.queues, sortedField(t, r.array(t), "queueName"), tc.tenant)
			require.Equal(t, tc.popped, sumField(r.array(t), "popCount"), tc.tenant)
		}
		r := b.get(t, "/api/v1/analytics/queue-lag")
		requireStatus(t, http.StatusOK, r)
		require.Equal(t, []string{"acme:orders", "bob:billing", "bob:orders"}, sortedField(t, r.array(t), "queueName"))
	})

	t.Run("QueueOps", func(t *testing.T) {
		t.Parallel()
		m := b.asTenant(t, "acme", http.MethodGet, "/api/v1/analytics/queue-ops").object(t)
		require.Equal(t, []any{"orders"}, m["queues"])
		series := rows(t, m, "series")
		require.Equal(t, []string{"orders"}, sortedField(t, series, "queueName"))
		require.Equal(t, float64(3), sumField(series, "pushMessages"))
		require.Equal(t, float64(5), sumField(series, "parkedCount"), "parked on acme's orders over both replicas")

		m = b.asTenant(t, "bob", http.MethodGet, "/api/v1/analytics/queue-ops?queue=orders").object(t)
		require.Equal(t, []any{"orders"}, m["queues"])
		require.Equal(t, float64(5), sumField(rows(t, m, "series"), "pushMessages"))
		require.Equal(t, float64(1), sumField(rows(t, m, "series"), "parkedCount"))

		m = b.list(t, "/api/v1/analytics/queue-ops")
		require.Equal(t, []any{"acme:orders", "bob:billing", "bob:orders"}, m["queues"])
	})

	t.Run("ParkedReplicas", func(t *testing.T) {
		t.Parallel()
		m := b.asTenant(t, "acme", http.MethodGet, "/api/v1/analytics/queue-parked-replicas").object(t)
		require.Equal(t, []any{}, m["replicas"], "a tenant is shown no replica")
		series := rows(t, m, "series")
		require.Len(t, series, 1, "summed over replicas: %v", series)
		require.Equal(t, "orders", series[0]["queueName"])
		require.Equal(t, "", series[0]["hostname"])
		require.Equal(t, "", series[0]["workerId"])
		require.Equal(t, float64(5), series[0]["parkedCount"])

		m = b.asTenant(t, "bob", http.MethodGet, "/api/v1/analytics/queue-parked-replicas").object(t)
		series = rows(t, m, "series")
		require.Len(t, series, 1)
		require.Equal(t, "orders", series[0]["queueName"])
		require.Equal(t, float64(1), series[0]["parkedCount"])

		m = b.list(t, "/api/v1/analytics/queue-parked-replicas")
		require.Equal(t, []string{"h1", "h2"}, sortedField(t, rows(t, m, "replicas"), "hostname"))
		series = rows(t, m, "series")
		require.Len(t, series, 3, "one row per queue and replica: %v", series)
		require.Equal(t, []string{"acme:orders", "bob:orders"}, sortedField(t, series, "queueName"))
	})

	t.Run("GlobalOnlyViewsRefuseTenants", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/api/v1/analytics/consumer-lag", "/api/v1/analytics/system-metrics",
			"/api/v1/analytics/worker-metrics", "/api/v1/analytics/retention", "/api/v1/analytics/postgres-stats"} {
			r := b.do(t, http.MethodGet, path, "", testTenancyHeader, "acme")
			requireError(t, r, http.StatusForbidden, "forbidden", "this route is not available to tenants", "")
		}
	})
}

// TestTenancyOffAnalyticsUnchanged: without QUEEN_TENANCY_HEADER a tenant header
// changes none of the reports: names are as pushed and the broker's parts are there.
func TestTenancyOffAnalyticsUnchanged(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	r := b.do(t, http.MethodPost, "/api/v1/push", `{"items":[{"queue":"orders","payload":{}}]}`, testTenancyHeader, "acme")
	requireStatus(t, http.StatusCreated, r)
	_, err := b.broker.Analytics().Flush(t.Context())
	require.NoError(t, err)

	m := b.asTenant(t, "acme", http.MethodGet, "/api/v1/status").object(t)
	require.Equal(t, []string{"orders"}, sortedField(t, rows(t, m, "queues"), "name"))
	require.NotEmpty(t, rows(t, m, "workers"))
	m = b.asTenant(t, "acme", http.MethodGet, "/api/v1/analytics/queue-ops").object(t)
	require.Equal(t, []any{"orders"}, m["queues"])
	m = b.asTenant(t, "acme", http.MethodGet, "/api/v1/resources/overview").object(t)
	require.Equal(t, float64(1), m["queues"])
	r = b.do(t, http.MethodGet, "/api/v1/analytics/consumer-lag", "", testTenancyHeader, "acme")
	requireStatus(t, http.StatusOK, r)
}
