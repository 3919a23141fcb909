package daemon_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// cellBundle is one proxy in front of two cells, each a broker on a PostgreSQL
// cluster of its own: "default" (QUEEN_PROXY_UPSTREAMS) and "two" (added over the
// admin API).
type cellBundle struct {
	pg     [2]*pgtest.Cluster
	broker [2]*daemontest.Server
	proxy  *proxytest.Proxy
}

func setupCells(t *testing.T) *cellBundle {
	t.Helper()
	c := &cellBundle{}
	for i := range c.pg {
		c.pg[i] = pgtest.StartCluster(t)
		c.broker[i] = proxytest.StartBroker(t, daemontest.Options{DBURL: c.pg[i].URL()})
	}
	c.proxy = proxytest.Start(t, proxytest.Options{Backends: []string{c.broker[0].URL}})
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
// database, and stopping cell default (its broker and its PostgreSQL) leaves bob,
// in cell two, fully served while acme is answered 503.
func TestTwoCellsKeepTenantsApart(t *testing.T) {
	c := setupCells(t)
	createTenantIn(t, c.proxy, "acme", "default")
	createTenantIn(t, c.proxy, "bob", "two")
	acme, bob := createKey(t, c.proxy, "acme", "write"), createKey(t, c.proxy, "bob", "write")

	for _, k := range []createdKey{acme, bob} {
		r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", k.Key, pushBody("orders", 5, nil))
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	require.Equal(t, map[string]int{"acme:orders": 5}, storedQueues(t, c.pg[0]), "cell default holds acme only")
	require.Equal(t, map[string]int{"bob:orders": 5}, storedQueues(t, c.pg[1]), "cell two holds bob only")

	_ = c.broker[0].Stop()
	c.pg[0].Stop()
	eventually(t, 15*time.Second, func() bool {
		r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", acme.Key, pushBody("orders", 1, nil))
		return r.status == http.StatusServiceUnavailable
	}, "acme is never answered 503 with its cell stopped")
	r := call(t, http.MethodPost, c.proxy.URL+"/api/v1/push", bob.Key, pushBody("orders", 1, nil))
	require.Equal(t, http.StatusCreated, r.status, "bob is served: %s", r.body)
	r = call(t, http.MethodGet, c.proxy.URL+"/api/v1/pop/queue/orders?batch=10&wait=false", bob.Key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, map[string]int{"bob:orders": 6}, storedQueues(t, c.pg[1]))
}
