package daemon_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
	"github.com/queenmq/queen/internal/testlog"
)

// cellBundle is one proxy in front of two cells, each a broker on a PostgreSQL
// cluster of its own: "default" (QUEEN_PROXY_UPSTREAMS) and "two" (added over the
// admin API).
type cellBundle struct {
	pg     [2]*pgtest.Cluster
	broker [2]*daemontest.Server
	proxy  *proxytest.Proxy
	logs   *testlog.Buffer // the proxy's log
}

func setupCells(t *testing.T, env ...string) *cellBundle {
	t.Helper()
	return setupCellsLogin(t, false, env...)
}

// setupCellsLogin is setupCells with login on or off.
func setupCellsLogin(t *testing.T, loginOn bool, env ...string) *cellBundle {
	t.Helper()
	c := &cellBundle{logs: &testlog.Buffer{}}
	for i := range c.pg {
		c.pg[i] = pgtest.StartCluster(t)
		c.broker[i] = proxytest.StartBroker(t, daemontest.Options{DBURL: c.pg[i].URL()})
	}
	c.proxy = proxytest.Start(t, proxytest.Options{Backends: []string{c.broker[0].URL}, Env: env, Login: loginOn, Logs: c.logs})
	c.proxy.WaitBackends(t, "up", 10*time.Second)
	var cell map[string]any
	require.Equal(t, http.StatusCreated, c.proxy.Admin(t, http.MethodPost, "/admin/v1/cells",
		map[string]any{"name": "two", "upstreams": []string{c.broker[1].URL}}, &cell), "%v", cell)
	// Every replica reads the cells within a few seconds; this one is told at once.
	eventually(t, 15*time.Second, func() bool {
		var ups struct {
			Upstreams []struct{ State, URL, Cell string }
		}
		c.proxy.Admin(t, http.MethodGet, "/admin/v1/upstreams", nil, &ups)
		for _, u := range ups.Upstreams {
			if u.Cell == "two" && u.State == "up" {
				return true
			}
		}
		return false
	}, "cell two's broker is never up")
	return c
}

// createTenantIn creates a tenant placed in cell.
func createTenantIn(t *testing.T, p *proxytest.Proxy, id, cell string) {
	t.Helper()
	var out map[string]any
	require.Equal(t, http.StatusCreated, p.Admin(t, http.MethodPost, "/admin/v1/tenants",
		map[string]any{"id": id, "cell": cell}, &out), "%v", out)
	require.Equal(t, cell, out["cell"])
}

