package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestPushDeadlineIsNotSpooled: a push whose deadline passes is answered with the
// timeout class and never goes to the spool. The database is not down, and a
// statement cut off by its deadline may still commit, so spooling it could store the
// push twice.
func TestPushDeadlineIsNotSpooled(t *testing.T) {
	t.Parallel()

	requireTimeoutNotSpooled := func(t *testing.T, sb *spoolBundle, err error) {
		t.Helper()
		require.ErrorIs(t, err, queue.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, queue.ErrUnavailable)
		require.Zero(t, sb.sp.Stats().PendingRecords, "nothing spooled")
		require.True(t, sb.b.DatabaseReachable(), "a timeout does not mark the database down")
	}

	t.Run("ExpiredBeforeTheInsert", func(t *testing.T) {
		t.Parallel()
		sb := setupSpool(t, nil)
		sb.push(t, item("slow", "p1", "tx-0", `0`)) // the queue exists and is cached
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		_, err := sb.b.Push(ctx, []queue.PushItem{item("slow", "p1", "tx-1", `1`)})
		requireTimeoutNotSpooled(t, sb, err)
	})

	t.Run("FiresWhileTheInsertWaits", func(t *testing.T) {
		t.Parallel()
		sb := setupSpool(t, nil)
		sb.push(t, item("slow", "p1", "tx-0", `0`))
		db, err := pgxpool.New(t.Context(), sb.dbURL)
		require.NoError(t, err)
		t.Cleanup(db.Close)
		// Another session holds the messages table, so the insert waits on its lock
		// until the push's deadline fires.
		holder, err := db.Begin(t.Context())
		require.NoError(t, err)
		defer func() { _ = holder.Rollback(context.WithoutCancel(t.Context())) }()
		_, err = holder.Exec(t.Context(), `LOCK TABLE queen.messages IN ACCESS EXCLUSIVE MODE`)
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		res, err := sb.b.Push(ctx, []queue.PushItem{item("slow", "p1", "tx-1", `1`)})
		require.Nil(t, res)
		requireTimeoutNotSpooled(t, sb, err)
	})
}
