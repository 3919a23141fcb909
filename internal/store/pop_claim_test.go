package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A pop of one consumer group in the middle of its claim of a partition holds back the
// pops of its own group there, and no other group's: a wildcard pop of another group
// that passed the partition over would answer empty (and a parked one would wait for
// its re-check interval) while a message waits for it.
func TestAClaimOfOneGroupDoesNotHoldBackAnother(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: "shared", Partition: "a",
		TransactionID: "m1", MessageID: queue.NewIDGenerator().New(), Payload: benchPayload}})
	require.NoError(t, err)
	claim := func(group, partition, lease string) []queue.Message {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "shared", ConsumerGroup: group,
			Partition: partition, Batch: 1}, lease)
		require.NoError(t, err, "the claim of %s waited for another's", group)
		return msgs
	}
	// Every group registered, as its first wildcard pop would register it (its policy
	// stored, then its registration): the message has a ready row for each.
	for _, g := range []string{"g1", "g2", "g3"} {
		_, err := db.Exec(ctx, `SELECT queen.group_policy_store_q1('shared', $1, NULL)`, g)
		require.NoError(t, err)
		_, err = db.Exec(ctx, `SELECT queen.queue_consumer_register_q1(q.id, q.name, $1, NULL, NULL, now())
			FROM queen.queues q WHERE q.name = 'shared'`, g)
		require.NoError(t, err)
	}

	// g1's claim, held open in the middle of its transaction.
	g1, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = g1.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := g1.Query(ctx, `SELECT o_transaction_id FROM queen.pop_q4('shared', NULL, 'g1', 'L1', 1, 1, false, NULL, NULL, 0, 0, NULL, 1)
		WHERE o_id IS NOT NULL`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"m1"}, got)

	require.Empty(t, claim("g1", "", "L2"), "a pop of g1 while g1 claims the partition")
	require.Equal(t, []string{"m1"}, txids(claim("g2", "", "L3")), "a wildcard pop of g2 while g1 claims")
	require.Equal(t, []string{"m1"}, txids(claim("g3", "a", "L4")), "a pop of g3 naming the partition while g1 claims")
	require.NoError(t, g1.Commit(ctx))
}

func txids(msgs []queue.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.TransactionID
	}
	return ids
}
