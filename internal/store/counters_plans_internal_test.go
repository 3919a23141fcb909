package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// The counters of a queue's partitions (GET /api/v1/resources/queues/{queue}) and of
// the status views count, per partition, the dead letters of the queue mode's group
// the cursor passed. Joined with queen.messages, that count was planned (with a small
// dead-letter table and statistics) as a merge join walking every message of the
// database once per partition: 4 s for a queue of 5 000 partitions with one message
// each. This test counts the rows of queen.messages both statements read for a queue
// of 3 000 partitions and ten dead letters of another group: about one per partition
// (9 million, one per partition and message, before).
func TestPartitionCountersReadEachMessageOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, conn := openSession(t)

	const parts = 3000
	ids := queue.NewIDGenerator()
	items := make([]queue.PushItem, parts)
	for i := range items {
		items[i] = queue.PushItem{Queue: "counted", Partition: fmt.Sprintf("p%04d", i), Payload: []byte(`{}`),
			TransactionID: ids.New(), MessageID: ids.New()}
	}
	_, err := st.MessageInsertBatch(ctx, items)
	require.NoError(t, err)
	// Dead letters of another group, as a consumer group's failed message leaves it.
	_, err = conn.Exec(ctx, `INSERT INTO queen.dead_letter_queue (message_id, partition_id, consumer_group, error_message)
		SELECT m.id, m.partition_id, 'other', 'x' FROM queen.messages m LIMIT 10`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `ANALYZE`)
	require.NoError(t, err)
	var qid string
	require.NoError(t, conn.QueryRow(ctx, `SELECT id::text FROM queen.queues WHERE name = 'counted'`).Scan(&qid))

	read := func(tx pgx.Tx) int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
			FROM pg_stat_xact_user_tables WHERE schemaname = 'queen' AND relname = 'messages'`).Scan(&n))
		return n
	}
	for _, c := range []struct {
		name string
		sql  string
		args []any
	}{
		{"partition counters", sqlPartitionCounters, []any{qid}},
		{"message counters", sqlMessageCounters, []any{time.Unix(0, 0), time.Now().Add(time.Hour), "counted", "", "", ""}},
	} {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		before := read(tx)
		rows, err := tx.Query(ctx, c.sql, c.args...)
		require.NoError(t, err)
		n := 0
		for rows.Next() {
			n++
		}
		require.NoError(t, rows.Err())
		require.Positive(t, n, c.name)
		require.Less(t, read(tx)-before, int64(5*parts), "%s: rows of queen.messages read", c.name)
		require.NoError(t, tx.Rollback(ctx))
	}
}
