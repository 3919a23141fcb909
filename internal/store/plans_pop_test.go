package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A push, a pop (wildcard, or of one partition) and its ack are keyed lookups on
// tables that grow with the partition count. plpgsql keeps a statement's cached plan
// until the table is analyzed again, so a plan made while the queue had a few
// partitions must still be an index plan when it has thousands: a claim planned
// against a hundred cursor rows once scanned them all on every pop (0.5 ms per pop at
// 10 000 partitions), and pops planned on a new database (tables never analyzed) once
// walked the whole partition lookup for each partition's head. The pop carries planner
// settings for that; for the rest, the analyze job (Store.AnalyzeGrownTables) brings
// the statistics up to date, which makes every session plan again. This test plans
// the hot statements on tiny tables, analyzed or never, grows them a hundredfold with
// autovacuum off, runs the job's check, and counts, with the transaction's own
// statistics, the rows that pushes, pops and acks read by sequential scan (none) and
// fetch by index (a few: no plan walks a whole index, generic plans included).
func TestPushPopAckScanNothingAfterTheTablesGrew(t *testing.T) {
	t.Parallel()
	t.Run("analyzed while small", func(t *testing.T) { popAckPlansAfterGrowth(t, true) })
	t.Run("never analyzed", func(t *testing.T) { popAckPlansAfterGrowth(t, false) })
}

