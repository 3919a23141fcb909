package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// The broker of the release before calls queen.tx_ack_q2 during a rolling upgrade: it
// answers as queen.tx_ack_q3 does, without the partition the ack freed, and applies
// the ack (here, the one that ends the leased batch).
func TestTxAckOfThePreviousReleaseStillAcks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 2)
	ids := queue.NewIDGenerator()
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{
		{Queue: "tx-compat", Partition: "p", TransactionID: "m1", MessageID: ids.New(), Payload: benchPayload},
		{Queue: "tx-compat", Partition: "p", TransactionID: "m2", MessageID: ids.New(), Payload: benchPayload}})
	require.NoError(t, err)
	lease := ids.New()
	msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "tx-compat", ConsumerGroup: queue.QueueModeGroup, Batch: 1}, lease)
	require.NoError(t, err)
	require.Len(t, msgs, 1)

	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	_, err = tx.Exec(ctx, `SELECT queen.tx_prepare_q1('{}', '{}', ARRAY[$1::text], ARRAY[$2::text])`,
		msgs[0].PartitionID, queue.QueueModeGroup)
	require.NoError(t, err)
	var ok, dlq, unresolved bool
	var errText string
	require.NoError(t, tx.QueryRow(ctx, `SELECT o_success, coalesce(o_error, ''), o_dlq, o_unresolved
		FROM queen.tx_ack_q2($1, $2, $3, 'completed', $4, NULL)`,
		"m1", msgs[0].PartitionID, queue.QueueModeGroup, lease).Scan(&ok, &errText, &dlq, &unresolved))
	require.True(t, ok, errText)
	require.False(t, dlq)
	require.False(t, unresolved)
	require.NoError(t, tx.Commit(ctx))

	var cursor string
	var leased bool
	require.NoError(t, db.QueryRow(ctx, `SELECT m.transaction_id, c.worker_id IS NOT NULL
		FROM queen.partition_consumers c JOIN queen.messages m ON m.id = c.last_consumed_id
		WHERE c.partition_id = $1 AND c.consumer_group = $2`, msgs[0].PartitionID, queue.QueueModeGroup).Scan(&cursor, &leased))
	require.Equal(t, "m1", cursor)
	require.False(t, leased, "the ack of the batch's last message ends the lease")
}
