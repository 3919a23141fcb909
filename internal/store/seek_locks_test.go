package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/testwait"
)

// A seek takes the queue's registration lock before it locks or creates the group's
// cursor rows, in the order of a group's first pop (queen.queue_consumer_register_q1
// holds that lock while it creates cursor rows). Here a transaction stands for that pop,
// stopped between its two steps: with the seek waiting for the lock, the pop's cursor
// insert must not wait for the seek. In the other order the two deadlocked and
// PostgreSQL cancelled one of them (the seek answered 500).
func TestSeekTakesTheRegistrationLockFirst(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{
		{Queue: "seek-lock", Partition: "p", TransactionID: "m1", MessageID: ids.New(), Payload: benchPayload},
		{Queue: "seek-lock", Partition: "p", TransactionID: "m2", MessageID: ids.New(), Payload: benchPayload}})
	require.NoError(t, err)
	var qid, pid string
	require.NoError(t, db.QueryRow(ctx, `SELECT q.id::text, p.id::text FROM queen.queues q
JOIN queen.partitions p ON p.queue_id = q.id WHERE q.name = 'seek-lock'`).Scan(&qid, &pid))

	pop, err := db.Begin(ctx)
	require.NoError(t, err)
	defer pop.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	_, err = pop.Exec(ctx, `SET LOCAL lock_timeout = '10s'`)
	require.NoError(t, err)
	_, err = pop.Exec(ctx, `SELECT pg_advisory_xact_lock(queen.queue_consumers_key($1::uuid))`, qid)
	require.NoError(t, err)

	seeked := make(chan error, 1)
	go func() {
		_, err := st.ConsumerGroupSeek(ctx, "g", "seek-lock", queue.ConsumerGroupSeek{ToEnd: true})
		seeked <- err
	}()
	waitForLock(t, db, `query LIKE '%consumer_group_seek_q1%' AND wait_event = 'advisory'`)

	_, err = pop.Exec(ctx, `INSERT INTO queen.partition_consumers (partition_id, consumer_group)
VALUES ($1::uuid, 'g') ON CONFLICT (partition_id, consumer_group) DO NOTHING`, pid)
	require.NoError(t, err, "the pop's cursor insert waited for the seek")
	require.NoError(t, pop.Commit(ctx))
	require.NoError(t, <-seeked)

	var last string
	require.NoError(t, db.QueryRow(ctx, `SELECT m.transaction_id FROM queen.partition_consumers c
JOIN queen.messages m ON m.id = c.last_consumed_id WHERE c.partition_id = $1::uuid AND c.consumer_group = 'g'`,
		pid).Scan(&last))
	require.Equal(t, "m2", last, "the seek moved the cursor the pop created to the end")
}

// A pop or a seek that read a queue just before its deletion committed wrote a row (a
// registration, a cursor) whose foreign key the deletion had removed: PostgreSQL
// aborted it (23503) and the route answered 500. Each runs again and finds the queue
// gone: an empty pop, a seek of an unknown queue.
func TestPopAndSeekRacingAQueueDelete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	for _, tc := range []struct {
		name string
		run  func(q string) error
	}{
		{"Pop", func(q string) error {
			msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: q, ConsumerGroup: "g", Batch: 1, Partitions: 1}, ids.New())
			if err == nil && len(msgs) > 0 {
				return errors.New("the pop delivered a message of the deleted queue")
			}
			return err
		}},
		// The group's first pop of the queue: it stores the group's policy first.
		{"FirstPop", func(q string) error {
			msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: q, ConsumerGroup: "first", Batch: 1, Partitions: 1}, ids.New())
			if err == nil && len(msgs) > 0 {
				return errors.New("the pop delivered a message of the deleted queue")
			}
			return err
		}},
		{"Seek", func(q string) error {
			_, err := st.ConsumerGroupSeek(ctx, "g", q, queue.ConsumerGroupSeek{Timestamp: time.Now().Add(-time.Hour)})
			if !errors.Is(err, queue.ErrNotFound) {
				return errors.Join(errors.New("want the queue not found"), err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := "del-race-" + tc.name
			_, err := st.MessageInsertBatch(ctx, []queue.PushItem{
				{Queue: q, Partition: "p", TransactionID: "m1", MessageID: ids.New(), Payload: benchPayload}})
			require.NoError(t, err)
			_, err = db.Exec(ctx, `SELECT queen.group_policy_store_q1($1, 'g', NULL)`, q) // g popped the queue before
			require.NoError(t, err)
			del, err := db.Begin(ctx)
			require.NoError(t, err)
			defer del.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
			var existed bool
			require.NoError(t, del.QueryRow(ctx, `SELECT queen.delete_queue_q1($1)`, q).Scan(&existed))
			require.True(t, existed)

			done := make(chan error, 1)
			go func() { done <- tc.run(q) }()
			waitForLock(t, db, `(query LIKE '%pop_q4%' OR query LIKE '%seek_q1%' OR query LIKE '%group_policy_store%')`)
			require.NoError(t, del.Commit(ctx))
			require.NoError(t, <-done)
		})
	}
}

// waitForLock waits until a backend whose pg_stat_activity row matches cond (SQL) waits
// for a lock.
func waitForLock(t *testing.T, db *pgxpool.Pool, cond string) {
	t.Helper()
	testwait.For(t, 10*time.Second, 10*time.Millisecond, func() error {
		var waiting bool
		if err := db.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE `+cond+` AND query NOT LIKE '%pg_stat_activity%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			return err
		}
		if !waiting {
			return errors.New("nothing waits for a lock yet: " + cond)
		}
		return nil
	})
}
