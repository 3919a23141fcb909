package daemon_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/client"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/daemon"
)

// startBrokerOn is startBroker on an existing database (a second broker on the same
// database, or a database prepared before the broker starts).
func startBrokerOn(t *testing.T, dbURL string, extraEnv ...string) *testBundle {
	t.Helper()
	env := append(pgEnv(t, dbURL), "HOST=127.0.0.1", "LOG_LEVEL=warn", "DB_POOL_SIZE=8")
	cfg, err := config.Load(append(env, extraEnv...))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	logs := &testLogWriter{t: t}
	ready := make(chan string, 1)
	tb := &testBundle{dbURL: dbURL, cancel: cancel, done: make(chan error, 1), http: &http.Client{}}
	go func() {
		tb.done <- daemon.Run(ctx, cfg, daemon.Options{Stdout: logs, Listener: ln,
			ReadyFunc: func(addr string) { ready <- addr }})
	}()
	t.Cleanup(func() {
		tb.stop(t)
		logs.close()
		tb.http.CloseIdleConnections()
	})
	select {
	case tb.addr = <-ready:
	case err := <-tb.done:
		tb.done <- err
		require.FailNow(t, "daemon.Run returned before the broker was ready", "err: %v", err)
	case <-time.After(startTimeout):
		require.FailNow(t, "broker not ready", "no ReadyFunc call within %s", startTimeout)
	}
	tb.baseURL = "http://" + tb.addr
	tb.client = client.New(tb.baseURL, client.WithHTTPClient(tb.http))
	return tb
}

// startPair starts two brokers on one fresh database.
func startPair(t *testing.T, extraEnv ...string) [2]*testBundle {
	t.Helper()
	a := startBroker(t, extraEnv...)
	return [2]*testBundle{a, startBrokerOn(t, a.dbURL, extraEnv...)}
}

// sqlExec runs statements on tb's database, for the state the API cannot set up.
func sqlExec(t *testing.T, tb *testBundle, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), tb.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctxT(t)))
	_, err = conn.Exec(ctxT(t), sql, args...)
	require.NoError(t, err, sql)
}

// sqlInt runs a one-integer query on tb's database.
func sqlInt(t *testing.T, tb *testBundle, sql string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), tb.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctxT(t)))
	var n int
	require.NoError(t, conn.QueryRow(ctxT(t), sql, args...).Scan(&n), sql)
	return n
}
