package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
)

// The raw cycles are ceilings, but they must still do the work they claim to do:
// deliver every message once, in order, and leave the cursors where an ack would.
func TestRawCycles(t *testing.T) {
	t.Parallel()

	const (
		queueName  = "bench-raw"
		partitions = 3
		messages   = 25 // 9, 8 and 8 per partition
	)
	type testBundle struct {
		db   *database
		pids []string
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		d := &database{pool: pgtest.NewDB(t)}
		pids, err := d.rawQueue(t.Context(), queueName, partitions)
		require.NoError(t, err)
		require.NoError(t, d.rawFill(t.Context(), queueName, pids, messages, `{"a":1}`, []string{queue.QueueModeGroup}))
		return &testBundle{db: d, pids: pids}
	}
	// cursors returns, per partition, whether its cursor sits on its newest message,
	// whether a lease is left, and the messages counted as consumed.
	type cursor struct {
		AtHead   bool
		Leased   bool
		Consumed int64
	}
	cursors := func(t *testing.T, b *testBundle) []cursor {
		t.Helper()
		var out []cursor
		for _, pid := range b.pids {
			var c cursor
			require.NoError(t, b.db.pool.QueryRow(t.Context(), `
				SELECT (pc.last_consumed_created_at, pc.last_consumed_id) = (pl.last_message_created_at, pl.last_message_id),
				       pc.lease_expires_at IS NOT NULL OR pc.worker_id IS NOT NULL, pc.total_messages_consumed
				FROM queen.partition_consumers pc JOIN queen.partition_lookup pl ON pl.partition_id = pc.partition_id
				WHERE pc.partition_id = $1::uuid AND pc.consumer_group = $2`, pid, queue.QueueModeGroup).
				Scan(&c.AtHead, &c.Leased, &c.Consumed))
			out = append(out, c)
		}
		return out
	}
	// drain runs fn until it finds nothing partitions times in a row (a cycle that
	// finds a drained partition drops its ready row and reads nothing).
	drain := func(t *testing.T, fn op) (delivered, cycles int) {
		t.Helper()
		empty := 0
		for range 100 {
			n, err := fn(t.Context(), 0)
			require.NoError(t, err)
			if n == 0 {
				if empty++; empty == partitions {
					return delivered, cycles
				}
				continue
			}
			empty = 0
			delivered += n
			cycles++
		}
		t.Fatal("the cycle never ran out of messages")
		return 0, 0
	}

	t.Run("TwoCommitCycleDeliversEverythingAndClearsTheLeases", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		delivered, cycles := drain(t, b.db.rawTwoCommitOp(queueName, []string{queue.QueueModeGroup}, 10))
		require.Equal(t, messages, delivered)
		require.Equal(t, partitions, cycles, "one batch of 10 per partition")
		require.Equal(t, []cursor{{true, false, 9}, {true, false, 8}, {true, false, 8}}, cursors(t, b))
	})
	t.Run("OneStatementCycleDeliversEverything", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		delivered, _ := drain(t, b.db.rawClaim1Op(queueName, []string{queue.QueueModeGroup}, 4))
		require.Equal(t, messages, delivered)
		for _, c := range cursors(t, b) {
			require.True(t, c.AtHead)
			require.False(t, c.Leased)
		}
	})
	t.Run("ALeasedPartitionIsNotClaimedAgainUntilAdvanced", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		first, err := b.db.rawClaimLease(ctx, queueName, queue.QueueModeGroup, 5, "A")
		require.NoError(t, err)
		require.Equal(t, 5, first.n)
		// Committed with a lease: the other two partitions, then nothing.
		seen := map[string]bool{first.cursor: true}
		for _, lease := range []string{"B", "C"} {
			r, err := b.db.rawClaimLease(ctx, queueName, queue.QueueModeGroup, 5, lease)
			require.NoError(t, err)
			require.NotEmpty(t, r.cursor)
			require.False(t, seen[r.cursor], "partition claimed twice while leased")
			seen[r.cursor] = true
		}
		none, err := b.db.rawClaimLease(ctx, queueName, queue.QueueModeGroup, 5, "D")
		require.NoError(t, err)
		require.Empty(t, none.cursor, "every partition is leased")

		// An advance by a worker that does not hold the lease changes nothing.
		tag, err := b.db.pool.Exec(ctx, sqlRawAdvance, first.cursor, first.lastAt, first.lastID, first.n, "B")
		require.NoError(t, err)
		require.Zero(t, tag.RowsAffected())
		// The holder's advance frees the partition: its next messages come after the first 5.
		_, err = b.db.pool.Exec(ctx, sqlRawAdvance, first.cursor, first.lastAt, first.lastID, first.n, "A")
		require.NoError(t, err)
		again, err := b.db.rawClaimLease(ctx, queueName, queue.QueueModeGroup, 5, "A")
		require.NoError(t, err)
		require.Equal(t, first.cursor, again.cursor)
		require.Positive(t, again.n)
		var after bool
		require.NoError(t, b.db.pool.QueryRow(ctx, `SELECT ($1::timestamptz, $2::uuid) > ($3::timestamptz, $4::uuid)`,
			again.lastAt, again.lastID, first.lastAt, first.lastID).Scan(&after))
		require.True(t, after, "the second batch follows the first")
	})
	t.Run("ConcurrentWorkersDeliverEachMessageOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fn := b.db.rawTwoCommitOp(queueName, []string{queue.QueueModeGroup}, 2)
		// A cycle that reads nothing proves little on its own: the partitions it saw
		// may be leased by a worker still running, or drained and about to lose their
		// ready row. Each worker cycles until the group has no ready row left (every
		// partition drained and released), or the deadline says a message is stuck.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		pending := func() (bool, error) {
			var left bool
			err := b.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queen.partition_ready WHERE consumer_group = $1)`,
				queue.QueueModeGroup).Scan(&left)
			return left, err
		}
		var (
			delivered atomic.Int64
			wg        sync.WaitGroup
			errs      = make([]error, 3)
		)
		for w := range 3 {
			wg.Go(func() {
				for {
					n, err := fn(ctx, w)
					if err == nil && n == 0 {
						var left bool
						if left, err = pending(); err == nil && !left {
							return
						}
					}
					if err != nil {
						errs[w] = err
						return
					}
					delivered.Add(int64(n))
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, messages, delivered.Load(), "every message delivered once")
		require.Equal(t, []cursor{{true, false, 9}, {true, false, 8}, {true, false, 8}}, cursors(t, b))
	})
}
