package patronitest_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/patronitest"
)

// TestFailover crashes the leader of a two-node synchronous cluster, brings it back
// as a replica, switches back to it and restarts the other node: every committed row
// survives each step.
func TestFailover(t *testing.T) {
	t.Parallel()
	c := patronitest.Start(t, patronitest.Options{})
	ctx := t.Context()

	require.Equal(t, []string{"n1", "n2"}, c.Nodes())
	require.Equal(t, []string{"127.0.0.2", "127.0.0.3"}, c.Hosts())
	require.Contains(t, c.Env(), "PG_HOST=127.0.0.2,127.0.0.3")
	members, err := c.Members(ctx)
	require.NoError(t, err)
	require.Len(t, members, 2)
	roles := map[string]string{}
	for _, m := range members {
		require.Equal(t, patronitest.StateRunning, m.State, "%+v", m)
		roles[m.Name] = m.Role
	}
	first, err := c.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, patronitest.RoleLeader, roles[first])
	second := other(first)
	require.Equal(t, patronitest.RoleSyncStandby, roles[second], "synchronous mode: the other node is the synchronous standby")

	// Rows committed one by one through a multi-host connection on the leader.
	const before = 50
	conn := connect(t, c.DSN())
	_, err = conn.Exec(ctx, "CREATE TABLE harness_rows (id int PRIMARY KEY)")
	require.NoError(t, err)
	for i := 1; i <= before; i++ {
		_, err := conn.Exec(ctx, "INSERT INTO harness_rows VALUES ($1)", i)
		require.NoError(t, err)
	}
	host, port, err := net.SplitHostPort(conn.PgConn().Conn().RemoteAddr().String())
	require.NoError(t, err)
	require.Equal(t, hostOf(c, first), host, "target_session_attrs=read-write picks the leader")
	require.Equal(t, strconv.Itoa(c.Port()), port)

	// A crash of the leader: the synchronous standby takes over with every row.
	require.NoError(t, c.Kill(ctx, first))
	failCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leader, took, err := c.WaitLeader(failCtx, first)
	require.NoError(t, err)
	require.Equal(t, second, leader)
	t.Logf("failover: %s leads %s after the crash of %s", second, took.Round(time.Millisecond), first)
	requireRows(t, c.DSN(), before)

	// Writes go on without the standby, then the crashed node rejoins as a replica.
	const after = 60
	conn = connect(t, c.DSN())
	_, err = conn.Exec(ctx, "INSERT INTO harness_rows SELECT generate_series($1::int, $2::int)", before+1, after)
	require.NoError(t, err)
	mark := time.Now()
	require.NoError(t, c.Start(ctx, first))
	t.Logf("%s rejoined in %s", first, time.Since(mark).Round(time.Millisecond))
	inRecovery := false
	require.NoError(t, connect(t, c.URL(first)).QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery))
	require.True(t, inRecovery, "the former leader rejoins as a standby")
	mark = time.Now()
	require.NoError(t, c.WaitHealthy(ctx))
	t.Logf("%s is the synchronous standby again after %s", first, time.Since(mark).Round(time.Millisecond))
	members, err = c.Members(ctx)
	require.NoError(t, err)
	for _, m := range members {
		if m.Name == first {
			require.Equal(t, patronitest.RoleSyncStandby, m.Role, "%+v", m)
		}
	}

	// A planned switchover back: every row is still there, on the new leader.
	mark = time.Now()
	require.NoError(t, c.Switchover(ctx, first))
	t.Logf("switchover to %s in %s", first, time.Since(mark).Round(time.Millisecond))
	leader, err = c.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, first, leader)
	requireRows(t, c.DSN(), after)
	requireRows(t, c.URL(first), after)

	// A replica restart: the node streams again and has every row.
	require.NoError(t, c.WaitHealthy(ctx))
	mark = time.Now()
	require.NoError(t, c.Restart(ctx, second))
	t.Logf("%s restarted in %s", second, time.Since(mark).Round(time.Millisecond))
	require.NoError(t, c.WaitHealthy(ctx))
	requireRows(t, c.URL(second), after)
}

func other(node string) string {
	if node == "n1" {
		return "n2"
	}
	return "n1"
}

// hostOf is the address of a node (n1 on the first host, …).
func hostOf(c *patronitest.Cluster, node string) string {
	return c.Hosts()[slices.Index(c.Nodes(), node)]
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// requireRows checks that the table holds exactly the rows 1 to n.
func requireRows(t *testing.T, url string, n int) {
	t.Helper()
	var count, lowest, highest int
	require.NoError(t, connect(t, url).QueryRow(t.Context(),
		"SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM harness_rows").Scan(&count, &lowest, &highest))
	require.Equal(t, []int{n, 1, n}, []int{count, lowest, highest}, "rows on %s", url)
}
