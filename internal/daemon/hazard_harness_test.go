package daemon_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

// startBrokerOn is startBroker on an existing database (a second broker on the same
// database, or a database prepared before the broker starts).
func startBrokerOn(t *testing.T, dbURL string, extraEnv ...string) *testBundle {
	t.Helper()
	return serve(t, daemontest.Options{DBURL: dbURL, Env: extraEnv})
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
