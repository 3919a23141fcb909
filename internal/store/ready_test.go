package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// A wildcard pop finds its partitions through queen.partition_ready. The rows may
// over-report (a pop deletes a row it finds nothing behind) but never under-report:
// every partition with a message a registered group has yet to receive has a row whose
// ready_at is no later than the end of the partition's lease or retry delay. This test
// plays random histories of pushes, wildcard and named pops (with and without
// auto-ack), ack batches of every status, lease extensions, seeks and subscription
// moves, checks that invariant after every step, and at the end drains every group
// with wildcard pops only and requires every group's cursor at every partition's head.
func TestReadyRowsNeverMissPendingWork(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	for seed := range uint64(25) {
		runReadyHistory(t, ctx, st, db, seed)
	}
}

func runReadyHistory(t *testing.T, ctx context.Context, st *store.Store, db *pgxpool.Pool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	q := fmt.Sprintf("ready-%d", seed)
	nParts := 1 + rng.IntN(5)
	groups := []string{queue.QueueModeGroup, "g1", "g2"}
	ids := queue.NewIDGenerator()
	type lease struct {
		group, id string
		msgs      []queue.Message
	}
	var open []lease
	next := 0
	push := func(p, n int) {
		items := make([]queue.PushItem, n)
		for i := range items {
			items[i] = queue.PushItem{Queue: q, Partition: fmt.Sprintf("p%d", p),
				TransactionID: fmt.Sprintf("m%d", next), MessageID: ids.New(), Payload: benchPayload}
			next++
		}
		_, err := st.MessageInsertBatch(ctx, items)
		require.NoError(t, err)
	}
	for p := range nParts {
		push(p, 1+rng.IntN(4))
	}
	for step := range 60 {
		g := groups[rng.IntN(len(groups))]
		var what string
		switch r := rng.IntN(20); {
		case r < 5:
			p, n := rng.IntN(nParts), 1+rng.IntN(4)
			what = fmt.Sprintf("push %d to p%d", n, p)
			push(p, n)
		case r < 10 || r == 19:
			req := queue.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1 + rng.IntN(5), Partitions: 1 + rng.IntN(2),
				AutoAck: rng.IntN(5) == 0}
			if g == "g2" && rng.IntN(2) == 0 {
				req.SubscriptionMode = "new"
			}
			if r == 19 {
				req.Partition = fmt.Sprintf("p%d", rng.IntN(nParts))
			}
			id := fmt.Sprintf("L%d-%d", seed, step)
			msgs, err := st.PartitionClaim(ctx, req, id)
			require.NoError(t, err)
			what = fmt.Sprintf("pop %+v: %d messages", req, len(msgs))
			if len(msgs) > 0 && !req.AutoAck {
				open = append(open, lease{group: g, id: id, msgs: msgs})
			}
		case r < 16 && len(open) > 0:
			i := rng.IntN(len(open))
			l := open[i]
			open = append(open[:i], open[i+1:]...)
			n := 1 + rng.IntN(len(l.msgs))
			status := []string{queue.AckCompleted, queue.AckCompleted, queue.AckCompleted, queue.AckFailed, "retry", "dlq"}[rng.IntN(6)]
			acks := make([]queue.Ack, n)
			for k, m := range l.msgs[:n] {
				acks[k] = queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: l.id,
					Status: status, ConsumerGroup: l.group, Error: "boom"}
			}
			_, err := st.MessageAckBatch(ctx, l.group, acks)
			require.NoError(t, err)
			what = fmt.Sprintf("ack %d of lease %s as %s", n, l.id, status)
		case r == 16 && len(open) > 0:
			l := open[rng.IntN(len(open))]
			_, err := st.LeaseExtend(ctx, l.id, 120)
			require.NoError(t, err)
			what = "extend " + l.id
		case r == 17:
			seek := queue.ConsumerGroupSeek{ToEnd: rng.IntN(2) == 0, Timestamp: time.Now().Add(-time.Hour)}
			_, err := st.ConsumerGroupSeek(ctx, g, q, seek)
			require.NoError(t, err)
			what = fmt.Sprintf("seek %s %+v", g, seek)
			open = dropLeasesOf(open, g, func(l lease) string { return l.group })
		case r == 18 && g != queue.QueueModeGroup:
			_, err := st.ConsumerGroupSubscriptionUpdate(ctx, queue.Scope{}, g, time.Now().Add(-time.Hour))
			require.NoError(t, err)
			what = "move the subscriptions of " + g + " an hour back"
		default:
			continue
		}
		missing := readyMisses(t, ctx, db, q)
		require.Empty(t, missing, "seed %d step %d (%s): pending partitions without a ready row", seed, step, what)
	}

	// Every group, popping without naming a partition, reaches every head.
	for _, g := range groups {
		deadline := time.Now().Add(30 * time.Second)
		for {
			msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: q, ConsumerGroup: g, Batch: 50, Partitions: 1,
				AutoAck: true}, fmt.Sprintf("drain-%d", seed))
			require.NoError(t, err)
			if len(msgs) == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "seed %d: %s does not drain", seed, g)
		}
	}
	var behind []string
	require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(array_agg(c.consumer_group || '@' || p.name), '{}')
		FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		JOIN queen.partition_lookup pl ON pl.partition_id = p.id
		JOIN queen.partition_consumers c ON c.partition_id = p.id
		WHERE q.name = $1 AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= now())
		  AND (c.last_consumed_created_at IS NULL
		       OR (pl.last_message_created_at, pl.last_message_id) > (c.last_consumed_created_at, c.last_consumed_id))`,
		q).Scan(&behind))
	require.Empty(t, behind, "seed %d: cursors short of their partition's head after draining", seed)
}

func dropLeasesOf[T any](ls []T, group string, groupOf func(T) string) []T {
	out := ls[:0]
	for _, l := range ls {
		if groupOf(l) != group {
			out = append(out, l)
		}
	}
	return out
}

// readyMisses lists (group, partition) pairs of queueName with pending work for a
// registered group and no ready row, or one parked past the partition's lease.
// Pending: a message after the cursor; without a cursor, at or after the group's
// queue-wide subscription start (the beginning when there is none).
func readyMisses(t *testing.T, ctx context.Context, db *pgxpool.Pool, queueName string) []string {
	t.Helper()
	var out []string
	require.NoError(t, db.QueryRow(ctx, `
