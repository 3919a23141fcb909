package answerguard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

// setStandbyNames sets synchronous_standby_names on the server of admin and waits
// until a new connection sees it.
func setStandbyNames(t *testing.T, admin *pgx.Conn, url, names string) {
	t.Helper()
	ctx := t.Context()
	_, err := admin.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close(ctx) }()
		var got string
		if err := c.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&got); err != nil {
			return err
		}
		if got != names {
			return fmt.Errorf("synchronous_standby_names is %q", got)
		}
		return nil
	})
}

// heldBackends lists the queries of the backends waiting for a synchronous standby.
func heldBackends(t *testing.T, admin *pgx.Conn) []string {
	t.Helper()
	rows, err := admin.Query(t.Context(), "SELECT query FROM pg_stat_activity WHERE wait_event = 'SyncRep' ORDER BY query")
	require.NoError(t, err)
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return held
}

// TestCommitsHeldForAStandbyAreEnded: on a server whose synchronous_standby_names
// names a standby that is not there, every commit that wrote something waits. A
// guard watching commits ends such a statement after its delay, not its deadline,
// and cancels its backend (which then commits on the server alone, answering no
// one); a statement waiting for a lock that a held commit keeps is ended too. It
// reports the stall until a commit is confirmed again, and a guard not watching
// commits leaves them to the deadline. The pool's role is an ordinary one: what the
// guard reads and writes needs no privilege.
func TestCommitsHeldForAStandbyAreEnded(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, cluster.URL())
	require.NoError(t, err)
	defer func() { _ = admin.Close(context.WithoutCancel(ctx)) }()
	_, err = admin.Exec(ctx, "CREATE ROLE app LOGIN; CREATE TABLE held (id int); GRANT ALL ON held TO app")
	require.NoError(t, err)
	appURL := strings.Replace(cluster.URL(), "postgres@", "app@", 1) + "&connect_timeout=1"

	var logs testlog.Buffer
	cfg, err := pgxpool.ParseConfig(appURL)
	require.NoError(t, err)
	const deadline, after = 20 * time.Second, 300 * time.Millisecond
	g := answerguard.Install(cfg, deadline, slog.New(slog.NewTextHandler(&logs, nil)))
	g.WatchCommits(after)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		g.Close()
	})
	require.False(t, g.Stalled())

	setStandbyNames(t, admin, cluster.URL(), "ghost")
	began := time.Now()
	_, err = pool.Exec(ctx, "INSERT INTO held VALUES (1)")
	require.Error(t, err, "a commit no standby confirms")
	require.Less(t, time.Since(began), 5*time.Second, "ended after the commit-stall delay, not the %s deadline: %v", deadline, err)
	require.True(t, g.Stalled())
	require.EqualValues(t, 1, g.StalledStatements())
	require.Zero(t, g.Closed(), "not counted as unanswered")
	require.Contains(t, logs.String(), "PostgreSQL holds commits for a synchronous standby")
	testwait.For(t, 5*time.Second, 10*time.Millisecond, func() error {
		// Cancelled, its backend committed on the server alone and left; only the
		// guard's sentinel commit waits.
		if held := heldBackends(t, admin); len(held) != 1 || held[0] != "SELECT pg_logical_emit_message(true, 'queen', 'commit check')" {
			return fmt.Errorf("held for the standby: %q", held)
		}
		return nil
	})
	var rows int
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM held").Scan(&rows))
	require.Equal(t, 1, rows, "the ended statement's commit stays on the server")

	// A commit of the same role held outside the pool (another broker's) keeps a lock;
	// a statement of the pool waiting for it is ended as well.
	holder := make(chan error, 1)
	go func() {
		other, err := pgx.Connect(ctx, appURL)
		if err == nil {
			_, err = other.Exec(ctx, "WITH l AS (SELECT pg_advisory_xact_lock(7)) INSERT INTO held SELECT 2 FROM l")
			_ = other.Close(context.WithoutCancel(ctx))
		}
		holder <- err
	}()
	testwait.For(t, 5*time.Second, 10*time.Millisecond, func() error {
		if held := heldBackends(t, admin); len(held) != 2 {
			return fmt.Errorf("held for the standby: %q", held)
		}
		return nil
	})
	began = time.Now()
	_, err = pool.Exec(ctx, "SELECT pg_advisory_xact_lock(7)")
	require.Error(t, err, "a statement behind a held commit's lock")
	require.Less(t, time.Since(began), 5*time.Second, "%v", err)
	require.EqualValues(t, 2, g.StalledStatements())

	// A standby that confirms (here: none asked for) ends the stall.
	setStandbyNames(t, admin, cluster.URL(), "")
	require.NoError(t, <-holder, "the held commit outside the pool completes")
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		if g.Stalled() {
			return errors.New("still stalled")
		}
		return nil
	})
	_, err = pool.Exec(ctx, "INSERT INTO held VALUES (3)")
	require.NoError(t, err)
	require.Contains(t, logs.String(), "PostgreSQL confirms commits again")

	// Without the watch, a held commit waits for the deadline.
	cfg2, err := pgxpool.ParseConfig(appURL)
	require.NoError(t, err)
	g2 := answerguard.Install(cfg2, 2*time.Second, nil)
	pool2, err := pgxpool.NewWithConfig(ctx, cfg2)
	require.NoError(t, err)
	t.Cleanup(pool2.Close)
	setStandbyNames(t, admin, cluster.URL(), "ghost")
	began = time.Now()
	_, err = pool2.Exec(ctx, "INSERT INTO held VALUES (4)")
	require.Error(t, err)
	require.GreaterOrEqual(t, time.Since(began), 2*time.Second, "left to the deadline")
	require.False(t, g2.Stalled())
	require.EqualValues(t, 1, g2.Closed())
	setStandbyNames(t, admin, cluster.URL(), "")
}
