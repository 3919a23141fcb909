package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// A transaction's ack locks the cursor row, then settles the ready row; a pop takes
// them the other way. Here a session stands for that pop: it holds the ready row, and
// once the transaction waits for it, asks for the cursor row. PostgreSQL aborts the
// transaction (the session waits longer before it looks for deadlocks), which took no
// effect and runs again once the session is gone; it used to answer 500.
func TestTransactionRunsAgainAfterADeadlock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{
		{Queue: "tx-deadlock", Partition: "p", TransactionID: "m1", MessageID: ids.New(), Payload: benchPayload},
		{Queue: "tx-deadlock", Partition: "p", TransactionID: "m2", MessageID: ids.New(), Payload: benchPayload}})
	require.NoError(t, err)
	lease := ids.New()
	msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "tx-deadlock", ConsumerGroup: queue.QueueModeGroup, Batch: 1}, lease)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	pid := msgs[0].PartitionID

	pop, err := db.Begin(ctx)
	require.NoError(t, err)
	defer pop.Rollback(ctx) //nolint:errcheck // after Rollback, a no-op
	_, err = pop.Exec(ctx, `SET LOCAL deadlock_timeout = '60s'`)
	require.NoError(t, err)
	var n int
	require.NoError(t, pop.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM queen.partition_ready
		WHERE partition_id = $1 FOR UPDATE) r`, pid).Scan(&n))
	require.Equal(t, 1, n, "the partition's ready row")

	type outcome struct {
		res queue.TxResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, _, err := st.TransactionRun(ctx, []queue.TxOp{{Type: "ack", Ack: queue.Ack{TransactionID: "m1", PartitionID: pid,
			LeaseID: lease, Status: queue.AckCompleted, ConsumerGroup: queue.QueueModeGroup}}}, store.TxRiders{})
		done <- outcome{res, err}
	}()
	waitForLock(t, db, `query LIKE '%tx_ack_q3%'`)
	// The cursor row the transaction holds: a deadlock, which PostgreSQL resolves by
	// aborting the transaction; this statement then gets the row.
	require.NoError(t, pop.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM queen.partition_consumers
		WHERE partition_id = $1 AND consumer_group = $2 FOR UPDATE) c`, pid, queue.QueueModeGroup).Scan(&n))
	require.Equal(t, 1, n)
	require.NoError(t, pop.Rollback(ctx))

	got := <-done
	require.NoError(t, got.err)
	require.True(t, got.res.Success, "%+v", got.res)
	var cursor string
	require.NoError(t, db.QueryRow(ctx, `SELECT m.transaction_id FROM queen.partition_consumers c
		JOIN queen.messages m ON m.id = c.last_consumed_id
		WHERE c.partition_id = $1 AND c.consumer_group = $2`, pid, queue.QueueModeGroup).Scan(&cursor))
	require.Equal(t, "m1", cursor, "the transaction ran again and acked")
}
