package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// A session plans a statement once and keeps the plan until a table it reads is
// analyzed again. Planned while the queue had a few partitions, the direct push's lock
// statements read every partition, and kept doing so after the queue grew to
// thousands, on every push, until the next ANALYZE: by sequential scan when the small
// table had statistics, by a walk of a whole index when it had none (a new database).
// queen.push_q3 (the general path, which creates partitions) read all of
// queen.partitions several times per push that created one. These tests plan each
// path (one partition and two) in one session on small tables, both ways, grow them a
// thousandfold without analyzing them, and count, with the transaction's own
// statistics, the rows of the grown tables the same session's pushes then read by
// sequential scan (none) and fetch by index (a few).
func TestDirectPushPlansOutliveTheTablesGrowth(t *testing.T) {
	t.Parallel()
	t.Run("analyzed while small", func(t *testing.T) { pushPlansAfterGrowth(t, true, pushDirect) })
	t.Run("never analyzed", func(t *testing.T) { pushPlansAfterGrowth(t, false, pushDirect) })
}

func TestGeneralPushPlansOutliveTheTablesGrowth(t *testing.T) {
	t.Parallel()
	t.Run("analyzed while small", func(t *testing.T) { pushPlansAfterGrowth(t, true, pushGeneral) })
	t.Run("never analyzed", func(t *testing.T) { pushPlansAfterGrowth(t, false, pushGeneral) })
	t.Run("transaction, analyzed while small", func(t *testing.T) { pushPlansAfterGrowth(t, true, pushInTransaction) })
	t.Run("transaction, never analyzed", func(t *testing.T) { pushPlansAfterGrowth(t, false, pushInTransaction) })
}

// The paths of pushPlansAfterGrowth.
const (
	pushDirect        = iota // the direct push, to existing partitions
	pushGeneral              // queen.push_q3: pushes that create their partitions, and one that does not
	pushInTransaction        // a /transaction's push: queen.tx_prepare_q1, then queen.push_q3
)

