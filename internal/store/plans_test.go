package store_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// The hot functions must read what they deliver, not the partition, whatever the
// statistics say. A table that was never analyzed makes every partition look tiny;
// planners then chose a bitmap scan and sort of the whole partition per pop, and a seq
// scan with a hash join per ack batch. This test fills one partition of such a table
// and counts, with the transaction's own statistics, the rows push, pop and ack read
// from queen.messages — on the first calls of a session (custom plans) and after the
// sixth (plpgsql's cached generic plans).
func TestHotPathsReadOnlyWhatTheyNeedOnAnUnanalyzedTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 2)
	// One session for the whole test: plpgsql caches plans per session.
	conn, err := db.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	_, err = conn.Exec(ctx, `ALTER TABLE queen.messages SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	ids := queue.NewIDGenerator()
	for range 5 {
		_, err := st.MessageInsertBatch(ctx, benchItems(ids, 1000, "hot"))
		require.NoError(t, err)
	}
	var analyzed bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL
		FROM pg_stat_user_tables WHERE schemaname = 'queen' AND relname = 'messages'`).Scan(&analyzed))
	require.False(t, analyzed, "the point is a table without statistics")

	const batch = 100
	for round := range 8 {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		// The counters accumulate until the session flushes them: count from here.
		base := messagesRead(t, tx)

		pushTx := make([]string, batch)
		pushID := make([]string, batch)
		for i := range pushTx {
			pushTx[i], pushID[i] = fmt.Sprintf("r%d-%d", round, i), ids.New()
		}
		var queued int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE o_status = 'queued')
			FROM queen.push_q2('{bench}', '{hot}', array_fill(1, ARRAY[$1::int]), $2, $3,
			                   (SELECT '[' || string_agg('{}', ',') || ']' FROM generate_series(1, $1::int)),
			                   NULL, NULL, NULL)`,
			batch, pushTx, pushID).Scan(&queued))
		require.Equal(t, batch, queued)
		pushRead := messagesRead(t, tx) - base

		lease := fmt.Sprintf("lease-%d", round)
		rows, err := tx.Query(ctx, `SELECT o_transaction_id, o_partition_id::text
			FROM queen.pop_q1('bench', 'hot', '__QUEUE_MODE__', $1, $2, 1, false, NULL, NULL)`, lease, batch)
		require.NoError(t, err)
		var txids, pids []string
		for rows.Next() {
			var txid, pid string
			require.NoError(t, rows.Scan(&txid, &pid))
			txids, pids = append(txids, txid), append(pids, pid)
		}
		require.NoError(t, rows.Err())
		require.Len(t, txids, batch)
		popRead := messagesRead(t, tx) - base - pushRead

		leases := make([]string, batch)
		statuses := make([]string, batch)
		errs := make([]string, batch)
		for i := range leases {
			leases[i], statuses[i] = lease, queue.AckCompleted
		}
		var acked int
		require.NoError(t, tx.QueryRow(ctx, `SELECT CASE WHEN min(o_idx) = -1 THEN cardinality($1::text[]) ELSE count(*) FILTER (WHERE o_success) END
			FROM queen.ack_q2($1, $2, $3, $4, $5, '__QUEUE_MODE__')`, txids, pids, leases, statuses, errs).Scan(&acked))
		require.Equal(t, batch, acked)
		ackRead := messagesRead(t, tx) - base - pushRead - popRead
		require.NoError(t, tx.Commit(ctx))

		// A batch of 100 reads its 100 rows (plus index descents); a partition walk
		// reads thousands.
		require.LessOrEqual(t, pushRead, int64(2*batch), "round %d: rows push read", round)
		require.LessOrEqual(t, popRead, int64(2*batch), "round %d: rows pop read", round)
		require.LessOrEqual(t, ackRead, int64(2*batch), "round %d: rows ack read", round)
	}
}

// messagesRead is the number of queen.messages rows the session has read (sequential
// scans plus index fetches) and not yet reported, from its own statistics.
func messagesRead(t *testing.T, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
		FROM pg_stat_xact_user_tables WHERE schemaname = 'queen' AND relname = 'messages'`).Scan(&n))
	return n
}
