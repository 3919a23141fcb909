package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// The acks of brokers of earlier releases, still served during a rolling upgrade
// (queen.ack_items_q1 behind queen.ack_q2, and queen.tx_ack_q1), drop a message they
// would dead-letter when its queue's dead-letter queue is off, as the current acks do:
// no dead letter, the cursor past the message. On a queue with it on they still file one.
func TestOlderAcksDropOnAQueueWithoutDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 2)
	ids := queue.NewIDGenerator()
	for _, q := range []struct {
		name string
		dlq  bool
	}{{"old-off", false}, {"old-on", true}} {
		_, _, err := st.QueueConfigure(ctx, queue.Queue{Name: q.name,
			Options: queue.Options{RetryLimit: 3, DeadLetterQueue: q.dlq, DLQAfterMaxRetries: q.dlq}})
		require.NoError(t, err)
		_, err = st.MessageInsertBatch(ctx, []queue.PushItem{
			{Queue: q.name, Partition: "p", TransactionID: "m1", MessageID: ids.New(), Payload: benchPayload},
			{Queue: q.name, Partition: "p", TransactionID: "m2", MessageID: ids.New(), Payload: benchPayload}})
		require.NoError(t, err)
	}
	pid := func(q string) string {
		var id string
		require.NoError(t, db.QueryRow(ctx, `SELECT p.id::text FROM queen.partitions p JOIN queen.queues q
			ON q.id = p.queue_id WHERE q.name = $1 AND p.name = 'p'`, q).Scan(&id))
		return id
	}
	state := func(q string) (cursor string, dead int) {
		t.Helper()
		require.NoError(t, db.QueryRow(ctx, `SELECT coalesce((SELECT m.transaction_id FROM queen.partition_consumers c
			JOIN queen.messages m ON m.id = c.last_consumed_id WHERE c.partition_id = $1::uuid
			AND c.consumer_group = '__QUEUE_MODE__'), ''),
			(SELECT count(*) FROM queen.dead_letter_queue d WHERE d.partition_id = $1::uuid)`, pid(q)).Scan(&cursor, &dead))
		return cursor, dead
	}

	for _, q := range []string{"old-off", "old-on"} {
		var ok, dlq bool
		require.NoError(t, db.QueryRow(ctx, `SELECT o_success, o_dlq FROM queen.ack_q2(ARRAY['m1'], ARRAY[$1],
			ARRAY[''], ARRAY['dlq'], ARRAY['poison'], '__QUEUE_MODE__')`, pid(q)).Scan(&ok, &dlq))
		require.True(t, ok, q)
		require.Equal(t, q == "old-on", dlq, "%s: o_dlq of ack_q2", q)

		tx, err := db.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT queen.tx_prepare_q1('{}', '{}', ARRAY[$1::text], ARRAY['__QUEUE_MODE__'])`, pid(q))
		require.NoError(t, err)
		require.NoError(t, tx.QueryRow(ctx, `SELECT o_success, o_dlq FROM queen.tx_ack_q1('m2', $1, '__QUEUE_MODE__',
			'dlq', '', 'poison')`, pid(q)).Scan(&ok, &dlq))
		require.NoError(t, tx.Commit(ctx))
		require.True(t, ok, q)
		require.Equal(t, q == "old-on", dlq, "%s: o_dlq of tx_ack_q1", q)

		cursor, dead := state(q)
		require.Equal(t, "m2", cursor, "%s: the cursor moved past both", q)
		require.Equal(t, map[string]int{"old-off": 0, "old-on": 2}[q], dead, "%s: dead letters filed", q)
	}
}
