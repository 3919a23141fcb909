package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// TestAWakeSkippedByAClaimBesideItIsNotLost plays the race of a woken pop with a claim
// running beside it: claims skip a partition another claim holds rather than wait,
// so a pop woken for the pushed partition finds nothing while pop A holds it, and A
// then leaves without those messages (it looked before the push committed; here its
// claim of the partition fails instead). The woken pop must not wait for its re-check
// interval (an hour) for them.
func TestAWakeSkippedByAClaimBesideItIsNotLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db := combineStore(t)
	tb := combineBroker(st, db, slowPolls(time.Hour))
	t.Cleanup(tb.b.Close)
	tb.configure(t, "race", nil)

	// Register the queue mode as a wildcard consumer (on another partition), so that
	// pushes to p keep its ready row.
	tb.push(t, item("race", "other", "o1", `0`))
	first := tb.pop(t, queue.PopRequest{Queue: "race", Batch: 1})
	require.Equal(t, []string{"o1"}, txids(first.Messages))
	require.True(t, tb.ack(t, "", ackOf(first.Messages[0], first.LeaseID, queue.AckCompleted))[0].Success)
	tb.push(t, item("race", "p", "m1", `1`))

	// A cursor row of the queue mode on p, past m1, inserted and not committed yet: the
	// claim of pop A, which locks p's ready row first, waits for it.
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO queen.partition_consumers
		(partition_id, consumer_group, last_consumed_id, last_consumed_created_at)
		SELECT m.partition_id, '__QUEUE_MODE__', m.id, m.created_at FROM queen.messages m
		 WHERE m.transaction_id = 'm1'`)
	require.NoError(t, err)
	popA := make(chan queue.PopResult, 1)
	go func() {
		req := queue.PopRequest{Queue: "race", Batch: 1}
		if err := tb.b.NormalizePop(&req); err != nil {
			panic(err)
		}
		res, err := tb.b.Pop(ctx, req)
		if err != nil {
			panic(err)
		}
		popA <- res
	}()
	require.Eventually(t, func() bool {
		var waiting int
		// pg_locks is the whole cluster's: count the waits of this database only.
		err := db.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND l.locktype = 'transactionid' AND a.datname = current_database()`).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 5*time.Millisecond, "pop A never waited for the cursor row")

	// Pop B parks (p's ready row is A's), then a push to p wakes it, and its claim
	// skips p again: A still holds the row.
	got := parkPops(t, &tb.testBundle, "race", 1)
	tb.push(t, item("race", "p", "m2", `2`))
	require.Eventually(t, func() bool { return tb.b.LongPollRechecks().WokenEmpty == 1 },
		10*time.Second, 5*time.Millisecond, "the woken pop never claimed")

	// A's claim now fails (the cursor row exists), and A leaves with nothing.
	require.NoError(t, tx.Commit(ctx))
	select {
	case res := <-popA:
		require.Empty(t, res.Messages)
	case <-time.After(10 * time.Second):
		t.Fatal("pop A did not end")
	}
	select {
	case res := <-got:
		require.Equal(t, []string{"m2"}, txids(res.Messages))
	case <-time.After(10 * time.Second):
		t.Fatalf("m2 was left to the re-check interval; rechecks %+v", tb.b.LongPollRechecks())
	}
	require.Equal(t, broker.LongPollRechecks{WokenEmpty: 1, WokenFound: 1}, tb.b.LongPollRechecks())
}
