package store_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A consumer group's seek on a queue writes its cursor on every partition with
// messages and settles its ready rows, keyed by partition. Planned while the queue had
// a few partitions, the settling walked whole indexes for each partition: a seek of a
// queue grown to 5 000 partitions ran into the 30 s statement timeout. This test seeks
// on three partitions (analyzed or never), grows the queue to 3 000 partitions with
// cursor rows of ten other groups, seeks again in the same session and counts the
// pages of the tables it reads by partition.
func TestSeekReadsEachPartitionByKey(t *testing.T) {
	t.Parallel()
	for _, analyze := range []bool{true, false} {
		t.Run(fmt.Sprintf("analyzed %v", analyze), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, db := openStore(t, 2)
			conn, err := db.Acquire(ctx)
			require.NoError(t, err)
			defer conn.Release()
			hot := []string{"partitions", "partition_lookup", "partition_consumers", "partition_ready"}
			for _, tbl := range hot {
				_, err := conn.Exec(ctx, `ALTER TABLE queen.`+tbl+` SET (autovacuum_enabled = false)`)
				require.NoError(t, err)
			}
			ids := queue.NewIDGenerator()
			grow := func(from, to int) {
				t.Helper()
				for from < to {
					n := min(to-from, 500)
					items := make([]queue.PushItem, n)
					for i := range items {
						items[i] = queue.PushItem{Queue: "sought", Partition: fmt.Sprintf("p%05d", from+i),
							Payload: []byte(`{}`), TransactionID: ids.New(), MessageID: ids.New()}
					}
					_, err := st.MessageInsertBatch(ctx, items)
					require.NoError(t, err)
					from += n
				}
			}
			// The group pops without naming a partition (it has ready rows), then seeks
			// back to the beginning and to the end, in the session under test.
			seek := func(toEnd bool) {
				t.Helper()
				var n int
				require.NoError(t, conn.QueryRow(ctx, `SELECT queen.consumer_group_seek_q1('seeker', 'sought', $1, '1970-01-01')`,
					toEnd).Scan(&n))
				require.Positive(t, n)
			}
			grow(0, 3)
			_, err = conn.Exec(ctx, `SELECT count(*) FROM queen.pop_q3('sought', NULL, 'seeker', 'lease', 1, 1, true, NULL, NULL, 30, 0)`)
			require.NoError(t, err)
			for i := range 8 {
				if i == 2 && analyze {
					for _, tbl := range hot {
						_, err := conn.Exec(ctx, `VACUUM ANALYZE queen.`+tbl)
						require.NoError(t, err)
					}
				}
				seek(i%2 == 0)
			}
			const parts = 3000
			grow(3, parts)
			_, err = conn.Exec(ctx, `INSERT INTO queen.partition_consumers (partition_id, consumer_group)
				SELECT p.id, g FROM queen.partitions p, generate_series(1, 10) AS i, LATERAL (SELECT 'g' || i AS g) x`)
			require.NoError(t, err)

			for _, toEnd := range []bool{false, true} {
				before := sessionPages(t, conn.Conn(), hot...)
				seek(toEnd)
				read := sessionPages(t, conn.Conn(), hot...) - before
				t.Logf("to end %v: pages %d", toEnd, read)
				require.Less(t, read, int64(60*parts), "to end %v: pages of the partition tables and their indexes read", toEnd)
			}
		})
	}
}
