package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testlog"
)

// TestReadOnlyDatabaseIsAwayNotAFault is the failover case where the broker's
// connections reach a server that cannot take writes (a standby still in recovery, a
// primary being demoted): every write fails with SQLSTATE 25006. Pushes must be
// answered buffered (never 500), the drainer must wait (never quarantine an
// acknowledged record), and once the database is writable again every record is
// stored, in order per partition, once.
func TestReadOnlyDatabaseIsAwayNotAFault(t *testing.T) {
	t.Parallel()
	sb := setupSpool(t, nil)
	first := sb.push(t, item("ro", "p1", "tx-0", `0`))
	require.Equal(t, queue.StatusQueued, first[0].Status)

	restore := pgtest.ReadOnly(t, sb.dbURL)
	var want []string
	for i := 1; i <= 12; i++ {
		tx := fmt.Sprintf("tx-%d", i)
		res := sb.push(t, item("ro", "p1", tx, fmt.Sprintf("%d", i)))
		require.Equal(t, queue.StatusBuffered, res[0].Status, "push %d while the database is read-only", i)
		want = append(want, tx)
	}
	// The drainer meets the read-only server and waits: wait for the pass that failed,
	// then check it said so (the log line, then a pending spool that has quarantined
	// nothing).
	failed := waitDrainPass(t, sb.b, "that meets the read-only database", func(p broker.DrainPass) bool { return p.Err != nil })
	require.ErrorIs(t, failed.Err, queue.ErrUnavailable, "a read-only server is the database being away")
	require.Contains(t, sb.log.String(), "spool drain paused", "the drainer's pass is logged before it is published")
	// A push that meets the read-only server itself (once the spool-first window of
	// the first failure is over, to a partition with nothing spooled) is buffered too.
	require.Eventually(t, func() bool { return !sb.b.SpoolsFirst() }, 20*time.Second, 10*time.Millisecond)
	res := sb.push(t, item("ro", "p2", "tx-13", `13`))
	require.Equal(t, queue.StatusBuffered, res[0].Status, "a push answered SQLSTATE 25006")
	require.True(t, sb.b.SpoolsFirst(), "the push found the database away: pushes go to the spool first again")
	require.False(t, sb.b.DatabaseReachable(), "the push found the database away")
	st := sb.sp.Stats()
	require.Zero(t, st.QuarantinedRecords, "records quarantined because the server was read-only")
	require.EqualValues(t, 13, st.PendingRecords)
	_, err := sb.b.Pop(t.Context(), queue.PopRequest{Queue: "ro", Batch: 1})
	require.ErrorIs(t, err, queue.ErrUnavailable, "a pop on a read-only server is the database being away")

	restore()
	st = sb.waitDrained(t)
	require.Zero(t, st.QuarantinedRecords)
	require.Equal(t, map[string][]string{"p1": append([]string{"tx-0"}, want...), "p2": {"tx-13"}}, sb.popAll(t, "ro", "audit"),
		"every buffered push stored once, in order")
}

// TestRestartUnderPushPauseKeepsTheSpool: a broker started while pushes are paused
// must not replay its spool, even in the moment before its first refresh of the
// flags (its drainer ticks every millisecond here, far sooner).
func TestRestartUnderPushPauseKeepsTheSpool(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: dbURL, MaxConns: 4, ConnectTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.MaintenanceSet(t.Context(), store.MaintenanceKeyPush, true))
	sp, err := spool.Open(spool.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sp.Close()) })
	require.NoError(t, sp.Append(t.Context(), []queue.PushItem{item("held", "p", "tx-1", `1`), item("held", "p", "tx-2", `2`)}))

	b := broker.New(withConfig(func(c *broker.Config) { c.Spool, c.SpoolFlushInterval = sp, time.Millisecond }),
		st, testlog.Logger(t))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// Every pass from the first one on is held: after several, nothing was replayed.
	const passes = 5
	last := waitDrainPass(t, b, "number 5", func(p broker.DrainPass) bool { return p.N >= passes })
	require.True(t, last.Held, "the drainer ran a pass while pushes are paused: %+v", last)
	push, _ := b.Paused()
	require.True(t, push)
	require.Zero(t, sp.Stats().Drained, "the spool was replayed while pushes are paused")
	require.EqualValues(t, 2, sp.Stats().PendingRecords)
}
