package store_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// pgEnvOf returns the PG_* variables of a database URL, the host and port left out.
func pgEnvOf(t *testing.T, dbURL string) (env []string, host string, port int) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	return []string{"PG_DB=" + cfg.Database, "PG_USER=" + cfg.User, "PG_PASSWORD=" + cfg.Password},
		cfg.Host, int(cfg.Port)
}

// closedPort returns a port of 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return strconv.Itoa(port)
}

func TestHostList(t *testing.T) {
	t.Parallel()

	t.Run("FallsThroughAnUnreachableHost", func(t *testing.T) {
		t.Parallel()
		env, host, port := pgEnvOf(t, pgtest.NewDBURL(t))
		dead := closedPort(t)
		err := pingWith(t, append(env, "PG_HOST="+host, "PG_PORT="+dead)...)
		require.ErrorIs(t, err, queue.ErrUnavailable, "the first host alone is unreachable")
		require.NoError(t, pingWith(t, append(env, "PG_HOST="+host+","+host, "PG_PORT="+dead+","+strconv.Itoa(port))...))
	})

	t.Run("ReadWriteRefusesAReadOnlyServer", func(t *testing.T) {
		t.Parallel()
		dbURL := pgtest.NewDBURL(t)
		pgtest.ReadOnly(t, dbURL) // what a standby looks like to pgx's read-write check
		env, host, port := pgEnvOf(t, dbURL)
		env = append(env, "PG_HOST="+host, "PG_PORT="+strconv.Itoa(port))

		err := pingWith(t, env...) // PG_TARGET_SESSION_ATTRS defaults to read-write
		require.ErrorIs(t, err, queue.ErrUnavailable, "a read-only server is no server for the broker")
		require.ErrorIs(t, err, pgconn.ErrReadOnlyConnection)
		// The same server passes when the check is not transaction_read_only: primary
		// asks pg_is_in_recovery(), any asks nothing.
		require.NoError(t, pingWith(t, append(env, "PG_TARGET_SESSION_ATTRS=primary")...))
		require.NoError(t, pingWith(t, append(env, "PG_TARGET_SESSION_ATTRS=any")...))
	})
}
