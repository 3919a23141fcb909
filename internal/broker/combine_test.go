package broker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// combineBundle is a broker with one push statement at a time (a push waits for it up
// to hold + 20 ms), and a pool of its own on the same database that can stall the
// broker's statements.
type combineBundle struct {
	testBundle
	db *pgxpool.Pool
}

func setupCombine(t *testing.T, hold time.Duration) *combineBundle {
	t.Helper()
	st, db := combineStore(t)
	return combineBroker(st, db, func(c *broker.Config) { c.Push.MaxConcurrent, c.Push.Hold = 1, hold })
}

// combineStore opens a store and a pool of its own on a new database.
func combineStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	url := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	db, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return st, db
}

// combineBroker is a broker on st configured by opt, with db to stall its statements.
func combineBroker(st *store.Store, db *pgxpool.Pool, opt func(*broker.Config)) *combineBundle {
	b := broker.New(withConfig(opt), st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &combineBundle{testBundle: testBundle{b: b}, db: db}
}

// stall holds the ordering lock of partition (which must exist) until the returned
// release is called (once; later calls do nothing): a push into it waits inside its
// statement.
func (cb *combineBundle) stall(t *testing.T, queueName, partition string) (release func()) {
	t.Helper()
	conn, err := cb.db.Acquire(t.Context())
	require.NoError(t, err)
	var ok bool
	require.NoError(t, conn.QueryRow(t.Context(), `
		SELECT pg_try_advisory_lock(queen.partition_order_key(p.id))
		FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2`, queueName, partition).Scan(&ok))
	require.True(t, ok)
	var once sync.Once
	return func() {
		once.Do(func() {
			_, err := conn.Exec(context.WithoutCancel(t.Context()), `SELECT pg_advisory_unlock_all()`)
			require.NoError(t, err)
			conn.Release()
		})
	}
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, "waiting for %s", what)
}

// waitingOnLock waits until a statement of the broker waits for an advisory lock.
func (cb *combineBundle) waitingOnLock(t *testing.T) {
	t.Helper()
	waitFor(t, "a push statement waiting for its partition's lock", func() bool {
		var n int
		err := cb.db.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory'`).Scan(&n)
		return err == nil && n > 0
	})
}

// stalledPush stalls partition (which must exist) and starts a push of txid into it,
// which waits inside its statement until release is called.
func (cb *combineBundle) stalledPush(t *testing.T, queueName, partition, txid string) (<-chan pushOutcome, func()) {
	t.Helper()
	release := cb.stall(t, queueName, partition)
	a := cb.pushAsync(t.Context(), item(queueName, partition, txid, `1`))
	cb.waitingOnLock(t)
	return a, release
}

type pushOutcome struct {
	res []queue.PushResult
	err error
}

func (cb *combineBundle) pushAsync(ctx context.Context, items ...queue.PushItem) <-chan pushOutcome {
	ch := make(chan pushOutcome, 1)
	go func() {
		res, err := cb.b.Push(ctx, items)
		ch <- pushOutcome{res, err}
	}()
	return ch
}

func (cb *combineBundle) waiting(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "pushes waiting for a statement", func() bool { return cb.b.PushCombining().Waiting == n })
}

// TestPushCombining: pushes that arrive while the statement runs wait, and go into
// the next statement together, each with its own answer, in order, deduplicated
// against each other as if they had run one after the other; a push whose context
// ends while it waits is withdrawn and nothing of it is stored.
func TestPushCombining(t *testing.T) {
	t.Parallel()
	cb := setupCombine(t, time.Minute)
	cb.push(t, item("cq", "p1", "seed", `0`))
	require.Equal(t, broker.PushCombining{Statements: 1, Pushes: 1}, cb.b.PushCombining())

	release := cb.stall(t, "cq", "p1")
	a := cb.pushAsync(t.Context(), item("cq", "p1", "a1", `1`), item("cq", "p1", "a2", `2`))
	cb.waitingOnLock(t)
	b := cb.pushAsync(t.Context(), item("cq", "p1", "b1", `3`), item("cq", "p2", "b2", `4`))
	cb.waiting(t, 1)
	c := cb.pushAsync(t.Context(), item("cq", "p1", "b1", `5`), item("cq", "p1", "c2", `6`))
	cb.waiting(t, 2)
	dctx, cancel := context.WithCancel(t.Context())
	d := cb.pushAsync(dctx, item("cq", "p3", "d1", `7`))
	cb.waiting(t, 3)
	cancel()
	out := <-d
	require.ErrorIs(t, out.err, context.Canceled)
	require.Nil(t, out.res)
	cb.waiting(t, 2)
	release()

	resA, resB, resC := <-a, <-b, <-c
	require.NoError(t, resA.err)
	require.NoError(t, resB.err)
	require.NoError(t, resC.err)
	for _, r := range [][]queue.PushResult{resA.res, resB.res, resC.res} {
		require.Len(t, r, 2)
		for i := range r {
			require.Equal(t, i, r[i].Index, "indexes count within each push")
		}
	}
	require.Equal(t, []string{"queued", "queued"}, []string{resA.res[0].Status, resA.res[1].Status})
	require.Equal(t, []string{"queued", "queued"}, []string{resB.res[0].Status, resB.res[1].Status})
	require.Equal(t, "duplicate", resC.res[0].Status, "b1 was stored by the push ahead of it")
	require.Equal(t, resB.res[0].MessageID, resC.res[0].MessageID)
	require.Equal(t, "queued", resC.res[1].Status)
	require.Equal(t, "p2", resB.res[1].Partition)
	require.NotEqual(t, resB.res[0].PartitionID, resB.res[1].PartitionID)
	require.Equal(t, broker.PushCombining{Statements: 3, Pushes: 4}, cb.b.PushCombining(),
		"the seed, a alone, then b and c in one statement; d withdrawn")

	got := cb.pop(t, queue.PopRequest{Queue: "cq", Partition: "p1", Batch: 10, AutoAck: true})
	require.Equal(t, []string{"seed", "a1", "a2", "b1", "c2"}, txids(got.Messages))
	got = cb.pop(t, queue.PopRequest{Queue: "cq", Partition: "p3", Batch: 10, AutoAck: true})
	require.Empty(t, got.Messages, "the withdrawn push stored nothing")
}

