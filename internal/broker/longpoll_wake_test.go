package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// parkPops starts n long-polls of queue mode on q (re-checking only when woken, with
// slowPolls) and returns the channel their results arrive on.
func parkPops(t *testing.T, tb *testBundle, q string, n int) <-chan queue.PopResult {
	t.Helper()
	got := make(chan queue.PopResult, n)
	before := tb.b.ParkedPolls()
	for range n {
		req := queue.PopRequest{Queue: q, Wait: true, Timeout: 30 * time.Minute}
		require.NoError(t, tb.b.NormalizePop(&req))
		go func() {
			res, err := tb.b.Pop(context.Background(), req)
			if err == nil {
				got <- res
			}
		}()
	}
	require.Eventually(t, func() bool { return tb.b.ParkedPolls() == before+n }, 10*time.Second, 5*time.Millisecond)
	return got
}

// holdAndPark pushes ids to partition "a" of a new queue q, pops the first batch of
// them under a lease, checks it and parks one pop of queue mode on q: it returns the
// held batch and the channel of the parked pop.
func holdAndPark(t *testing.T, tb *testBundle, q string, batch int, ids ...string) (queue.PopResult, <-chan queue.PopResult) {
	t.Helper()
	tb.configure(t, q, nil)
	items := make([]queue.PushItem, len(ids))
	for i, id := range ids {
		items[i] = item(q, "a", id, fmt.Sprint(i+1))
	}
	tb.push(t, items...)
	held := tb.pop(t, queue.PopRequest{Queue: q, Partition: "a", Batch: batch})
	require.Equal(t, ids[:batch], txids(held.Messages))
	got := parkPops(t, tb, q, 1)
	t.Cleanup(tb.b.Close)
	return held, got
}

// requireWokenWith waits for the one pop parked on got that what came before woke,
// which claims want; its wake was the only claim a parked pop ran. what names the wake
// in the failure message.
func requireWokenWith(t *testing.T, tb *testBundle, got <-chan queue.PopResult, what string, want ...string) {
	t.Helper()
	select {
	case res := <-got:
		require.Equal(t, want, txids(res.Messages))
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not wake the parked pop (rechecks %+v)", what, tb.b.LongPollRechecks())
	}
	require.Equal(t, broker.LongPollRechecks{WokenFound: 1}, tb.b.LongPollRechecks())
}

func TestAPushWakesOneParkedPopPerPartition(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "herd", nil)
	got := parkPops(t, tb, "herd", 4)
	t.Cleanup(tb.b.Close)

	tb.push(t, item("herd", "p1", "one", `1`))
	select {
	case res := <-got:
		require.Equal(t, []string{"one"}, txids(res.Messages))
	case <-time.After(20 * time.Second):
		t.Fatal("no parked pop was woken by the push")
	}
	// The woken pop found the message on the partition it was woken for: nothing to
	// pass on. Waking all four would run three empty claims.
	settled := func() bool {
		r := tb.b.LongPollRechecks()
		return r.WokenFound == 1 && r.WokenEmpty == 0
	}
	require.Eventually(t, settled, 20*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return !settled() }, 300*time.Millisecond, 10*time.Millisecond,
		"more parked pops claimed than the push and the pass woke: %+v", tb.b.LongPollRechecks())
	require.Equal(t, 3, tb.b.ParkedPolls())

	// A push filling two partitions wakes two pops: both get a message.
	tb.push(t, item("herd", "p2", "two", `2`), item("herd", "p3", "three", `3`))
	var both []string
	for range 2 {
		select {
		case res := <-got:
			both = append(both, txids(res.Messages)...)
		case <-time.After(20 * time.Second):
			t.Fatalf("a push to two partitions answered %v", both)
		}
	}
	require.ElementsMatch(t, []string{"two", "three"}, both)
}

func TestAWokenPopThatTookAnotherPartitionPassesTheWakeOn(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "pass", nil)
	tb.push(t, item("pass", "a", "a1", `1`), item("pass", "a", "a2", `2`))
	held := tb.pop(t, queue.PopRequest{Queue: "pass", Batch: 1})
	require.Equal(t, []string{"a1"}, txids(held.Messages))

	// Partition a is leased: both pops park.
	got := parkPops(t, tb, "pass", 2)
	t.Cleanup(tb.b.Close)
	// The ack frees a (a2 is left) without waking anyone; then a push to b wakes one
	// pop. Whichever partition that pop takes, the other must not wait for its re-check
	// interval (an hour) for the one it left.
	acks := tb.ack(t, "", ackOf(held.Messages[0], held.LeaseID, queue.AckCompleted))
	require.True(t, acks[0].Success)
	tb.push(t, item("pass", "b", "b1", `3`))
	var delivered []string
	for range 2 {
		select {
		case res := <-got:
			delivered = append(delivered, txids(res.Messages)...)
		case <-time.After(20 * time.Second):
			t.Fatalf("a message was left to the re-check interval; delivered %v, rechecks %+v",
				delivered, tb.b.LongPollRechecks())
		}
	}
	require.ElementsMatch(t, []string{"a2", "b1"}, delivered)
	require.Equal(t, broker.LongPollRechecks{WokenFound: 2}, tb.b.LongPollRechecks(),
		"each pop claimed once, after a wake")
}

