package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A message's partition must exist while the message does: the rule upstream's foreign
// key kept, now kept by queen's two triggers (schema 001_tables.sql).
func TestAMessageNeedsItsPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 4)
	ids := queue.NewIDGenerator()
	push := func(q, p string) {
		t.Helper()
		res, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: q, Partition: p,
			Payload: json.RawMessage(`{}`), TransactionID: ids.New(), MessageID: ids.New()}})
		require.NoError(t, err)
		require.Equal(t, queue.StatusQueued, res[0].Status)
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, admin.QueryRow(ctx, sql, args...).Scan(&n))
		return n
	}
	requireFKViolation := func(err error, what string) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", what, err)
		require.Equal(t, "23503", pgErr.Code, what)
	}

	push("mp", "a") // the general path creates the partition
	push("mp", "a") // the direct path
	push("mp", "b")
	push("mp-other", "a")
	var pidA, pidB string
	require.NoError(t, admin.QueryRow(ctx, `SELECT
		(SELECT p.id::text FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'mp' AND p.name = 'a'),
		(SELECT p.id::text FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'mp' AND p.name = 'b')`).
		Scan(&pidA, &pidB))
	require.Equal(t, 0, count(`SELECT count(*) FROM pg_constraint
		WHERE conrelid = 'queen.messages'::regclass AND confrelid = 'queen.partitions'::regclass`), "no foreign key")

	t.Run("AnInsertIntoNoPartitionIsAForeignKeyViolation", func(t *testing.T) {
		_, err := admin.Exec(ctx, `INSERT INTO queen.messages (transaction_id, partition_id, payload)
			VALUES ('orphan', gen_random_uuid(), '{}')`)
		requireFKViolation(err, "an insert naming no partition")
		_, err = admin.Exec(ctx, `UPDATE queen.messages SET partition_id = gen_random_uuid() WHERE partition_id = $1`, pidB)
		requireFKViolation(err, "a message moved to no partition")
	})

	t.Run("ADirectPushSettingSkipsOnlyItsOwnPartition", func(t *testing.T) {
		// The check is skipped for the partitions a direct push locked and named in its
		// settings, not for any other row of the same transaction.
		tx, err := admin.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SELECT set_config('queen.push_pid', $1, true), set_config('queen.push_pids', $2, true)`,
			pidA, "{"+pidB+"}")
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO queen.messages (transaction_id, partition_id, payload)
			VALUES ('orphan-2', gen_random_uuid(), '{}')`)
		requireFKViolation(err, "an insert beside a direct push's settings")
	})

	t.Run("ThePartitionsADirectPushNamesAreNotLookedUpAgain", func(t *testing.T) {
		// Named in the settings, a partition is taken as locked: not even its absence is
		// found (which is why only the lock statements, after taking the rows, name them).
		tx, err := admin.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		const gone = "00000000-0000-4000-8000-00000000dead"
		_, err = tx.Exec(ctx, `SELECT set_config('queen.push_pids', $1, true)`, "{"+gone+"}")
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO queen.messages (transaction_id, partition_id, payload) VALUES ('unchecked', $1, '{}')`, gone)
		require.NoError(t, err, "the check skipped the named partition")
	})

	t.Run("DeletingAPartitionDeletesItsMessages", func(t *testing.T) {
		require.Equal(t, 1, count(`SELECT count(*) FROM queen.messages WHERE partition_id = $1`, pidB))
		_, err := admin.Exec(ctx, `DELETE FROM queen.partitions WHERE id = $1`, pidB)
		require.NoError(t, err)
		require.Equal(t, 0, count(`SELECT count(*) FROM queen.messages WHERE partition_id = $1`, pidB))
		require.Equal(t, 2, count(`SELECT count(*) FROM queen.messages WHERE partition_id = $1`, pidA), "other partitions keep theirs")
	})

	t.Run("DeletingAQueueDeletesItsMessages", func(t *testing.T) {
		// As upstream's queue delete does: the queue row, and the cascade to its partitions.
		_, err := admin.Exec(ctx, `DELETE FROM queen.queues WHERE name = 'mp'`)
		require.NoError(t, err)
		require.Equal(t, 0, count(`SELECT count(*) FROM queen.messages WHERE partition_id = $1`, pidA))
		require.Equal(t, 1, count(`SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'mp-other'`), "another queue keeps its messages")
		ok, err := st.QueueDelete(ctx, "mp-other")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 0, count(`SELECT count(*) FROM queen.messages`))
	})
}

// No message outlives its partition while pushes (direct, and general ones that create
// partitions) race with deletes of the partitions they push to, done the bluntest way
// (a plain DELETE of the partition row, without the ordering lock queen's cleanup takes,
// as upstream's queue delete cascades): every push either stores its messages before the
// delete, which then takes them too, or finds its partition gone and makes it again.
func TestNoMessageOutlivesItsPartitionUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 12)
	ids := queue.NewIDGenerator()
	const partitions, pushers, pushesEach = 6, 4, 150
	var stored, taken, refused atomic.Int64
	var pushing sync.WaitGroup
	var wg sync.WaitGroup
	errs := make(chan error, pushers+1)
	for w := range pushers {
		pushing.Add(1)
		wg.Go(func() {
			defer pushing.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range pushesEach {
				n := 1 + r.IntN(3)
				items := make([]queue.PushItem, n)
				for i := range items {
					items[i] = queue.PushItem{Queue: "mp-race", Partition: fmt.Sprintf("p%d", r.IntN(partitions)),
						Payload: json.RawMessage(`{}`), TransactionID: ids.New(), MessageID: ids.New()}
				}
				res, err := st.MessageInsertBatch(ctx, items)
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && (pgErr.Code == "23503" || pgErr.Code == "40001" || pgErr.Code == "40P01") {
					// Lost the race with a delete on every attempt (the partition went
					// between its resolution and its lock, or while it was being made):
					// refused, nothing stored.
					refused.Add(1)
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("push: %w", err)
					return
				}
				stored.Add(int64(len(res)))
			}
		})
	}
	done := make(chan struct{})
	go func() { pushing.Wait(); close(done) }()
	wg.Go(func() {
		r := rand.New(rand.NewPCG(99, 7))
		for {
			select {
			case <-done:
				return
			default:
			}
			// The messages the partition holds as the delete takes it (read before the
			// statement's triggers run).
			rows, err := admin.Query(ctx, `DELETE FROM queen.partitions p USING queen.queues q
				WHERE q.id = p.queue_id AND q.name = 'mp-race' AND p.name = $1
				RETURNING (SELECT count(*) FROM queen.messages m WHERE m.partition_id = p.id)`,
				fmt.Sprintf("p%d", r.IntN(partitions)))
			if err == nil {
				for rows.Next() {
					var n int64
					if err = rows.Scan(&n); err != nil {
						break
					}
					taken.Add(n)
				}
				rows.Close()
				err = rows.Err()
			}
			if err != nil {
				errs <- fmt.Errorf("delete: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, stored.Load())
	var orphans, kept int
	require.NoError(t, admin.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM queen.messages m WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.id = m.partition_id)),
		(SELECT count(*) FROM queen.messages)`).Scan(&orphans, &kept))
	require.Zero(t, orphans, "messages whose partition is gone (%d kept of %d stored; %d pushes refused; %d taken by deletes)",
		kept, stored.Load(), refused.Load(), taken.Load())
	// The partitions left, deleted at last, take every message left with them.
	_, err := admin.Exec(ctx, `DELETE FROM queen.partitions p USING queen.queues q
		WHERE q.id = p.queue_id AND q.name = 'mp-race'`)
	require.NoError(t, err)
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM queen.messages`).Scan(&kept))
	require.Zero(t, kept)
	d, g := st.PushPaths()
	require.Positive(t, d, "the direct path ran")
	require.Positive(t, g, "the general path ran")
}

// A general push (queen.push_q3) that resolved an existing partition and then lost it to
// a delete before its insert (the delete takes no ordering lock, as upstream's queue
// delete does not) must not store messages into the deleted partition: its insert is
// refused (23503), and the push's next attempt makes the partition again.
func TestAGeneralPushThatLostItsPartitionStoresNoOrphan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, admin := openStore(t, 4)
	ids := queue.NewIDGenerator()
	item := func(p string) queue.PushItem {
		return queue.PushItem{Queue: "mp-lost", Partition: p, Payload: json.RawMessage(`{}`),
			TransactionID: ids.New(), MessageID: ids.New()}
	}
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{item("x")})
	require.NoError(t, err)
	var pid string
	require.NoError(t, admin.QueryRow(ctx, `SELECT p.id::text FROM queen.partitions p
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'mp-lost' AND p.name = 'x'`).Scan(&pid))

	// Hold x's ordering lock: the push below (x and a new partition, so queen.push_q3)
	// resolves x and waits for the lock before its insert.
	holder, err := admin.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(queen.partition_order_key($1::uuid))`, pid)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := st.MessageInsertBatch(ctx, []queue.PushItem{item("x"), item("new")})
		done <- err
	}()
	waitForLock(t, admin, `query LIKE '%push_q3%'`)
	_, err = admin.Exec(ctx, `DELETE FROM queen.partitions WHERE id = $1`, pid)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(queen.partition_order_key($1::uuid))`, pid)
	require.NoError(t, err)
	require.NoError(t, <-done, "the push's next attempt makes x again")

	var orphans, inX int
	require.NoError(t, admin.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM queen.messages m WHERE NOT EXISTS (SELECT 1 FROM queen.partitions p WHERE p.id = m.partition_id)),
		(SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
		   JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'mp-lost' AND p.name = 'x')`).Scan(&orphans, &inX))
	require.Zero(t, orphans, "messages stored into the deleted partition")
	require.Equal(t, 1, inX, "the push's message is in the new x")
}

