package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A pop whose client goes away while its claim waits inside the database leaves no
// lease behind: the claim runs to its end and is given back, so the next pop gets the
// messages at once instead of after the lease time.
func TestAPopAbandonedDuringItsClaimGivesTheLeaseBack(t *testing.T) {
	t.Parallel()
	cb := setupCombine(t, time.Millisecond)
	const q = "abandon"
	cb.push(t, item(q, "p", "m1", `1`))
	first := cb.pop(t, queue.PopRequest{Queue: q, Partition: "p"})
	require.Len(t, first.Messages, 1)
	for _, r := range cb.ack(t, "", ackOf(first.Messages[0], first.LeaseID, queue.AckCompleted)) {
		require.True(t, r.Success, r.Error)
	}
	cb.push(t, item(q, "p", "m2", `2`))

	// Hold the cursor row: a pop of the named partition waits for it inside its claim.
	tx, err := cb.db.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM queen.partition_consumers FOR UPDATE`)
	require.NoError(t, err)

	req := queue.PopRequest{Queue: q, Partition: "p"}
	require.NoError(t, cb.b.NormalizePop(&req))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cb.b.Pop(ctx, req)
		done <- err
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := cb.db.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 5*time.Millisecond, "the pop's claim waits for the cursor row")
	cancel() // the client goes away
	require.NoError(t, tx.Commit(t.Context()))
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second):
		t.Fatal("the abandoned pop did not return")
	}
	// Whatever the database still runs of the abandoned claim has finished.
	require.Eventually(t, func() bool {
		var running int
		err := cb.db.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`).Scan(&running)
		return err == nil && running == 0
	}, 10*time.Second, 5*time.Millisecond)

	var holders int
	require.NoError(t, cb.db.QueryRow(t.Context(),
		`SELECT count(*) FROM queen.partition_consumers WHERE worker_id IS NOT NULL`).Scan(&holders))
	require.Zero(t, holders, "no lease is left for an answer no one received")
	next := cb.pop(t, queue.PopRequest{Queue: q, Partition: "p"})
	require.Equal(t, []string{"m2"}, txids(next.Messages))
}