// TestWakesLeaveNoMessageBehind runs consumers of two groups, most taking any
// partition and one parked on a partition of its own, against a producer pushing
// small batches to random partitions, with re-check intervals of an hour: every
// message must reach every group through wakes alone.
func TestWakesLeaveNoMessageBehind(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "stress", nil)
	const total, partitions = 240, 6
	groups := []string{"g1", "g2"}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); tb.b.Close() })

	type delivery struct{ group, txid string }
	got := make(chan delivery, 4*total)
	consume := func(group, partition string, batch int) {
		for ctx.Err() == nil {
			req := queue.PopRequest{Queue: "stress", ConsumerGroup: group, Partition: partition, Batch: batch,
				Wait: true, Timeout: 10 * time.Minute}
			if err := tb.b.NormalizePop(&req); err != nil {
				panic(err)
			}
			res, err := tb.b.Pop(ctx, req)
			if err != nil || len(res.Messages) == 0 {
				continue
			}
			acks := make([]queue.Ack, len(res.Messages))
			for i, m := range res.Messages {
				acks[i] = ackOf(m, res.LeaseID, queue.AckCompleted)
			}
			if _, err := tb.b.Ack(ctx, queue.Scope{}, group, acks); err != nil {
				continue // the test is ending
			}
			for _, m := range res.Messages {
				got <- delivery{group, m.TransactionID}
			}
		}
	}
	for _, g := range groups {
		for i := range 3 {
			go consume(g, "", 1+i)
		}
		go consume(g, "p0", 2)
	}
	require.Eventually(t, func() bool { return tb.b.ParkedPolls() == 8 }, 10*time.Second, 5*time.Millisecond)

	for sent := 0; sent < total; {
		n := min(1+sent%3, total-sent)
		items := make([]queue.PushItem, n)
		for i := range items {
			items[i] = item("stress", fmt.Sprintf("p%d", (sent*7+i*3)%partitions), fmt.Sprintf("m%03d", sent), `1`)
			sent++
		}
		tb.push(t, items...)
	}
	seen := make(map[delivery]bool)
	deadline := time.After(60 * time.Second)
	for len(seen) < total*len(groups) {
		select {
		case d := <-got:
			seen[d] = true
		case <-deadline:
			t.Fatalf("%d of %d deliveries after a minute (rechecks %+v): a message waits for a wake",
				len(seen), total*len(groups), tb.b.LongPollRechecks())
		}
	}
}

func TestAnAckThatLeavesMessagesWakesAParkedPop(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "freed", nil)
	tb.push(t, item("freed", "a", "a1", `1`), item("freed", "a", "a2", `2`), item("freed", "b", "b1", `3`))
	held := tb.pop(t, queue.PopRequest{Queue: "freed", Partition: "a", Batch: 1})
	require.Equal(t, []string{"a1"}, txids(held.Messages))
	drained := tb.pop(t, queue.PopRequest{Queue: "freed", Partition: "b"})
	require.Equal(t, []string{"b1"}, txids(drained.Messages))

	got := parkPops(t, tb, "freed", 1)
	t.Cleanup(tb.b.Close)
	// The ack that drains b leaves nothing to take: no wake.
	acks := tb.ack(t, "", ackOf(drained.Messages[0], drained.LeaseID, queue.AckCompleted))
	require.True(t, acks[0].Success)
	require.Never(t, func() bool { return tb.b.LongPollRechecks() != broker.LongPollRechecks{} },
		300*time.Millisecond, 10*time.Millisecond, "an ack that left nothing woke the parked pop")
	// The ack of a1 ends the lease on a with a2 left: the parked pop takes it now, not
	// at its re-check interval (an hour).
	acks = tb.ack(t, "", ackOf(held.Messages[0], held.LeaseID, queue.AckCompleted))
	require.True(t, acks[0].Success)
	requireWokenWith(t, tb, got, "the ack that left a2", "a2")
}

// An ack through the general path (here a dead-letter) that ends the lease wakes a
// parked pop of the group too: that path does not look at what is left, so the pop
// claims, and takes what the lease held back.
func TestAGeneralAckThatEndsALeaseWakesAParkedPop(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	held, got := holdAndPark(t, tb, "dead", 1, "a1", "a2")
	acks := tb.ack(t, "", ackOf(held.Messages[0], held.LeaseID, queue.AckDLQ))
	require.True(t, acks[0].Success)
	require.True(t, acks[0].DLQ)
	requireWokenWith(t, tb, got, "the dead-letter ack that ended the lease", "a2")
}

