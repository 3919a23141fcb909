package store_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// A wildcard consumer group's first pop registers it and seeds its cursor and ready
// rows (queen.queue_consumer_register_q1), reading the group's cursor on each
// partition. Planned while the tables were small, that read walked the whole cursor
// index for each partition (a nested loop whose inner index scan was keyed on the
// group only): 4.6 s for one registration on 5 000 partitions. This test registers
// groups on three partitions (analyzed or never), grows the queue to 3 000 partitions
// with cursor rows of ten other groups, registers one more in the same session and
// counts the pages of the cursor table and its indexes it read: about fourteen per
// partition (850 000 in all before).
func TestRegistrationReadsOneCursorPerPartition(t *testing.T) {
	t.Parallel()
	for _, analyze := range []bool{true, false} {
		t.Run(fmt.Sprintf("analyzed %v", analyze), func(t *testing.T) {
			t.Parallel()
			g := newGrowth(t, "reg")
			// A wildcard pop of a new group registers it (subscribed to new messages:
			// nothing to deliver).
			register := func(group string) {
				t.Helper()
				_, err := g.conn.Exec(t.Context(), `SELECT queen.group_policy_store_q1('reg', $1, NULL)`, group)
				require.NoError(t, err)
				_, err = g.conn.Exec(t.Context(), `SELECT count(*)
					FROM queen.pop_q4('reg', NULL, $1, 'lease', 1, 1, false, 'new', NULL, 30, 0, NULL, 1)`, group)
				require.NoError(t, err)
			}
			g.grow(0, 3)
			for i := range 8 {
				if i == 2 && analyze {
					g.analyze()
				}
				register(fmt.Sprintf("early%d", i))
			}
			g.grow(3, growthPartitions)
			g.crowd()

			before := g.pages("partition_consumers")
			register("late")
			read := g.pages("partition_consumers") - before
			var seeded int
			require.NoError(t, g.conn.QueryRow(t.Context(),
				`SELECT count(*) FROM queen.partition_consumers WHERE consumer_group = 'late'`).Scan(&seeded))
			require.Equal(t, growthPartitions, seeded, "a cursor at the head of every partition")
			t.Logf("pages %d", read)
			require.Less(t, read, int64(30*growthPartitions), "pages of queen.partition_consumers and its indexes read")
		})
	}
}

// A consumer group's seek on a queue writes its cursor on every partition with
// messages and settles its ready rows, keyed by partition. Planned while the queue had
// a few partitions, the settling walked whole indexes for each partition: a seek of a
// queue grown to 5 000 partitions ran into the 30 s statement timeout. This test seeks
// on three partitions (analyzed or never), grows the queue to 3 000 partitions with
// cursor rows of ten other groups, seeks again in the same session and counts the
// pages of the tables it reads by partition (3.9 million before, never analyzed).
func TestSeekReadsEachPartitionByKey(t *testing.T) {
	t.Parallel()
	for _, analyze := range []bool{true, false} {
		t.Run(fmt.Sprintf("analyzed %v", analyze), func(t *testing.T) {
			t.Parallel()
			g := newGrowth(t, "sought")
			// The group seeks back to the beginning or to the end.
			seek := func(toEnd bool) {
				t.Helper()
				var n int
				require.NoError(t, g.conn.QueryRow(t.Context(),
					`SELECT queen.consumer_group_seek_q1('seeker', 'sought', $1, '1970-01-01')`, toEnd).Scan(&n))
				require.Positive(t, n)
			}
			g.grow(0, 3)
			// A wildcard pop registers the group: it has ready rows to settle.
			_, err := g.conn.Exec(t.Context(), `SELECT queen.group_policy_store_q1('sought', 'seeker', NULL)`)
			require.NoError(t, err)
			_, err = g.conn.Exec(t.Context(), `SELECT count(*)
				FROM queen.pop_q4('sought', NULL, 'seeker', 'lease', 1, 1, true, NULL, NULL, 30, 0, NULL, 1)`)
			require.NoError(t, err)
			for i := range 8 {
				if i == 2 && analyze {
					g.analyze()
				}
				seek(i%2 == 0)
			}
			g.grow(3, growthPartitions)
			g.crowd()

			for _, toEnd := range []bool{false, true} {
				before := g.pages(growthTables...)
				seek(toEnd)
				read := g.pages(growthTables...) - before
				t.Logf("to end %v: pages %d", toEnd, read)
				require.Less(t, read, int64(60*growthPartitions),
					"to end %v: pages of the partition tables and their indexes read", toEnd)
			}
		})
	}
}

// growthPartitions is how many partitions a growth test's queue grows to.
const growthPartitions = 3000

// growthTables are the tables that grow with the partitions.
var growthTables = []string{"partitions", "partition_lookup", "partition_consumers", "partition_ready"}

// growth is a test's queue on a new database, and the session under test (plpgsql
// caches plans per session), with autovacuum off on growthTables.
type growth struct {
	t     *testing.T
	st    *store.Store
	conn  *pgxpool.Conn
	queue string
	ids   *queue.IDGenerator
}

func newGrowth(t *testing.T, queueName string) *growth {
	t.Helper()
	st, db := openStore(t, 2)
	conn, err := db.Acquire(t.Context())
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	for _, tbl := range growthTables {
		_, err := conn.Exec(t.Context(), `ALTER TABLE queen.`+tbl+` SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
	}
	return &growth{t: t, st: st, conn: conn, queue: queueName, ids: queue.NewIDGenerator()}
}

// grow pushes one message to each partition p<from>..p<to-1> (through the store's
// sessions, not the one under test).
func (g *growth) grow(from, to int) {
	g.t.Helper()
	for from < to {
		n := min(to-from, 500)
		items := make([]queue.PushItem, n)
		for i := range items {
			items[i] = queue.PushItem{Queue: g.queue, Partition: fmt.Sprintf("p%05d", from+i),
				Payload: []byte(`{}`), TransactionID: g.ids.New(), MessageID: g.ids.New()}
		}
		_, err := g.st.MessageInsertBatch(g.t.Context(), items)
		require.NoError(g.t, err)
		from += n
	}
}

// analyze gathers statistics of growthTables, as autovacuum does early on.
func (g *growth) analyze() {
	g.t.Helper()
	for _, tbl := range growthTables {
		_, err := g.conn.Exec(g.t.Context(), `VACUUM ANALYZE queen.`+tbl)
		require.NoError(g.t, err)
	}
}

// crowd adds cursor rows of ten other groups on every partition.
func (g *growth) crowd() {
	g.t.Helper()
	_, err := g.conn.Exec(g.t.Context(), `INSERT INTO queen.partition_consumers (partition_id, consumer_group)
		SELECT p.id, 'g' || i FROM queen.partitions p, generate_series(1, 10) AS i`)
	require.NoError(g.t, err)
}

// pages is the number of pages of tables (of queen) and their indexes the session
// under test has read, as its statistics say once flushed: an index walk fetches no
// row, its pages are what it costs.
func (g *growth) pages(tables ...string) int64 {
	g.t.Helper()
	ctx := g.t.Context()
	_, err := g.conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(g.t, err)
	_, err = g.conn.Exec(ctx, `SELECT 1`)
	require.NoError(g.t, err)
	var n int64
	require.NoError(g.t, g.conn.QueryRow(ctx, `SELECT coalesce(sum(coalesce(heap_blks_hit, 0) + coalesce(heap_blks_read, 0)
			+ coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)), 0)::bigint
		FROM pg_statio_user_tables WHERE schemaname = 'queen' AND relname = ANY ($1)`, tables).Scan(&n))
	return n
}