// storedQueues is what a cell's database stores: each queue name with its messages.
func storedQueues(t *testing.T, pg *pgtest.Cluster) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT q.name, count(m.id) FROM queen.queues q
		LEFT JOIN queen.partitions p ON p.queue_id = q.id LEFT JOIN queen.messages m ON m.partition_id = p.id
		GROUP BY q.name`)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		require.NoError(t, rows.Scan(&name, &n))
		out[name] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// TestTwoCellsKeepTenantsApart: each tenant's messages are stored only in its cell's
// database; quotas count what each tenant's own cell stores; and stopping cell
// default (its broker and its PostgreSQL) leaves bob, in cell two, fully served while
// acme is answered 503.
func TestTwoCellsKeepTenantsApart(t *testing.T) {
	c := setupCells(t, "QUEEN_PROXY_USAGE_REFRESH=100ms")
	createTenantIn(t, c.proxy, "acme", "default")
	var out map[string]any
	require.Equal(t, http.StatusCreated, c.proxy.Admin(t, http.MethodPost, "/admin/v1/tenants",
		map[string]any{"id": "bob", "cell": "two", "quotas": map[string]any{"maxMessages": 6}}, &out), "%v", out)
	acme, bob := createKey(t, c.proxy, "acme", "write"), createKey(t, c.proxy, "bob", "write")

	for _, k := range []createdKey{acme, bob} {
		r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", k.Key, pushBody("orders", 5, nil))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	require.Equal(t, map[string]int{"acme:orders": 5}, storedQueues(t, c.pg[0]), "cell default holds acme only")
	require.Equal(t, map[string]int{"bob:orders": 5}, storedQueues(t, c.pg[1]), "cell two holds bob only")
	eventually(t, 20*time.Second, func() bool {
		m := scrapeProxyMetrics(t, c.proxy)
		return strings.Contains(m, `queen_proxy_tenant_stored_messages{tenant="acme"} 5`) &&
			strings.Contains(m, `queen_proxy_tenant_stored_messages{tenant="bob"} 5`)
	}, "the usage snapshots of both cells never reached the quotas")
	r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", bob.Key, pushBody("orders", 2, nil))
	require.Equal(t, http.StatusTooManyRequests, r.status, "bob's quota counts cell two: %s", r.body)
	require.Equal(t, "quota_exceeded", r.code(t))
	// A timer schedules a message too: two of them would store 7 of 6, and POST
	// /api/v1/timers is refused as a push is (a cancel stores nothing and passes).
	r = call(t, http.MethodPost, c.proxy.URL+"/api/v1/timers", bob.Key,
		[]byte(`[{"op":"schedule","queue":"orders","timerKey":"t1","delayMs":60000,"txn":"t1","payload":"e30="},`+
			`{"op":"schedule","queue":"orders","timerKey":"t2","delayMs":60000,"txn":"t2","payload":"e30="}]`))
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "quota_exceeded", r.code(t))

	_ = c.broker[0].Stop()
	c.pg[0].Stop()
	eventually(t, 15*time.Second, func() bool {
		r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", acme.Key, pushBody("orders", 1, nil))
		return r.status == http.StatusServiceUnavailable
	}, "acme is never answered 503 with its cell stopped")
	eventually(t, 15*time.Second, func() bool {
		m := scrapeProxyMetrics(t, c.proxy)
		return strings.Contains(m, `queen_proxy_cell_brokers_up{cell="default"} 0`) &&
			strings.Contains(m, `queen_proxy_cell_brokers_up{cell="two"} 1`)
	}, "the cells' broker gauges never showed default down and two up")
	// A push admitted within a second of the cell's snapshot may count twice until the
	// next one (docs/multi-tenant.md, "Limits and quotas").
	eventually(t, 10*time.Second, func() bool {
		r = call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", bob.Key, pushBody("orders", 1, nil))
		return r.status == http.StatusCreated
	}, "bob is never served")
	r = call(t, http.MethodGet, c.proxy.URL+"/api/v1/pop/queue/orders?batch=10&wait=false", bob.Key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]int{"bob:orders": 6}, storedQueues(t, c.pg[1]))
}

// TestOperatorNamesACell: an operator's request (global scope) goes to the cell its
// X-Queen-Cell header names, else default, and the answer names the cell.
func TestOperatorNamesACell(t *testing.T) {
	c := setupCellsLogin(t, true)
	createTenantIn(t, c.proxy, "acme", "default")
	createTenantIn(t, c.proxy, "bob", "two")
	for _, id := range []string{"acme", "bob"} {
		r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", createKey(t, c.proxy, id, "write").Key, pushBody("orders", 1, nil))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	createUser(t, c.proxy, "op", "op-password-1", "admin", "")
	tok := login(t, c.proxy, "op", "op-password-1")
	queues := func(hdr ...string) (string, []string) {
		r := call(t, http.MethodGet, c.proxy.URL+"/api/v1/resources/queues", tok, nil, hdr...)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var list api.QueueList
		r.json(t, &list)
		var names []string
		for _, q := range list.Queues {
			names = append(names, q.Name)
		}
		return r.header.Get("X-Queen-Cell"), names
	}
	cell, names := queues()
	require.Equal(t, "default", cell)
	require.Equal(t, []string{"acme:orders"}, names)
	cell, names = queues("X-Queen-Cell", "two")
	require.Equal(t, "two", cell)
	require.Equal(t, []string{"bob:orders"}, names)
	r := call(t, http.MethodGet, c.proxy.URL+"/api/v1/resources/queues", tok, nil, "X-Queen-Cell", "nowhere")
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
}