// A general push (queen.push_q3) takes its partitions' rows in key-share mode once each
// and names them in its transaction, so that its messages skip the per-row partition
// check: the rows stay held (a delete waits for the push's commit), and the check's
// function runs for no message.
func TestAGeneralPushChecksEachPartitionOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, admin := openStore(t, 4)
	const push = `SELECT count(*) FROM queen.push_q3(
		ARRAY['mp-once', 'mp-once'], ARRAY['a', 'b'], ARRAY[1, 2, 1], ARRAY[$1 || '1', $1 || '2', $1 || '3'],
		ARRAY[gen_random_uuid()::text, gen_random_uuid()::text, gen_random_uuid()::text], '[{}, {}, {}]',
		NULL, NULL, NULL, NULL, NULL)`
	var stored int
	require.NoError(t, admin.QueryRow(ctx, push, "first").Scan(&stored), "the push that creates the partitions")
	require.Equal(t, 3, stored)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'all'`)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, push, "second").Scan(&stored))
	require.Equal(t, 3, stored)

	var checks int
	require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
		WHERE schemaname = 'queen' AND funcname = 'message_partition_check_q1'`).Scan(&checks))
	require.Zero(t, checks, "messages checked one by one")
	var named, pids []string
	require.NoError(t, tx.QueryRow(ctx, `SELECT current_setting('queen.push_pids')::uuid[]::text[],
		(SELECT array_agg(p.id::text ORDER BY p.id) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		 WHERE q.name = 'mp-once')`).Scan(&named, &pids))
	require.Len(t, pids, 2)
	require.ElementsMatch(t, pids, named, "the push names its two partitions")

	// The named rows are held until the push commits.
	other, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = other.Rollback(ctx) }()
	_, err = other.Exec(ctx, `SET LOCAL lock_timeout = '50ms'`)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `DELETE FROM queen.partitions WHERE id = $1`, pids[0])
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "a delete of a named partition: %v", err)
	require.Equal(t, "55P03", pgErr.Code, "the delete waits for the push")
}
