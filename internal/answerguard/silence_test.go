package answerguard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/answerguard"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testlog"
	"github.com/queenmq/queen/internal/testwait"
)

// guardedPool opens a pool of at most conns connections to cluster, guarded with
// deadline (one second to connect).
func guardedPool(t *testing.T, cluster *pgtest.Cluster, conns int32, deadline time.Duration, logs *testlog.Buffer) (*pgxpool.Pool, *answerguard.Guard) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(cluster.URL() + "&connect_timeout=1")
	require.NoError(t, err)
	cfg.MaxConns = conns
	g := answerguard.Install(cfg, deadline, slog.New(slog.NewTextHandler(logs, nil)))
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, g
}

// TestAnIdlePoolFailsOnceOnASilentServer: with the server frozen, a request that finds
// five idle connections waits for one unanswered ping, not one per connection, and
// the pool works again once the server resumes.
func TestAnIdlePoolFailsOnceOnASilentServer(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	var logs testlog.Buffer
	// Room for more than the idle five: pgx closes a connection that failed under it
	// in the background, and that close holds the connection's place in the pool for
	// up to 15 s against a silent server (it sends a cancel request first).
	pool, g := guardedPool(t, cluster, 10, 2*time.Second, &logs)
	answerguard.SetPingIdle(g, 0) // every connection handed out is checked, however briefly idle
	ctx := t.Context()
	var held []*pgxpool.Conn
	for range 5 {
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error { // released in the background
		if n := pool.Stat().IdleConns(); n != 5 {
			return fmt.Errorf("%d idle connections", n)
		}
		return nil
	})

	cluster.Freeze()
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	began := time.Now()
	_, err := pool.Exec(bounded, "SELECT 1")
	waited := time.Since(began)
	require.Error(t, err)
	require.NoError(t, bounded.Err(), "the pool gave up by itself")
	// One ping of 2 s and a connection attempt of 1 s; a ping per idle connection
	// would be 10 s and more.
	require.Less(t, waited, 7*time.Second, "%v\n%s", err, logs.String())
	require.Contains(t, logs.String(), "PostgreSQL left a ping unanswered")
	require.Zero(t, pool.Stat().IdleConns(), "the idle connections were dropped")

	cluster.Thaw()
	var one int
	require.NoError(t, pool.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

// TestAConnectionTheGuardClosedIsNotReused: a query whose rows were all read before
// the guard fired ends without an error, but its connection's socket is closed; the
// pool must drop it rather than hand it to the next statement. (First, a statement
// in an Unguarded context outlives the deadline.)
func TestAConnectionTheGuardClosedIsNotReused(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	var logs testlog.Buffer
	pool, g := guardedPool(t, cluster, 1, 2*time.Second, &logs)
	ctx := t.Context()
	_, err := pool.Exec(answerguard.Unguarded(ctx), "SELECT pg_sleep(2.3)")
	require.NoError(t, err, "a statement the guard leaves alone runs past the deadline")
	require.Zero(t, g.Closed())

	c, err := pool.Acquire(ctx)
	require.NoError(t, err)
	rows, err := c.Query(ctx, "SELECT 1 FROM pg_sleep(1.5)")
	require.NoError(t, err)
	require.True(t, rows.Next(), "the row arrives before the deadline")
	testwait.For(t, 30*time.Second, 20*time.Millisecond, func() error {
		if g.Closed() == 0 {
			return errors.New("the guard has not fired yet")
		}
		return nil
	})
	for rows.Next() {
	}
	rows.Close()
	c.Release()

	var one int
	require.NoError(t, pool.QueryRow(ctx, "SELECT 1").Scan(&one), "the next statement runs on a new connection")
	require.Equal(t, 1, one)
	require.EqualValues(t, 1, pool.Stat().NewConnsCount()-1, "the closed connection was replaced")
}

// TestABatchOnASilentServerEndsAfterOneDeadline: a batch of three statements may run a
// deadline per statement while the server answers others (here three sleeps past one
// deadline in all), but on a frozen server it ends after one deadline and a look,
// not three.
func TestABatchOnASilentServerEndsAfterOneDeadline(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	var logs testlog.Buffer
	const deadline = 3 * time.Second
	pool, g := guardedPool(t, cluster, 4, deadline, &logs)
	t.Cleanup(g.Close)
	ctx := t.Context()

	b := &pgx.Batch{}
	for range 3 {
		b.Queue("SELECT pg_sleep(1.2)")
	}
	require.NoError(t, pool.SendBatch(ctx, b).Close(), "a running server: the batch runs past one deadline\n%s", logs.String())
	require.Zero(t, g.Closed())

	c, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	cluster.Freeze()
	defer cluster.Thaw()
	b = &pgx.Batch{}
	for range 3 {
		b.Queue("SELECT 1")
	}
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	began := time.Now()
	err = c.SendBatch(bounded, b).Close()
	waited := time.Since(began)
	require.Error(t, err)
	require.NoError(t, bounded.Err(), "the guard ended the batch")
	require.EqualValues(t, 1, g.Closed())
	// One deadline and a look of at most two seconds; three deadlines would be 9 s.
	require.Less(t, waited, deadline+4*time.Second, "%v\n%s", err, logs.String())
	require.Contains(t, logs.String(), "PostgreSQL left a statement unanswered; the server answers no other")
}