SELECT coalesce(array_agg(c.consumer_group || '@' || p.name || ' ready_at=' || coalesce(r.ready_at::text, 'none')), '{}')
FROM queen.queues q
JOIN queen.queue_consumers c ON c.queue_id = q.id
JOIN queen.partitions p ON p.queue_id = q.id
JOIN queen.partition_lookup pl ON pl.partition_id = p.id
LEFT JOIN queen.partition_consumers pc ON pc.partition_id = p.id AND pc.consumer_group = c.consumer_group
LEFT JOIN queen.partition_ready r ON r.partition_id = p.id AND r.consumer_group = c.consumer_group
LEFT JOIN queen.consumer_groups_metadata md
       ON md.consumer_group = c.consumer_group AND md.queue_name = q.name AND md.partition_name = ''
WHERE q.name = $1
  AND CASE WHEN pc.last_consumed_created_at IS NOT NULL
           THEN (pl.last_message_created_at, pl.last_message_id) > (pc.last_consumed_created_at, pc.last_consumed_id)
           ELSE EXISTS (SELECT 1 FROM queen.messages m WHERE m.partition_id = p.id
                        AND (md.subscription_timestamp IS NULL OR m.created_at >= md.subscription_timestamp)) END
  AND (r.partition_id IS NULL OR r.ready_at > greatest(now(), coalesce(pc.lease_expires_at, now())))`,
		queueName).Scan(&out))
	return out
}

// Pushes and wildcard pops racing on the same partitions: every pushed message is
// delivered. The race this guards is an ack that finds its cursor at the partition's
// head and deletes the ready row while a push into that partition commits.
func TestReadyRowsSurviveRacingPushesAndAcks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, _ := openStore(t, 12)
	const (
		partitions = 8
		producers  = 3
		consumers  = 3
		perProd    = 300
	)
	q := "ready-race"
	ids := queue.NewIDGenerator()
	var wg sync.WaitGroup
	var pushed atomic.Int64
	errs := make(chan error, producers+consumers)
	for w := range producers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for i := 0; i < perProd; {
				n := min(1+rng.IntN(3), perProd-i)
				items := make([]queue.PushItem, n)
				p := rng.IntN(partitions)
				for k := range items {
					items[k] = queue.PushItem{Queue: q, Partition: fmt.Sprintf("p%d", p),
						TransactionID: fmt.Sprintf("w%d-%d", w, i+k), MessageID: ids.New(), Payload: benchPayload}
				}
				if _, err := st.MessageInsertBatch(ctx, items); err != nil {
					errs <- err
					return
				}
				i += n
				pushed.Add(int64(n))
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	for w := range consumers {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				lease := fmt.Sprintf("c%d-%d", w, k)
				msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: q, ConsumerGroup: queue.QueueModeGroup,
					Batch: 4, Partitions: 1}, lease)
				if err != nil {
					errs <- err
					return
				}
				if len(msgs) == 0 {
					continue
				}
				acks := make([]queue.Ack, len(msgs))
				mu.Lock()
				for i, m := range msgs {
					seen[m.TransactionID] = true
					acks[i] = queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease,
						Status: queue.AckCompleted}
				}
				mu.Unlock()
				res, err := st.MessageAckBatch(ctx, queue.QueueModeGroup, acks)
				if err != nil {
					errs <- err
					return
				}
				for _, a := range res {
					if !a.Success {
						errs <- fmt.Errorf("ack refused: %+v", a)
						return
					}
				}
			}
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == producers*perProd {
			break
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			close(done)
			wg.Wait()
			t.Fatalf("delivered %d of %d messages (%d pushed) within a minute", n, producers*perProd, pushed.Load())
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A registration a group stopped using is dropped after an hour, with its ready rows;
// the group's next pop registers it again and finds its messages.
func TestReadyRegistrationsOfGoneGroupsExpire(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	push := func(tx string) {
		_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: "expire", Partition: "p",
			TransactionID: tx, MessageID: ids.New(), Payload: benchPayload}})
		require.NoError(t, err)
	}
	push("a")
	pop := func() []queue.Message {
		msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "expire", ConsumerGroup: "gone", Batch: 10,
			Partitions: 1, AutoAck: true}, "L")
		require.NoError(t, err)
		return msgs
	}
	require.Len(t, pop(), 1)
	push("b")
	count := func(table string) int {
		var n int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM queen.`+table+` WHERE consumer_group = 'gone'`).Scan(&n))
		return n
	}
	require.Equal(t, 1, count("partition_ready"))

	n, err := st.ConsumerStateCleanupBatch(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n, "a registration used a moment ago stays")
	_, err = db.Exec(ctx, `UPDATE queen.queue_consumers SET seen_at = now() - interval '61 minutes'`)
	require.NoError(t, err)
	n, err = st.ConsumerStateCleanupBatch(ctx, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Zero(t, count("queue_consumers"))
	require.Zero(t, count("partition_ready"))

	require.Len(t, pop(), 1, "registered again, the group finds the message pushed meanwhile")
	require.Equal(t, 1, count("queue_consumers"))
}

