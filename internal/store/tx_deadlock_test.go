package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// A transaction's ack takes the (partition, group) ack lock, then the cursor row, and
// can deadlock with another session that takes such locks the other way (a pop takes
// the ready row, then the cursor row). Here a session holds the cursor row, and once
// the transaction waits for it, asks for the ack lock. PostgreSQL aborts the
// transaction (the session waits longer before it looks for deadlocks), which took no
// effect and runs again once the session is gone; it used to answer 500. The cycle
// goes through the ack lock so that the test is deterministic: PostgreSQL hands that
// lock to the session as it aborts the transaction, and the transaction's next run
// queues behind the session. (Through a row lock, the next run could take the row back
// before the waiting session did and deadlock again.)
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
	require.NoError(t, pop.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM queen.partition_consumers
		WHERE partition_id = $1 AND consumer_group = $2 FOR UPDATE) c`, pid, queue.QueueModeGroup).Scan(&n))
	require.Equal(t, 1, n, "the cursor row")

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
	// The ack lock the transaction holds: a deadlock, which PostgreSQL resolves by
	// aborting the transaction (nothing else ends its wait for the row this session
	// holds); this statement then gets the lock.
	_, err = pop.Exec(ctx, `SELECT pg_advisory_xact_lock(queen.ack_lock_key($1::uuid, $2))`, pid, queue.QueueModeGroup)
	require.NoError(t, err)
	// The transaction's next run waits for the ack lock, behind this session.
	waitForLock(t, db, `query LIKE '%tx_prepare_q1%'`)
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