func popAckPlansAfterGrowth(t *testing.T, analyze bool) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 2)
	conn, err := db.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	// queen.queues and queen.queue_consumers grow with queues and consumer groups, not
	// partitions: a scan of them reads a few rows.
	hot := []string{"partitions", "partition_lookup", "partition_consumers", "partition_ready"}
	for _, tbl := range append([]string{"messages"}, hot...) {
		_, err := conn.Exec(ctx, `ALTER TABLE queen.`+tbl+` SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
	}
	ids := queue.NewIDGenerator()
	// pushTo pushes one message to each partition p<from>..p<to-1> through push_q2 in
	// q (the session under test, or its transaction).
	pushTo := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, from, to int) {
		t.Helper()
		n := to - from
		parts, pair, txids, mids := make([]string, n), make([]int32, n), make([]string, n), make([]string, n)
		for i := range n {
			parts[i], pair[i], txids[i], mids[i] = fmt.Sprintf("p%05d", from+i), int32(i+1), ids.New(), ids.New()
		}
		var queued int
		require.NoError(t, q.QueryRow(ctx, `SELECT count(*) FILTER (WHERE o_status = 'queued')
			FROM queen.push_q2(array_fill('bench'::text, ARRAY[$1::int]), $2, $3, $4, $5,
			                   (SELECT '[' || string_agg('{}', ',') || ']' FROM generate_series(1, $1::int)),
			                   NULL, NULL, NULL)`, n, parts, pair, txids, mids).Scan(&queued))
		require.Equal(t, n, queued)
	}
	// popAckOf pops a batch of partition ("" = any) under lease and acks it, in tx;
	// it returns how many it delivered.
	popAckOf := func(tx pgx.Tx, lease, partition string) int {
		t.Helper()
		rows, err := tx.Query(ctx, `SELECT o_transaction_id, o_partition_id::text
			FROM queen.pop_q1('bench', nullif($2, ''), '__QUEUE_MODE__', $1, 10, 1, false, NULL, NULL, NULL)`,
			lease, partition)
		require.NoError(t, err)
		var txids, pids, leases, statuses, errs []string
		for rows.Next() {
			var txid, pid string
			require.NoError(t, rows.Scan(&txid, &pid))
			txids, pids = append(txids, txid), append(pids, pid)
			leases, statuses, errs = append(leases, lease), append(statuses, queue.AckCompleted), append(errs, "")
		}
		require.NoError(t, rows.Err())
		if len(txids) > 0 {
			var acked int
			require.NoError(t, tx.QueryRow(ctx, `SELECT CASE WHEN min(o_idx) = -1 THEN cardinality($1::text[]) ELSE count(*) FILTER (WHERE o_success) END
				FROM queen.ack_q2($1, $2, $3, $4, $5, '__QUEUE_MODE__')`, txids, pids, leases, statuses, errs).Scan(&acked))
			require.Equal(t, len(txids), acked, "lease %s", lease)
		}
		return len(txids)
	}

	// popAck pushes (with push) a message to a partition that exists and one to two
	// partitions, then pops a batch of a partition (p00000) and acks it, and a batch of
	// any partition and acks it, all in tx and with the session's cached plans. It
	// returns how many the wildcard pop delivered.
	popAck := func(tx pgx.Tx, round int, push bool) int {
		t.Helper()
		if push {
			pushTo(tx, 0, 1)
			pushTo(tx, 1, 3)
		}
		popAckOf(tx, fmt.Sprintf("named-%d", round), "p00000")
		return popAckOf(tx, fmt.Sprintf("lease-%d", round), "")
	}

	// Plan on small tables, with statistics as autovacuum leaves them early on, or
	// none (a new database): past the sixth call plpgsql keeps a generic plan.
	pushTo(conn, 0, 20)
	for round := range 12 {
		if round == 2 && analyze {
			for _, tbl := range hot {
				_, err := conn.Exec(ctx, `VACUUM ANALYZE queen.`+tbl)
				require.NoError(t, err)
			}
		}
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		require.Positive(t, popAck(tx, round, true), "round %d", round)
		require.NoError(t, tx.Commit(ctx))
	}
	// noScans runs rounds from..to-1 of popAck, each in a transaction, and requires
	// that none read a row of the hot tables by sequential scan.
	noScans := func(from, to int, push bool) {
		t.Helper()
		for round := from; round < to; round++ {
			tx, err := conn.Begin(ctx)
			require.NoError(t, err)
			// The counters accumulate until the session flushes them: count from here.
			base := tableReads(t, tx, hot)
			require.Positive(t, popAck(tx, round, push), "round %d", round)
			for tbl, n := range tableReads(t, tx, hot) {
				require.Zero(t, n.seq-base[tbl].seq, "round %d: rows of queen.%s read by sequential scan", round, tbl)
				// A whole-index walk (a plan keyed on nothing) fetches every row: 2 000+.
				require.Less(t, n.idx-base[tbl].idx, int64(50), "round %d: rows of queen.%s fetched by index", round, tbl)
			}
			require.NoError(t, tx.Commit(ctx))
		}
	}
	// Grow every hot table a hundredfold, unanalyzed: partitions with a message each
	// (and their ready rows), and cursor rows of other groups. In this session, which
	// then reports its table statistics at once (sessions report them up to ten
	// seconds late).
	pushTo(conn, 20, 2000)
	_, err = conn.Exec(ctx, `INSERT INTO queen.partition_consumers (partition_id, consumer_group)
		SELECT p.id, g FROM queen.partitions p, unnest(ARRAY['g1', 'g2']) AS g`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT 1`)
	require.NoError(t, err)

	// Pop and ack carry planner settings: their plans are keyed already.
	noScans(12, 16, false)

	// The analyze job's check finds the grown tables once their sessions have reported
	// the rows (PostgreSQL flushes table statistics up to ten seconds late), analyzes
	// them, and then has nothing left to do.
	want := map[string]bool{"messages": true, "partitions": true, "partition_lookup": true,
		"partition_consumers": true, "partition_ready": true}
	grown := map[string]bool{}
	require.Eventually(t, func() bool {
		tables, err := st.AnalyzeGrownTables(ctx)
		if err != nil {
			t.Log(err)
		}
		for _, tbl := range tables {
			grown[tbl] = true
		}
		return len(grown) >= len(want)
	}, 30*time.Second, 200*time.Millisecond, "analyzed only %v", grown)
	require.Equal(t, want, grown)
	again, err := st.AnalyzeGrownTables(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "tables analyzed twice")

	// Push relies on the job: once it ran, every session planned again.
	noScans(16, 24, true)
}

// reads counts the rows of a table read by sequential scan and fetched by index.
type reads struct{ seq, idx int64 }

// tableReads is, per table of queen named in tables, the rows the session has read
// and not yet reported, from its own statistics.
func tableReads(t *testing.T, tx pgx.Tx, tables []string) map[string]reads {
	t.Helper()
	rows, err := tx.Query(t.Context(), `SELECT relname, coalesce(seq_tup_read, 0), coalesce(idx_tup_fetch, 0)
		FROM pg_stat_xact_user_tables WHERE schemaname = 'queen' AND relname = ANY ($1)`, tables)
	require.NoError(t, err)
	out := make(map[string]reads, len(tables))
	for rows.Next() {
		var tbl string
		var n reads
		require.NoError(t, rows.Scan(&tbl, &n.seq, &n.idx))
		out[tbl] = n
	}
	require.NoError(t, rows.Err())
	require.Len(t, out, len(tables))
	return out
}