// pushPlansAfterGrowth runs the test above for one push path.
func pushPlansAfterGrowth(t *testing.T, analyze bool, path int) {
	t.Parallel()
	ctx := t.Context()
	st, conn := openSession(t)

	hot := []string{"queues", "partitions", "partition_lookup"}
	for _, tbl := range hot {
		_, err := conn.Exec(ctx, `ALTER TABLE queen.`+tbl+` SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
	}
	ids := queue.NewIDGenerator()
	items := func(parts ...string) []queue.PushItem {
		out := make([]queue.PushItem, len(parts))
		for i, p := range parts {
			out[i] = queue.PushItem{Queue: "plans", Partition: p, Payload: []byte(`{}`),
				TransactionID: ids.New(), MessageID: ids.New()}
		}
		return out
	}
	name := func(p int) string { return fmt.Sprintf("p%05d", p) }
	grow := func(from, to int) {
		t.Helper()
		parts := make([]string, 0, to-from)
		for p := from; p < to; p++ {
			parts = append(parts, name(p))
		}
		for len(parts) > 0 {
			n := min(len(parts), 500)
			res, err := st.MessageInsertBatch(ctx, items(parts[:n]...))
			require.NoError(t, err)
			require.Equal(t, queue.StatusQueued, res[n-1].Status)
			parts = parts[n:]
		}
	}
	// store runs one path's push of its items in tx.
	store := func(tx pgx.Tx, its []queue.PushItem) []queue.PushResult {
		t.Helper()
		if path == pushInTransaction {
			a := newPushArgs(its)
			_, err := tx.Exec(ctx, `SELECT queen.tx_prepare_q1($1, $2, '{}', '{}')`, a.queues, a.partitions)
			require.NoError(t, err)
		}
		if path != pushDirect {
			res, err := messageInsertBatch(ctx, tx, its, newPushArgs(its))
			require.NoError(t, err)
			return res
		}
		b, readPush := directPushBatch(newPushArgs(its))
		br := tx.SendBatch(ctx, b)
		var pids []string
		res, err := readPush(br, its, &pids, make([]bool, len(its)))
		require.NoError(t, err)
		require.NoError(t, br.Close())
		require.Len(t, pids, len(its), "the direct push applies")
		return res
	}
	// push stores one message in each of parts in conn, in a transaction, and returns
	// the rows of each grown table it read by sequential scan and fetched by index.
	grown := []string{"partitions", "partition_lookup"}
	push := func(parts ...string) (seq, idx map[string]int64) {
		t.Helper()
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // committed below
		read := func() (seq, idx map[string]int64) {
			seq, idx = map[string]int64{}, map[string]int64{}
			rows, err := tx.Query(ctx, `SELECT relname, coalesce(seq_tup_read, 0), coalesce(idx_tup_fetch, 0)
				FROM pg_stat_xact_user_tables WHERE schemaname = 'queen' AND relname = ANY ($1)`, grown)
			require.NoError(t, err)
			for rows.Next() {
				var tbl string
				var s, i int64
				require.NoError(t, rows.Scan(&tbl, &s, &i))
				seq[tbl], idx[tbl] = s, i
			}
			require.NoError(t, rows.Err())
			require.Len(t, seq, len(grown))
			return seq, idx
		}
		seq0, idx0 := read()
		res := store(tx, items(parts...))
		for i := range res {
			require.Equal(t, queue.StatusQueued, res[i].Status, "item %d", i)
		}
		seq1, idx1 := read()
		require.NoError(t, tx.Commit(ctx))
		for _, tbl := range grown {
			seq1[tbl] -= seq0[tbl]
			idx1[tbl] -= idx0[tbl]
		}
		return seq1, idx1
	}
	// pairs are the partitions of round's pushes: existing ones for the direct push,
	// new ones (from 10 000 on) and an existing one for the general path.
	pairs := func(round int, existing []int) [][]string {
		if path == pushDirect {
			out := make([][]string, 0, 2)
			out = append(out, []string{name(existing[0])}, []string{name(existing[1]), name(existing[2])})
			return out
		}
		n := 10_000 + 3*round
		return [][]string{{name(n)}, {name(n + 1), name(n + 2)}, {name(existing[0])}}
	}

	// Three partitions, with statistics (as autovacuum leaves small tables) or none
	// (a new database); plans made and cached in conn (custom ones for the first five
	// runs of a statement, then the generic one, unless the push forces it).
	grow(0, 3)
	if analyze {
		for _, tbl := range hot {
			_, err := conn.Exec(ctx, `VACUUM ANALYZE queen.`+tbl)
			require.NoError(t, err)
		}
	}
	for round := range 8 {
		for _, parts := range pairs(round, []int{round % 3, round % 3, (round + 1) % 3}) {
			push(parts...)
		}
	}

	// A thousandfold, unanalyzed.
	grow(3, 3000)
	var stale bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT reltuples < 100 FROM pg_class WHERE oid = 'queen.partitions'::regclass`).Scan(&stale))
	require.True(t, stale, "the statistics still say a few partitions, or nothing")

	for round := range 4 {
		for _, parts := range pairs(8+round, []int{100 + round, 200 + round, 2500 + round}) {
			seq, idx := push(parts...)
			for _, tbl := range grown {
				require.Zero(t, seq[tbl], "round %d, partitions %v: rows of queen.%s read by sequential scan", round, parts, tbl)
				require.Less(t, idx[tbl], int64(20), "round %d, partitions %v: rows of queen.%s fetched by index", round, parts, tbl)
			}
		}
	}
}

// openSession opens a store (two connections) on a new test database, and one more
// connection to it: the session under test.
func openSession(t *testing.T) (*Store, *pgx.Conn) {
	t.Helper()
	url := pgtest.NewDBURL(t)
	st, err := Open(Options{ConnString: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(t.Context())) })
	return st, conn
}