// A broker that keeps no ready rows (an older queen during a rolling upgrade, or after
// a rollback) can leave a partition with messages and no row, or with a row parked at
// a lease it released: the lookup reconcile repairs both.
func TestLookupReconcileRepairsReadyRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	for _, p := range []string{"a", "b"} {
		_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: "repair", Partition: p,
			TransactionID: "m-" + p, MessageID: ids.New(), Payload: benchPayload}})
		require.NoError(t, err)
	}
	pop := func() []queue.Message {
		msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "repair", ConsumerGroup: queue.QueueModeGroup,
			Batch: 10, Partitions: 2}, "L")
		require.NoError(t, err)
		return msgs
	}
	require.Len(t, pop(), 2, "registered, both partitions served")
	// What an older broker leaves: its ack released the leases without touching the
	// rows (parked at the lease), and its push into c added no row.
	_, err := db.Exec(ctx, `UPDATE queen.partition_consumers SET lease_expires_at = NULL, worker_id = NULL`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `INSERT INTO queen.messages (transaction_id, partition_id, payload)
		SELECT 'm-c', p.id, '{}' FROM queen.partitions p WHERE p.name = 'a'`)
	require.NoError(t, err)
	require.Empty(t, pop(), "rows parked at the released leases")

	rec, err := st.LookupReconcileBatch(ctx, true, "", 100, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.GreaterOrEqual(t, rec.Repaired, 2, "the lookup row of a, and the two parked rows")
	require.Len(t, pop(), 3, "m-a and m-b again (their leases ended unacked), and m-c")
}

