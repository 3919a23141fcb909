package checker_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/checker"
	"github.com/queenmq/queen/internal/pgtest"
)

// outageConfig is TestDatabaseOutage's run: a few seconds of traffic on two
// brokers, no restart, the database cut off for outageDown a quarter in; pushes
// may be spooled, and a fifth of the completions are transactions.
func outageConfig() checker.Config {
	c := checker.DefaultConfig()
	c.Queue = "outage"
	c.Messages = 1200
	c.Duration = 10 * time.Second
	c.Restarts = 0
	c.AllowBuffered = true
	c.TransactionProbability = 0.2
	return c
}

// outageDown is how long TestDatabaseOutage keeps the database away.
const outageDown = 3 * time.Second

// TestDatabaseOutage runs the checker through a database outage: the run's database
// refuses connections and its sessions are terminated, then comes back a few seconds
// later, while producers push, consumers pop, ack and run transactions on two
// brokers. Pushes must be spooled (answered buffered) meanwhile and all be delivered
// once the database is back, exactly like queued ones; transactions must leave one
// follow-up each when they committed and none when refused; and the fault report
// must show the disruption and the time until pushes were queued again.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()

	dbURL := pgtest.NewDBURL(t)
	cfg := withFlags(outageConfig())
	cfg.Faults = []checker.Fault{{At: cfg.Duration / 4, Name: "cut-off", Do: cutOff(t, dbURL, outageDown)}}
	rep := runChecker(t, cfg, startCluster(t, dbURL))

	requireOutageSurvived(t, cfg, rep)

	require.Len(t, rep.FaultLog, 1)
	f := rep.FaultLog[0]
	t.Logf("checker: %s", f)
	require.Equal(t, "cut-off", f.Name)
	require.GreaterOrEqual(t, f.End-f.Start, outageDown, "Do returned once the database was back")
	require.True(t, f.Disrupted, "the producers saw the outage: %s", f)
	require.Positive(t, f.PushesBuffered, "%s", f)
	require.True(t, f.Recovered, "pushes were queued again: %s", f)
	// No push can be stored before connections are allowed again.
	require.GreaterOrEqual(t, f.Recovery, outageDown, "%s", f)
	require.Less(t, f.Recovery, outageDown+cfg.Duration/2, "%s", f)
}

// cutOff returns a fault that makes the database of dbURL refuse connections,
// terminates its sessions, waits down and lets connections in again. It runs on the
// checker's goroutine, so it reports errors instead of failing the test; a cleanup
// lets connections in again if the run ended in between.
func cutOff(t *testing.T, dbURL string, down time.Duration) func(context.Context) error {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	ident := pgx.Identifier{name}.Sanitize()
	adminURL := pgtest.URL(t)
	allow := func(ctx context.Context, on bool) error {
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS %t", ident, on)); err != nil {
			return fmt.Errorf("allow connections %t: %w", on, err)
		}
		if on {
			return nil
		}
		_, err = conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name)
		return err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		require.NoError(t, allow(ctx, true))
	})
	return func(ctx context.Context) error {
		if err := allow(ctx, false); err != nil {
			return err
		}
		timer := time.NewTimer(down)
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		// Restore even when the run is being cancelled: the brokers must drain.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return allow(rctx, true)
	}
}

// requireOutageSurvived requires of a run through database faults what the report
// does not judge alone: every message pushed, some pushes spooled (answered buffered)
// and each of those delivered, transactions committed, and a follow-up for every
// committed transaction and none for a refused one.
func requireOutageSurvived(t *testing.T, cfg checker.Config, rep *checker.Report) {
	t.Helper()
	require.Equal(t, cfg.Messages, rep.Pushed, "every message was pushed")
	require.Positive(t, rep.Buffered, "pushes were spooled while the database was away")
	for _, m := range rep.History.Messages {
		if m.Buffered {
			require.NotEmpty(t, m.ID, "%s was answered buffered and never delivered", m.TxID)
		}
	}
	require.Positive(t, rep.Transactions, "transactions committed")
	require.GreaterOrEqual(t, rep.FollowUps, rep.Transactions, "a follow-up per committed transaction")
	require.LessOrEqual(t, rep.FollowUps, rep.Transactions+rep.TxUnknown, "no follow-up of a refused transaction")
}

// TestFaultOutlastingTheRun: a fault still running when Duration is over (a
// failover that takes longer than planned) is measured by pushes all the same. The
// producers keep the last share of their messages for it and push them one at a
// time while it runs, then the rest once it is over.
func TestFaultOutlastingTheRun(t *testing.T) {
	t.Parallel()

	cfg := checker.DefaultConfig()
	cfg.Queue = "late-fault"
	cfg.Messages = 200
	cfg.Duration = 2 * time.Second
	cfg.Restarts = 0
	hold := func(ctx context.Context) error { // a fault that only takes time
		select {
		case <-time.After(2 * cfg.Duration):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cfg.Faults = []checker.Fault{{At: cfg.Duration / 4, Name: "hold", Do: hold}}
	rep := runChecker(t, withFlags(cfg), startClusterN(t, pgtest.NewDBURL(t), 1))

	require.Len(t, rep.FaultLog, 1)
	f := rep.FaultLog[0]
	require.GreaterOrEqual(t, f.End, cfg.Duration+cfg.Duration/2, "%s", f)
	var late, single int
	// A producer decides a push's size just before sending it: one that decided
	// right at Duration sends a moment after it.
	after := cfg.Duration + 50*time.Millisecond
	for _, q := range rep.History.Requests {
		if q.Route == checker.RoutePush && q.Sent > after && q.Received < f.End {
			late++
			if q.Items == 1 {
				single++
			}
		}
	}
	require.Positive(t, late, "pushes sent after Duration while the fault ran")
	require.Equal(t, late, single, "pushes of one message each while the fault ran")
	require.Equal(t, cfg.Messages, rep.Pushed, "every message pushed once the fault was over")
}
