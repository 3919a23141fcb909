package cellsim

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

// DefaultCell is the name of the cell that QUEEN_PROXY_UPSTREAMS makes: the first.
const DefaultCell = "default"

// Cell is one cell: a private PostgreSQL cluster, its database and the one broker
// serving it.
type Cell struct {
	// Name is the cell's name in the proxy.
	Name string
	// Broker is the cell's broker.
	Broker *daemontest.Server
	// DB is a small pool on the cell's database, for the checks.
	DB *pgxpool.Pool
}

// cellName is the name of the i-th cell.
func cellName(i int) string {
	if i == 0 {
		return DefaultCell
	}
	return "cell-" + strconv.Itoa(i)
}

// startCell starts cell i: a cluster with small settings, a database "queen" on it,
// and a broker with tenancy on.
func startCell(t testing.TB, cfg Config, i int) *Cell {
	t.Helper()
	c := pgtest.StartCluster(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatalf("cellsim: connect to cell %d's cluster: %v", i, err)
	}
	for _, sql := range []string{
		"ALTER SYSTEM SET shared_buffers = '" + cfg.SharedBuffers + "'",
		"ALTER SYSTEM SET max_wal_size = '256MB'",
		"ALTER SYSTEM SET autovacuum_naptime = '10s'",
		"CREATE DATABASE queen",
		"CHECKPOINT",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			_ = admin.Close(ctx)
			t.Fatalf("cellsim: cell %d: %s: %v", i, sql, err)
		}
	}
	_ = admin.Close(ctx)
	// shared_buffers takes a restart. After the checkpoint the immediate stop leaves
	// nothing to recover.
	c.Stop()
	c.Start()

	dbURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/queen?sslmode=disable", c.Port())
	b := proxytest.StartBroker(t, daemontest.Options{
		DBURL: dbURL,
		Env: []string{
			"DB_POOL_SIZE=" + strconv.Itoa(cfg.BrokerPool),
			"QUEEN_TENANCY_USAGE_INTERVAL=5s",
		},
	})
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("cellsim: %v", err)
	}
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), pcfg)
	if err != nil {
		t.Fatalf("cellsim: open cell %d's database: %v", i, err)
	}
	t.Cleanup(pool.Close) // before the broker's and the cluster's stops, which were registered first
	return &Cell{Name: cellName(i), Broker: b, DB: pool}
}
