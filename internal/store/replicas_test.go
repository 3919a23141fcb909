package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/store"
)

func TestReplicaRows(t *testing.T) {
	t.Parallel()

	beat := func(instance, process string) store.Replica {
		at := time.Date(2026, 4, 26, 10, 0, 0, 0, time.UTC)
		return store.Replica{Instance: instance, ProcessID: process, Hostname: "h", PID: 7, Version: "v1",
			StartedAt: at, StaleAfter: 15 * time.Second, Ready: true, ParkedLongPolls: 2, PoolInUse: 1, PoolMax: 8,
			SpoolPending: 3, SpoolOldestPendingAge: 1500 * time.Millisecond, SpoolHealthy: true,
			Jobs: []store.ReplicaJob{{Name: "retention", LastResult: "success", LastCycle: "skipped_not_due",
				LastRunAt: &at, LastSuccessAt: &at}},
			SocketActivated: true, WatchdogInterval: 30 * time.Second}
	}

	t.Run("BeatReturnsThePreviousWriter", func(t *testing.T) {
		t.Parallel()
		st, _ := openStore(t, 2)
		prev, err := st.ReplicaBeat(t.Context(), beat("a", "p1"))
		require.NoError(t, err)
		require.Empty(t, prev, "a new row")
		prev, err = st.ReplicaBeat(t.Context(), beat("a", "p1"))
		require.NoError(t, err)
		require.Equal(t, "p1", prev, "its own row")
		prev, err = st.ReplicaBeat(t.Context(), beat("a", "p2"))
		require.NoError(t, err)
		require.Equal(t, "p1", prev, "a namesake's row")
	})

	t.Run("ListReadsBackEveryFieldAndFlagsStaleRows", func(t *testing.T) {
		t.Parallel()
		st, db := openStore(t, 2)
		ctx := t.Context()
		for _, name := range []string{"b", "a"} {
			_, err := st.ReplicaBeat(ctx, beat(name, "p-"+name))
			require.NoError(t, err)
		}
		_, err := db.Exec(ctx, `UPDATE queen.replicas SET last_seen_at = now() - interval '16 seconds' WHERE instance = 'b'`)
		require.NoError(t, err)

		rows, err := st.ReplicaList(ctx)
		require.NoError(t, err)
		require.Len(t, rows, 2)
		a, b := rows[0], rows[1]
		require.Equal(t, "a", a.Instance, "by instance name")
		require.False(t, a.Stale)
		require.True(t, b.Stale, "16 s old with a 15 s bound")
		require.WithinDuration(t, time.Now(), a.LastSeenAt, time.Minute, "stamped by the database")
		want := beat("a", "p-a")
		want.LastSeenAt, want.Stale = a.LastSeenAt, false
		require.Equal(t, want, a)
	})

	t.Run("CleanupDeletesRowsNotWrittenSince", func(t *testing.T) {
		t.Parallel()
		st, db := openStore(t, 2)
		ctx := t.Context()
		for _, name := range []string{"old", "new"} {
			_, err := st.ReplicaBeat(ctx, beat(name, "p"))
			require.NoError(t, err)
		}
		_, err := db.Exec(ctx, `UPDATE queen.replicas SET last_seen_at = now() - interval '2 hours' WHERE instance = 'old'`)
		require.NoError(t, err)
		n, err := st.ReplicaCleanupBatch(ctx, time.Now().Add(-time.Hour), 10)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		rows, err := st.ReplicaList(ctx)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "new", rows[0].Instance)
	})
}