// A partition an older broker (or the original, before adoption) wrote without its
// lookup row gets a ready row from the repair for a group subscribed on the queue, when
// it holds messages after the subscription: the group's wildcard pops then find it.
func TestLookupReconcileSeedsSubscribedGroups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: "subrepair", Partition: "a",
		TransactionID: "m-a", MessageID: ids.New(), Payload: benchPayload}})
	require.NoError(t, err)
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	pop := func() []string {
		msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "subrepair", ConsumerGroup: "g", Batch: 10,
			Partitions: 3, AutoAck: true, SubscriptionFrom: from}, ids.New())
		require.NoError(t, err)
		var out []string
		for _, m := range msgs {
			out = append(out, m.TransactionID)
		}
		return out
	}
	require.Equal(t, []string{"m-a"}, pop(), "registered, subscribed an hour ago")
	// Written as the original broker writes: partition and message rows, no lookup and
	// no ready rows. b's message comes after the subscription, c's before it.
	for _, p := range []struct{ name, age string }{{"b", "1 minute"}, {"c", "2 hours"}} {
		_, err := db.Exec(ctx, `WITH p AS (INSERT INTO queen.partitions (queue_id, name)
				SELECT id, $1 FROM queen.queues WHERE name = 'subrepair' RETURNING id)
			INSERT INTO queen.messages (transaction_id, partition_id, payload, created_at)
			SELECT 'm-' || $1, p.id, '{}', now() - $2::interval FROM p`, p.name, p.age)
		require.NoError(t, err)
	}
	require.Empty(t, pop(), "no lookup row, no ready row: the wildcard pop cannot see b")

	_, err = st.LookupReconcileBatch(ctx, true, "", 100, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	var ready []string
	require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(array_agg(p.name ORDER BY p.name), '{}') FROM queen.partition_ready r
		JOIN queen.partitions p ON p.id = r.partition_id WHERE r.consumer_group = 'g'`).Scan(&ready))
	require.Equal(t, []string{"b"}, ready, "c holds nothing after the subscription")
	require.Equal(t, []string{"m-b"}, pop())
}

// A seek writes the group's cursor on every partition of the queue in one transaction:
// at thousands of partitions that must not need a lock-table entry per partition
// (the lock table holds max_locks_per_transaction × max_connections entries: 19 200 on
// the test cluster), and the ready rows follow.
func TestSeekOfAQueueWithManyPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	const partitions = 25_000
	ids := queue.NewIDGenerator()
	began := time.Now()
	for off := 0; off < partitions; off += 1000 {
		items := make([]queue.PushItem, 1000)
		for i := range items {
			items[i] = queue.PushItem{Queue: "wide", Partition: fmt.Sprintf("p%d", off+i),
				TransactionID: fmt.Sprintf("m%d", off+i), MessageID: ids.New(), Payload: benchPayload}
		}
		_, err := st.MessageInsertBatch(ctx, items)
		require.NoError(t, err)
	}
	t.Logf("filled %s", time.Since(began))
	msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "wide", ConsumerGroup: "g", Batch: 1, Partitions: 1,
		AutoAck: true}, "L")
	t.Logf("registered %s", time.Since(began))
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	ready := func() int {
		var n int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM queen.partition_ready WHERE consumer_group = 'g'`).Scan(&n))
		return n
	}
	require.Equal(t, partitions-1, ready())

	n, err := st.ConsumerGroupSeek(ctx, "g", "wide", queue.ConsumerGroupSeek{ToEnd: true})
	require.NoError(t, err)
	require.Equal(t, partitions, n)
	t.Logf("seeked to the end %s", time.Since(began))
	require.Zero(t, ready(), "every cursor at its head: no partition has work")
	msgs, err = st.PartitionClaim(ctx, queue.PopRequest{Queue: "wide", ConsumerGroup: "g", Batch: 1, Partitions: 1}, "L2")
	require.NoError(t, err)
	require.Empty(t, msgs)

	n, err = st.ConsumerGroupSeek(ctx, "g", "wide", queue.ConsumerGroupSeek{Timestamp: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Equal(t, partitions, n)
	require.Equal(t, partitions, ready(), "back to the beginning: every partition has work again")
}

// The repair of ready rows parked past their lease runs in a transaction that may have
// begun before an ack that committed before the repair looked: the row that ack made
// claimable (ready at the ack's start, later than the repair's now()) is not parked, and
// the repair must neither rewrite nor lock it, or a pop meanwhile skips it and answers
// empty.
func TestLookupReconcileLeavesARowAnAckFreedAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := openStore(t, 4)
	ids := queue.NewIDGenerator()
	for _, tx := range []string{"m1", "m2"} {
		_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: "freed", Partition: "a",
			TransactionID: tx, MessageID: ids.New(), Payload: benchPayload}})
		require.NoError(t, err)
	}
	claim := func(lease string) []queue.Message {
		msgs, err := st.PartitionClaim(ctx, queue.PopRequest{Queue: "freed", ConsumerGroup: queue.QueueModeGroup, Batch: 1}, lease)
		require.NoError(t, err)
		return msgs
	}
	held := claim("L1")
	require.Len(t, held, 1)

	repair, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = repair.Rollback(context.WithoutCancel(ctx)) }()
	var began time.Time
	require.NoError(t, repair.QueryRow(ctx, `SELECT now()`).Scan(&began))
	res, err := st.MessageAckBatch(ctx, queue.QueueModeGroup, []queue.Ack{{TransactionID: "m1",
		PartitionID: held[0].PartitionID, LeaseID: "L1", Status: queue.AckCompleted}})
	require.NoError(t, err)
	require.True(t, res[0].Success)
	var later bool
	require.NoError(t, db.QueryRow(ctx, `SELECT bool_and(ready_at > $1) FROM queen.partition_ready WHERE partition_id = $2`,
		began, held[0].PartitionID).Scan(&later))
	require.True(t, later, "the ack's ready row is later than the repair's now(): the case of this test")

	var repaired int
	require.NoError(t, repair.QueryRow(ctx, `SELECT o_repaired FROM queen.lookup_reconcile_q1(true, NULL, 100, now() - interval '1 minute')`).
		Scan(&repaired))
	require.Zero(t, repaired, "nothing was parked")
	got := claim("L2")
	require.Len(t, got, 1, "a pop while the repair's transaction is open")
	require.Equal(t, "m2", got[0].TransactionID)
	require.NoError(t, repair.Commit(ctx))
}
