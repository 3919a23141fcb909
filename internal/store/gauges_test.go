package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/schema"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/testwait"
)

type gaugesBundle struct {
	st  *store.Store
	ids *queue.IDGenerator
}

func setupGauges(t *testing.T) *gaugesBundle {
	t.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return &gaugesBundle{st: st, ids: queue.NewIDGenerator()}
}

func (b *gaugesBundle) configure(t *testing.T, name string) {
	t.Helper()
	_, _, err := b.st.QueueConfigure(t.Context(), queue.Queue{Name: name, Options: queue.DefaultOptions()})
	require.NoError(t, err)
}

// push appends n messages to queue/partition and returns their transaction ids.
func (b *gaugesBundle) push(t *testing.T, q, partition string, n int) {
	t.Helper()
	items := make([]queue.PushItem, n)
	for i := range items {
		items[i] = queue.PushItem{Queue: q, Partition: partition, Payload: json.RawMessage(`{}`),
			TransactionID: b.ids.New(), MessageID: b.ids.New()}
	}
	res, err := b.st.MessageInsertBatch(t.Context(), items)
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, queue.StatusQueued, r.Status, "push %s/%s: %+v", q, partition, r)
	}
}

func (b *gaugesBundle) claim(t *testing.T, q, partition string, batch int) ([]queue.Message, string) {
	t.Helper()
	lease := b.ids.New()
	msgs, err := b.st.PartitionClaim(t.Context(), queue.PopRequest{Queue: q, Partition: partition,
		ConsumerGroup: queue.QueueModeGroup, Batch: batch, Partitions: 1}, lease)
	require.NoError(t, err)
	require.Len(t, msgs, batch)
	return msgs, lease
}

func byName(r store.BacklogReading) map[string]store.QueueBacklog {
	out := make(map[string]store.QueueBacklog, len(r.Queues))
	for _, q := range r.Queues {
		out[q.Name] = q
	}
	return out
}

