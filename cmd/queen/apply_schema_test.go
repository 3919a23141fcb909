package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
)

// TestApplySchemaOffWithoutSchemaExits78: QUEEN_APPLY_SCHEMA=0 on a database that
// holds no queen schema is a configuration error, status 78, which the unit's
// RestartPreventExitStatus keeps systemd from restarting in a loop.
func TestApplySchemaOffWithoutSchemaExits78(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), "DROP SCHEMA queen CASCADE; DROP SCHEMA queen_streams CASCADE")
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.Background()))

	environ := append(daemontest.PGEnv(t, dbURL), "QUEEN_APPLY_SCHEMA=0", "HOST=127.0.0.1", "PORT="+freePort(t),
		"FILE_BUFFER_DIR="+t.TempDir(), "LOG_LEVEL=warn")
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitConfig, realMain(nil, environ, &stdout, &stderr), "stdout:\n%s", stdout.String())
	require.Contains(t, stderr.String(), "QUEEN_APPLY_SCHEMA=0 and schema: the database holds no schema")
	require.Contains(t, stderr.String(), "queen schema | psql")
}
