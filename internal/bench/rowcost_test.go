package bench

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// The -rowcost variants must have the shape their names claim, read back from the
// catalog independently of how they were built, and must have stored the rows they
// counted; the push variants must leave heads and ready rows as push_q2 does.
func TestRowCostQuick(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	d := &database{pool: pgtest.NewDB(t)}
	const workers = 2
	cases := []rowCostCase{{1, 4}, {10, 30}}
	res, err := measureRowCost(ctx, d, rowCostParams{
		win: window{warmup: 20 * time.Millisecond, duration: 100 * time.Millisecond}, workers: workers,
		payload: makePayload(100), cases: cases, rounds: 1, scaled: func(n int) int { return n }, logf: t.Logf,
	})
	require.NoError(t, err)

	// indexBodies returns the definitions (from USING on) of a table's indexes.
	indexBodies := func(t *testing.T, schema, table string) []string {
		t.Helper()
		rows, err := d.pool.Query(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2`, schema, table)
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var def string
			require.NoError(t, rows.Scan(&def))
			_, body, ok := strings.Cut(def, " USING ")
			require.True(t, ok, def)
			out = append(out, body)
		}
		require.NoError(t, rows.Err())
		slices.Sort(out)
		return out
	}
	constraints := func(t *testing.T, table, kind string) int {
		t.Helper()
		var n int
		require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = $2`,
			table, kind).Scan(&n))
		return n
	}

	t.Run("EachVariantHasTheShapeItsNameClaims", func(t *testing.T) {
		t.Parallel()
		prod := indexBodies(t, "queen", "messages")
		require.Len(t, prod, 3, "queen.messages: primary key, dedup index, order index")
		require.Contains(t, prod, "btree (id)")
		type shape struct {
			indexes []string
			fk      bool
		}
		want := map[string]shape{
			"full": {prod, true}, "copy": {prod, true}, "no_fk": {prod, false}, "bare": {[]string{"btree (id)"}, false},
			"push": {prod, true}, "push_locked": {prod, true},
			"no_messages_partition_transaction_unique": {
				slices.DeleteFunc(slices.Clone(prod), func(b string) bool { return strings.Contains(b, "transaction_id") }), true},
			"no_idx_messages_partition_created": {
				slices.DeleteFunc(slices.Clone(prod), func(b string) bool { return strings.Contains(b, "created_at") }), true},
		}
		got := map[string]bool{}
		for _, r := range res {
			got[r.variant.name] = true
		}
		require.ElementsMatch(t, slices.Collect(maps.Keys(want)), slices.Collect(maps.Keys(got)))
		for name, w := range want {
			table := "rowcost." + name
			require.Len(t, w.indexes, len(slices.Compact(slices.Clone(w.indexes))), name)
			require.Equal(t, w.indexes, indexBodies(t, "rowcost", name), name)
			require.Equal(t, 1, constraints(t, table, "p"), "%s has a primary key", name)
			fks := 0
			if w.fk {
				fks = 1
			}
			require.Equal(t, fks, constraints(t, table, "f"), "%s foreign keys", name)
			if w.fk {
				var target string
				require.NoError(t, d.pool.QueryRow(ctx, `SELECT confrelid::regclass::text || ' ' || confdeltype::text FROM pg_constraint
					WHERE conrelid = $1::regclass AND contype = 'f'`, table).Scan(&target))
				require.Equal(t, "queen.partitions c", target, "%s: the production foreign key (ON DELETE CASCADE)", name)
			}
		}
	})

	t.Run("EveryMeasurementStoredTheRowsItCounted", func(t *testing.T) {
		t.Parallel()
		require.Len(t, res, len(cases)*8)
		for _, r := range res {
			name := r.c.name() + " " + r.variant.name
			require.Positive(t, r.m.msgs, name)
			require.GreaterOrEqual(t, r.counted, r.m.msgs, name)
			require.Equal(t, r.counted, r.stored, name)
		}
		rep := rowCostReport(res, workers)
		require.Len(t, rep, len(res))
		for _, r := range rep {
			require.NotNil(t, r.Ratio, r.Name)
			if strings.HasSuffix(r.Name, "_full") {
				require.InDelta(t, 1.0, *r.Ratio, 1e-9, r.Name)
			}
		}
	})

	t.Run("CopyStoresTheRowsTheInsertStores", func(t *testing.T) {
		t.Parallel()
		// Rows of the copy variant read back as the raw insert's: the same payload, no
		// trace id, not encrypted, no producer, a created_at of the run.
		for _, table := range []string{"rowcost.full", "rowcost.copy"} {
			var rows, odd int
			require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE trace_id IS NOT NULL OR is_encrypted
				OR producer_sub IS NOT NULL OR payload <> $1::jsonb OR created_at < now() - interval '1 hour')
				FROM `+table, makePayload(100)).Scan(&rows, &odd))
			require.Positive(t, rows, table)
			require.Zero(t, odd, table)
		}
	})

	t.Run("PushVariantsKeepTheHeadsAndReadyRows", func(t *testing.T) {
		t.Parallel()
		// The last variant measured was push_locked of the last case; its tables were
		// emptied before it, so heads and ready rows are its own.
		require.Equal(t, "push_locked", res[len(res)-1].variant.name)
		// One snapshot for every count, should a statement the window gave up commit now.
		tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		var partitions, rows, wrongHeads, ready, queued int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(DISTINCT partition_id), count(*) FROM rowcost.push_locked`).
			Scan(&partitions, &rows))
		last := res[len(res)-1]
		require.EqualValues(t, last.stored, rows, "the rows counted after the window")
		// Statements go round robin over the 30 partitions: a window too short (the race
		// detector, a slow host) to go round once touches as many as it ran.
		statements := rows / last.c.batch
		require.Positive(t, statements)
		require.Equal(t, min(30, statements), partitions, "the statements cycled over the partitions")
		require.NoError(t, tx.QueryRow(ctx, `
			SELECT count(*) FROM (SELECT DISTINCT ON (partition_id) partition_id, id, created_at FROM rowcost.push_locked
			                      ORDER BY partition_id, created_at DESC, id DESC) h
			LEFT JOIN rowcost.lookup l ON l.partition_id = h.partition_id
			 AND (l.last_message_id, l.last_message_created_at) = (h.id, h.created_at)
			WHERE l.id IS NULL`).Scan(&wrongHeads))
		require.Zero(t, wrongHeads, "every partition's head is its newest message")
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE consumer_group = $1) FROM rowcost.ready`,
			queue.QueueModeGroup).Scan(&ready, &queued))
		require.Equal(t, []int{partitions, partitions}, []int{ready, queued}, "one ready row per partition, for the registered group")
	})

	t.Run("PushLockedWaitsForThePushLocks", func(t *testing.T) {
		t.Parallel()
		var pid, qname, qid string
		require.NoError(t, d.pool.QueryRow(ctx, `SELECT p.id::text, q.name, q.id::text FROM queen.partitions p
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'bench-rowcost-p4' ORDER BY p.name LIMIT 1`).
			Scan(&pid, &qname, &qid))
		ins := newRawInserter(queue.NewIDGenerator(), `{"a":1}`, 1)
		push := func(t *testing.T, locks bool) error {
			t.Helper()
			tx, err := d.pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
			_, err = tx.Exec(ctx, "SET LOCAL lock_timeout = '100ms'")
			require.NoError(t, err)
			table := "rowcost.push"
			if locks {
				table = "rowcost.push_locked"
			}
			var n int64
			if err := tx.QueryRow(ctx, rowCostPushSQL(table, locks), append(ins.args(func(int) string { return pid }), qname, qid)...).
				Scan(&n); err != nil {
				return err
			}
			require.EqualValues(t, 1, n)
			return nil
		}
		for _, lock := range []string{
			`SELECT pg_advisory_xact_lock(queen.partition_order_key($1::uuid))`,
			`SELECT pg_advisory_xact_lock(queen.queue_consumers_key((SELECT queue_id FROM queen.partitions WHERE id = $1::uuid)))`,
		} {
			holder, err := d.pool.Begin(ctx)
			require.NoError(t, err)
			_, err = holder.Exec(ctx, lock, pid)
			require.NoError(t, err)
			require.NoError(t, push(t, false), "push takes no lock")
			var pgErr *pgconn.PgError
			require.ErrorAs(t, push(t, true), &pgErr, lock)
			require.Equal(t, "55P03", pgErr.Code, "push_locked waits for %s", lock)
			require.NoError(t, holder.Rollback(ctx))
		}
		require.NoError(t, push(t, true), "push_locked goes through once the locks are free")
	})
}

// The report gives each variant the median of its rounds, as a ratio to full's median
// in the same case, in the order the variants were first measured.
func TestRowCostReportTakesTheMedianOfTheRounds(t *testing.T) {
	t.Parallel()

	c := rowCostCase{batch: 10, partitions: 100}
	other := rowCostCase{batch: 1, partitions: 100}
	at := func(c rowCostCase, variant string, msgs int64) rowCostResult {
		return rowCostResult{c: c, variant: rowVariant{name: variant}, m: measurement{msgs: msgs, elapsed: time.Second}}
	}
	rep := rowCostReport([]rowCostResult{
		at(c, "full", 100), at(c, "bare", 400), at(c, "bare", 300), at(c, "full", 90), at(c, "bare", 1000), at(c, "full", 500),
		at(other, "bare", 10), at(other, "full", 20),
	}, 4)
	type row struct {
		Name         string
		Value, Ratio float64
	}
	var got []row
	for _, r := range rep {
		require.NotNil(t, r.Ratio, r.Name)
		got = append(got, row{r.Name, r.Value, *r.Ratio})
	}
	require.Equal(t, []row{
		{"rowcost_b10_p100_full", 100, 1}, {"rowcost_b10_p100_bare", 400, 4},
		{"rowcost_b1_p100_bare", 10, 0.5}, {"rowcost_b1_p100_full", 20, 1},
	}, got)
	require.InDelta(t, 2.5, median([]float64{4, 1, 3, 2}), 1e-9)
	require.Zero(t, median(nil))
}