// TestPushCombiningIsolatesFailures: when a combined statement fails for something in
// one push's items, every push runs again alone, so only that push fails.
func TestPushCombiningIsolatesFailures(t *testing.T) {
	t.Parallel()
	cb := setupCombine(t, time.Minute)
	cb.push(t, item("iq", "p1", "seed", `0`))
	_, err := cb.db.Exec(t.Context(), `
		CREATE FUNCTION public.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.payload @> '{"poison": true}' THEN
				RAISE EXCEPTION 'poisoned payload' USING ERRCODE = 'P0001';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_poison BEFORE INSERT ON queen.messages
			FOR EACH ROW EXECUTE FUNCTION public.refuse_poison()`)
	require.NoError(t, err)

	release := cb.stall(t, "iq", "p1")
	a := cb.pushAsync(t.Context(), item("iq", "p1", "a1", `1`))
	cb.waitingOnLock(t)
	bad := cb.pushAsync(t.Context(), item("iq", "p2", "bad", `{"poison": true}`))
	cb.waiting(t, 1)
	good := cb.pushAsync(t.Context(), item("iq", "p2", "good", `{"poison": false}`))
	cb.waiting(t, 2)
	release()

	require.NoError(t, (<-a).err)
	outBad, outGood := <-bad, <-good
	require.Error(t, outBad.err)
	require.NoError(t, outGood.err)
	require.Equal(t, "queued", outGood.res[0].Status)
	require.Equal(t, broker.PushCombining{Statements: 5, Pushes: 6}, cb.b.PushCombining(),
		"the seed, a, the combined statement of two, then bad and good alone")

	got := cb.pop(t, queue.PopRequest{Queue: "iq", Partition: "p2", Batch: 10, AutoAck: true})
	require.Equal(t, []string{"good"}, txids(got.Messages))
}

// TestPushCombiningWaitIsBounded: a push waits for a busy statement at most the
// longest wait, then runs alone: a statement stuck on a lock does not hold up pushes
// to other partitions.
func TestPushCombiningWaitIsBounded(t *testing.T) {
	t.Parallel()
	cb := setupCombine(t, 30*time.Millisecond)
	cb.push(t, item("wq", "p1", "seed", `0`))
	release := cb.stall(t, "wq", "p1")
	defer release()
	a := cb.pushAsync(t.Context(), item("wq", "p1", "a1", `1`))
	cb.waitingOnLock(t)
	res := cb.push(t, item("wq", "p2", "b1", `2`))
	require.Equal(t, "queued", res[0].Status)
	stats := cb.b.PushCombining()
	require.Equal(t, uint64(1), stats.Escaped)
	require.Zero(t, stats.Waiting)
	select {
	case out := <-a:
		t.Fatalf("the stalled push finished while its partition was locked: %+v", out)
	default:
	}
	release()
	out := <-a
	require.NoError(t, out.err)
	require.Equal(t, "queued", out.res[0].Status)
}

