package schema_test

import (
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/schema"
)

var bigTableRows = flag.Int("queen.bigtable-rows", 1_000_000,
	"rows of queen.messages in TestABootOnABigTableKeepsPushesFlowing")

// TestABootOnABigTableKeepsPushesFlowing adopts an upstream database whose messages
// table is big while a producer pushes in a loop: neither the boot's DDL nor the
// concurrent build of queen's lookup index over the whole table may hold up a push for
// a second. The boot's DDL locks the tables until it commits, so a push can wait for
// the whole boot: on a host slow enough (the race detector, a busy machine) for the
// boot of an empty database to take half a second, the bound is twice that boot,
// measured here beside it; what must never happen is a boot that grows with the table.
func TestABootOnABigTableKeepsPushesFlowing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	began := time.Now()
	require.NoError(t, schema.Apply(ctx, connect(t, upstreamDB(t))))
	emptyBoot := time.Since(began)
	url := upstreamDB(t)
	conn := connect(t, url)
	start := time.Now()
	// Foreign-key triggers off for the fill only (one INSERT ... SELECT).
	exec(t, conn, `SET session_replication_role = replica`)
	exec(t, conn, `INSERT INTO queen.messages (id, transaction_id, partition_id, payload, created_at)
		SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'big-' || g,
		       'b0000000-0000-4000-8000-000000000001', '{"n":1}', now() - interval '3 hours' + g * interval '1 ms'
		FROM generate_series(1, $1::int) g`, *bigTableRows)
	exec(t, conn, `RESET session_replication_role`)
	exec(t, conn, `ANALYZE queen.messages`)
	t.Logf("filled %d rows in %s", *bigTableRows, time.Since(start).Round(time.Millisecond))

	// The producer: upstream's kind of push (an insert into messages through the
	// queue and partition by name) until queen's push function exists, then queen's.
	producer := connect(t, url)
	var queensPush atomic.Bool
	var longest [2]time.Duration
	var pushes [2]int
	first := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pushErr error
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			phase := 0
			sql := `INSERT INTO queen.messages (transaction_id, partition_id, payload)
				SELECT $1, p.id, '{}' FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
				WHERE q.name = 'legacy.orders' AND p.name = 'p2'
				ON CONFLICT (partition_id, transaction_id) DO NOTHING`
			if queensPush.Load() {
				phase = 1
				sql = `SELECT count(*) FROM queen.push_q2('{legacy.orders}', '{p2}', '{1}', ARRAY[$1::text],
					ARRAY[gen_random_uuid()::text], '[{}]', NULL, NULL, NULL)`
			}
			began := time.Now()
			if _, err := producer.Exec(ctx, sql, fmt.Sprintf("push-%d", i)); err != nil {
				pushErr = err
				return
			}
			longest[phase] = max(longest[phase], time.Since(began))
			pushes[phase]++
			if i == 0 {
				close(first)
			}
		}
	})
	<-first

	began = time.Now()
	require.NoError(t, schema.Apply(ctx, conn))
	applied := time.Since(began)
	queensPush.Store(true)
	began = time.Now()
	actions, err := builder(t, url).Run(ctx)
	built := time.Since(began)
	close(stop)
	wg.Wait()
	require.NoError(t, pushErr)
	require.NoError(t, err)
	require.Equal(t, []string{"built idx_messages_partition_transaction_c"}, summary(actions))
	t.Logf("boot %s (%d pushes during it, longest %s; an empty database's %s); index build %s (%d pushes, longest %s)",
		applied.Round(time.Millisecond), pushes[0], longest[0].Round(time.Millisecond), emptyBoot.Round(time.Millisecond),
		built.Round(time.Millisecond), pushes[1], longest[1].Round(time.Millisecond))
	require.Positive(t, pushes[1], "pushes ran during the build")
	require.Less(t, longest[0], max(time.Second, 2*emptyBoot), "longest push during the boot")
	require.Less(t, longest[1], time.Second, "longest push during the concurrent index build")
	_, valid := indexValid(t, conn, "idx_messages_partition_transaction_c")
	require.True(t, valid)
}