func TestQueueBacklogList(t *testing.T) {
	t.Parallel()

	t.Run("CountsPendingProcessingAndDeadLetters", func(t *testing.T) {
		t.Parallel()
		b := setupGauges(t)
		for _, q := range []string{"gauge-a", "gauge-b", "gauge-empty"} {
			b.configure(t, q)
		}
		b.push(t, "gauge-a", "p1", 4)
		b.push(t, "gauge-a", "p2", 1)
		b.push(t, "gauge-b", "Default", 2)

		// p1: two messages leased, of which one is then dead-lettered.
		msgs, lease := b.claim(t, "gauge-a", "p1", 2)
		res, err := b.st.MessageAckBatch(t.Context(), queue.QueueModeGroup, []queue.Ack{{
			TransactionID: msgs[0].TransactionID, PartitionID: msgs[0].PartitionID, LeaseID: lease,
			Status: "dlq", Error: "boom",
		}})
		require.NoError(t, err)
		require.True(t, res[0].Success, "dlq ack: %+v", res[0])
		// gauge-b: both consumed and completed.
		msgs, lease = b.claim(t, "gauge-b", "Default", 2)
		for _, m := range msgs {
			res, err := b.st.MessageAckBatch(t.Context(), queue.QueueModeGroup, []queue.Ack{{
				TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease, Status: "completed",
			}})
			require.NoError(t, err)
			require.True(t, res[0].Success, "ack: %+v", res[0])
		}

		now := time.Now().Add(time.Minute) // every message is at least a minute old
		r, err := b.st.QueueBacklogList(t.Context(), now, 10, 10)
		require.NoError(t, err)
		require.False(t, r.Truncated)
		require.Equal(t, int64(1), r.DeadLetterTotal)
		got := byName(r)
		require.Len(t, got, 3)

		a := got["gauge-a"]
		require.Equal(t, int64(5), a.Total)
		// The dead letter released the lease: its batch mate is pending again.
		require.Equal(t, int64(0), a.Processing, "a dead letter releases the lease")
		require.Equal(t, int64(4), a.Pending, "three in p1 (one of them leased before the dead letter), one in p2")
		require.Equal(t, int64(1), a.DeadLetter)
		require.GreaterOrEqual(t, a.OldestPendingAge, time.Minute)

		bq := got["gauge-b"]
		require.Equal(t, store.QueueBacklog{Name: "gauge-b", Total: 2}, bq, "fully consumed: nothing pending, no age")

		require.Equal(t, store.QueueBacklog{Name: "gauge-empty"}, got["gauge-empty"])
	})

	t.Run("ExpiredLeaseCountsAsPending", func(t *testing.T) {
		t.Parallel()
		b := setupGauges(t)
		b.configure(t, "gauge-lease")
		b.push(t, "gauge-lease", "Default", 3)
		b.claim(t, "gauge-lease", "Default", 2)

		r, err := b.st.QueueBacklogList(t.Context(), time.Now(), 10, 10)
		require.NoError(t, err)
		require.Equal(t, int64(2), byName(r)["gauge-lease"].Processing)

		// The default lease is 300 s; an hour later it has expired.
		r, err = b.st.QueueBacklogList(t.Context(), time.Now().Add(time.Hour), 10, 10)
		require.NoError(t, err)
		q := byName(r)["gauge-lease"]
		require.Equal(t, int64(0), q.Processing)
		require.Equal(t, int64(3), q.Pending)
		require.GreaterOrEqual(t, q.OldestPendingAge, 59*time.Minute)
	})

	t.Run("LimitTruncatesByName", func(t *testing.T) {
		t.Parallel()
		b := setupGauges(t)
		for i := range 4 {
			b.configure(t, fmt.Sprintf("gauge-lim-%d", i))
		}
		r, err := b.st.QueueBacklogList(t.Context(), time.Now(), 3, 10)
		require.NoError(t, err)
		require.True(t, r.Truncated)
		require.Equal(t, []string{"gauge-lim-0", "gauge-lim-1", "gauge-lim-2"},
			[]string{r.Queues[0].Name, r.Queues[1].Name, r.Queues[2].Name})

		r, err = b.st.QueueBacklogList(t.Context(), time.Now(), 4, 10)
		require.NoError(t, err)
		require.False(t, r.Truncated)
		require.Len(t, r.Queues, 4)
	})
}

func TestPoolWaitsStartAtZero(t *testing.T) {
	t.Parallel()
	b := setupGauges(t)
	n, wait := b.st.PoolWaits()
	require.Zero(t, n)
	require.Zero(t, wait)
}

// TestBacklogReadsWhetherCommitsWaitForAStandby: the backlog reading says whether the
// server's commits wait for a synchronous standby, as synchronous_standby_names and
// synchronous_commit have it (the reading itself writes nothing, so it is answered
// while no standby confirms anything).
func TestBacklogReadsWhetherCommitsWaitForAStandby(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, cluster.URL())
	require.NoError(t, err)
	defer func() { _ = admin.Close(context.WithoutCancel(ctx)) }()
	require.NoError(t, schema.Apply(ctx, admin))
	st, err := store.Open(store.Options{ConnString: cluster.URL(), MaxConns: 2})
	require.NoError(t, err)
	defer st.Close()

	reading := func(st *store.Store) bool {
		r, err := st.QueueBacklogList(ctx, time.Now(), 10, 10)
		require.NoError(t, err)
		return r.SynchronousReplication
	}
	require.False(t, reading(st), "no synchronous standby named")
	_, err = admin.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = 'ghost'")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	testwait.For(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !reading(st) {
			return errors.New("a standby is named, and the reading says commits do not wait for it")
		}
		return nil
	})
	// Commits that do not wait for the standby named (the database's setting, which new
	// sessions take).
	_, err = admin.Exec(ctx, "SET synchronous_commit = 'local'") // this session's commit must not wait either
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "ALTER DATABASE postgres SET synchronous_commit = 'local'")
	require.NoError(t, err)
	local, err := store.Open(store.Options{ConnString: cluster.URL(), MaxConns: 2})
	require.NoError(t, err)
	defer local.Close()
	require.False(t, reading(local), "synchronous_commit local: commits do not wait")
}
