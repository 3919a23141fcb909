package daemon_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/testlog"
)

// TestDaemonAdoptsAnUpstreamDatabase boots the daemon on a database an upstream broker
// wrote: it becomes ready with the index queen's lookups need still missing, serves,
// builds that index concurrently once ready, and stops cleanly.
func TestDaemonAdoptsAnUpstreamDatabase(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	fixture, err := os.ReadFile("../schema/testdata/upstream_0_15.sql")
	require.NoError(t, err)
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `DROP SCHEMA queen CASCADE; DROP SCHEMA queen_streams CASCADE`)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), string(fixture))
	require.NoError(t, err)

	var logs testlog.Buffer
	srv := daemontest.Start(t, daemontest.Options{DBURL: dbURL, Logs: &logs, Env: []string{"LOG_LEVEL=info"}})

	resp, err := http.Get(srv.URL + "/api/v1/pop/queue/legacy.orders/partition/p1?wait=false")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the upstream cursor's next messages are served")

	require.Eventually(t, func() bool {
		var valid bool
		err := conn.QueryRow(context.Background(), `SELECT coalesce((SELECT indisvalid FROM pg_index
			WHERE indexrelid = to_regclass('queen.idx_messages_partition_transaction_c')), false)`).Scan(&valid)
		return err == nil && valid
	}, 20*time.Second, 20*time.Millisecond, "the daemon builds the missing index after readiness")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"msg":"indexes ready"`) },
		10*time.Second, 20*time.Millisecond)
	out := logs.String()
	readyAt, buildAt := strings.Index(out, `"msg":"ready"`), strings.Index(out, `"msg":"building index concurrently"`)
	require.True(t, readyAt >= 0 && buildAt > readyAt, "the build starts after readiness:\n%s", out)

	require.NoError(t, srv.Stop())
}