// TestPushCombiningPreferredBatch: with a preferred batch of 3, pushes wait for a
// third (or for the hold to pass) even though the statement is free.
func TestPushCombiningPreferredBatch(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	newBroker := func(hold time.Duration) *combineBundle {
		b := broker.New(withConfig(func(c *broker.Config) { c.Push.MaxConcurrent, c.Push.Preferred, c.Push.Hold = 1, 3, hold }), st,
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		return &combineBundle{testBundle: testBundle{b: b}}
	}

	cb := newBroker(time.Minute)
	a := cb.pushAsync(t.Context(), item("hq", "p1", "a", `1`))
	cb.waiting(t, 1)
	b := cb.pushAsync(t.Context(), item("hq", "p1", "b", `2`))
	cb.waiting(t, 2)
	require.Zero(t, cb.b.PushCombining().Statements, "two of three preferred: held")
	c := cb.pushAsync(t.Context(), item("hq", "p2", "c", `3`))
	for _, ch := range []<-chan pushOutcome{a, b, c} {
		out := <-ch
		require.NoError(t, out.err)
		require.Equal(t, "queued", out.res[0].Status)
	}
	require.Equal(t, broker.PushCombining{Statements: 1, Pushes: 3}, cb.b.PushCombining())

	cb = newBroker(20 * time.Millisecond)
	res := cb.push(t, item("hq", "p1", "d", `4`))
	require.Equal(t, "queued", res[0].Status, "a lone push goes once the hold has passed")
	stats := cb.b.PushCombining()
	require.Equal(t, [2]uint64{1, 1}, [2]uint64{stats.Statements, stats.Pushes})
}

// TestPushCombiningStartsASecondStatementForEnoughMessages: with two statements
// allowed, a small push that arrives while one runs waits for it rather than starting
// the second; the second starts once the line carries ParallelMin (50) messages, takes
// the whole line, and finishes while the first is still stuck. With a ParallelMin of
// 1, or without combining (a batch of 1), a small push gets the second statement at
// once.
func TestPushCombiningStartsASecondStatementForEnoughMessages(t *testing.T) {
	t.Parallel()
	st, db := combineStore(t)
	newBroker := func(maxBatch, parallelMin int) *combineBundle {
		return combineBroker(st, db, func(c *broker.Config) {
			c.Push.MaxConcurrent, c.Push.MaxBatch, c.Push.Hold, c.Push.ParallelMin = 2, maxBatch, time.Minute, parallelMin
		})
	}

	cb := newBroker(500, 50)
	cb.push(t, item("sq", "p1", "seed", `0`))
	a, release := cb.stalledPush(t, "sq", "p1", "a1")
	defer release()
	b := cb.pushAsync(t.Context(), item("sq", "p2", "b1", `2`))
	cb.waiting(t, 1) // a statement was free, but one runs and b carries one message
	many := make([]queue.PushItem, 49)
	for i := range many {
		many[i] = item("sq", "p3", fmt.Sprintf("c%d", i), `3`)
	}
	c := cb.pushAsync(t.Context(), many...)
	outB, outC := <-b, <-c
	require.NoError(t, outB.err)
	require.NoError(t, outC.err)
	require.Equal(t, "queued", outB.res[0].Status)
	require.Len(t, outC.res, 49)
	select {
	case out := <-a:
		t.Fatalf("the stalled push finished while its partition was locked: %+v", out)
	default:
	}
	require.Equal(t, broker.PushCombining{Statements: 3, Pushes: 4}, cb.b.PushCombining(),
		"the seed, a alone, then b and c together beside it")
	release()
	require.NoError(t, (<-a).err)

	for i, cfg := range [][2]int{{500, 1}, {1, 50}} {
		cb = newBroker(cfg[0], cfg[1])
		a, release = cb.stalledPush(t, "sq", "p1", fmt.Sprintf("a-%d", i))
		res := cb.push(t, item("sq", "p2", fmt.Sprintf("b-%d", i), `2`))
		require.Equal(t, "queued", res[0].Status)
		require.Zero(t, cb.b.PushCombining().Escaped,
			"batch %d, parallel min %d: a small push runs beside the stalled one at once", cfg[0], cfg[1])
		release()
		require.NoError(t, (<-a).err)
	}
}

// TestPushCombiningASlowStatementGetsOneBesideIt: small pushes that wait beside a
// running statement wait at most the hold; then a second statement takes them
// together (they do not wait the longer escape and run alone).
func TestPushCombiningASlowStatementGetsOneBesideIt(t *testing.T) {
	t.Parallel()
	st, db := combineStore(t)
	cb := combineBroker(st, db, func(c *broker.Config) {
		c.Push.MaxConcurrent, c.Push.Hold, c.Push.ParallelMin = 2, 200*time.Millisecond, 50
	})

	cb.push(t, item("lq", "p1", "seed", `0`))
	a, release := cb.stalledPush(t, "lq", "p1", "a1")
	defer release()
	c1 := cb.pushAsync(t.Context(), item("lq", "p2", "c1", `2`))
	cb.waiting(t, 1)
	c2 := cb.pushAsync(t.Context(), item("lq", "p3", "c2", `3`))
	for _, ch := range []<-chan pushOutcome{c1, c2} {
		out := <-ch
		require.NoError(t, out.err)
		require.Equal(t, "queued", out.res[0].Status)
	}
	require.Equal(t, broker.PushCombining{Statements: 3, Pushes: 4}, cb.b.PushCombining(),
		"the seed, a alone, then c1 and c2 together beside it after the hold")
	release()
	require.NoError(t, (<-a).err)
}