func TestATransactionAckThatEndsALeaseWakesAParkedPop(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "stage2", nil)
	held, got := holdAndPark(t, tb, "stage1", 1, "a1", "a2")
	// The pipeline step: a1's result goes on to stage2 as a1 is acked, atomically.
	ack := ackOf(held.Messages[0], held.LeaseID, queue.AckCompleted)
	ack.ConsumerGroup = queue.QueueModeGroup
	res, err := tb.b.Transaction(context.Background(), queue.Scope{}, []queue.TxOp{
		{Type: "ack", Ack: ack},
		{Type: "push", Push: []queue.PushItem{item("stage2", "a", "a1-out", `1`)}},
	})
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	requireWokenWith(t, tb, got, "the transaction's ack that ended the lease", "a2")
}

func TestATransactionAckThatKeepsTheLeaseWakesNoPop(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	held, got := holdAndPark(t, tb, "keep", 2, "a1", "a2", "a3")
	// a1 of the leased batch [a1, a2]: the lease stays for a2, nothing is free to take.
	ack := ackOf(held.Messages[0], held.LeaseID, queue.AckCompleted)
	ack.ConsumerGroup = queue.QueueModeGroup
	res, err := tb.b.Transaction(context.Background(), queue.Scope{}, []queue.TxOp{{Type: "ack", Ack: ack}})
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.Empty(t, res.Results[0].FreedPartition)

	// The ack of a2 ends the batch and the lease: now a3 is the parked pop's.
	ack = ackOf(held.Messages[1], held.LeaseID, queue.AckCompleted)
	ack.ConsumerGroup = queue.QueueModeGroup
	res, err = tb.b.Transaction(context.Background(), queue.Scope{}, []queue.TxOp{{Type: "ack", Ack: ack}})
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.Equal(t, "a", res.Results[0].FreedPartition)
	requireWokenWith(t, tb, got, "the ack that ended the batch", "a3")
}

func TestAStreamCycleAckThatEndsALeaseWakesAParkedPop(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour))
	held, got := holdAndPark(t, tb, "events", 1, "e1", "e2")
	reg, err := tb.b.StreamRegister(context.Background(), queue.StreamRegistration{Name: "counts", SourceQueue: "events", ConfigHash: "h1"})
	require.NoError(t, err)
	res, err := tb.b.StreamCycle(context.Background(), queue.StreamCycle{
		QueryID: reg.QueryID, PartitionID: held.Messages[0].PartitionID, ReleaseLease: true,
		StateOps: []queue.StateOp{{Type: queue.StateOpUpsert, Key: "n", Value: json.RawMessage(`1`)}},
		Ack:      &queue.StreamAck{TransactionID: "e1", LeaseID: held.LeaseID, Count: 1},
	})
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	require.True(t, res.Ack.LeaseReleased)
	requireWokenWith(t, tb, got, "the cycle's ack that ended the lease", "e2")
}

// A push that commits while the ack of its partition's leased batch runs wakes the
// parked pop, whose claim finds the partition still leased; the ack's statement that
// moves the cursor, whose snapshot came before the push, sees nothing left when it ends
// the lease. The pushed message must not wait for the parked pop's re-check interval
// (an hour here): the ack's last statement sees the push and answers that messages
// wait.
func TestAPushDuringTheAckOfItsPartitionIsNotLeftWaiting(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, db := combineStore(t)
	tb := &combineBroker(st, db, slowPolls(time.Hour)).testBundle
	held, got := holdAndPark(t, tb, "race", 1, "a1")

	// The test holds the group's cursor row, so the ack waits inside its statement.
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM queen.partition_consumers c
		JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = 'race' AND p.name = 'a' FOR UPDATE OF c`)
	require.NoError(t, err)
	type answer struct {
		res []queue.AckResult
		err error
	}
	acked := make(chan answer, 1)
	go func() {
		res, err := tb.b.Ack(context.Background(), queue.Scope{}, "", []queue.Ack{ackOf(held.Messages[0], held.LeaseID, queue.AckCompleted)})
		acked <- answer{res, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%partition_consumers%'`).Scan(&n)
		return err == nil && n == 1
	}, 20*time.Second, 5*time.Millisecond, "the ack never waited for the cursor row")

	// The push commits now and wakes the parked pop, which finds a still leased.
	tb.push(t, item("race", "a", "a2", `2`))
	require.Eventually(t, func() bool { return tb.b.LongPollRechecks().WokenEmpty == 1 }, 20*time.Second, 5*time.Millisecond,
		"the push did not wake the parked pop (rechecks %+v)", tb.b.LongPollRechecks())
	require.NoError(t, tx.Rollback(ctx))
	a := <-acked
	require.NoError(t, a.err)
	require.True(t, a.res[0].Success)
	require.True(t, *a.res[0].LeaseReleased)
	require.True(t, a.res[0].PartitionPending, "the push committed before the ack settled the ready row")

	select {
	case res := <-got:
		require.Equal(t, []string{"a2"}, txids(res.Messages))
	case <-time.After(20 * time.Second):
		t.Fatalf("the pushed message waited for the re-check interval (rechecks %+v)", tb.b.LongPollRechecks())
	}
}
