package broker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// claimAheadFor sets QUEEN_POP_CLAIM_AHEAD_MS.
func claimAheadFor(d time.Duration) func(*broker.Config) {
	return func(c *broker.Config) { c.ClaimAhead = d }
}

// pushSeq pushes n messages m01, m02, … to partition "a" of a new queue q and returns
// their transaction ids in order.
func pushSeq(t *testing.T, tb *testBundle, q string, n int) []string {
	t.Helper()
	tb.configure(t, q, nil)
	ids := make([]string, n)
	items := make([]queue.PushItem, n)
	for i := range n {
		ids[i] = fmt.Sprintf("m%02d", i+1)
		items[i] = item(q, "a", ids[i], fmt.Sprint(i+1))
	}
	tb.push(t, items...)
	return ids
}

// ackAll acks every message of res under its lease and checks that the last item
// released it.
func ackAll(t *testing.T, tb *testBundle, res queue.PopResult) {
	t.Helper()
	acks := make([]queue.Ack, len(res.Messages))
	for i, m := range res.Messages {
		acks[i] = ackOf(m, res.LeaseID, "completed")
	}
	got := tb.ack(t, "", acks...)
	for _, r := range got {
		require.True(t, r.Success, "ack %+v", r)
	}
	last := got[len(got)-1].LeaseReleased
	require.True(t, last != nil && *last, "the ack released its lease")
}

func TestAnAckClaimsTheNextBatchAheadForALoopingConsumer(t *testing.T) {
	t.Parallel()
	tb := setup(t, claimAheadFor(time.Minute))
	t.Cleanup(tb.b.Close)
	ids := pushSeq(t, tb, "ahead", 40)
	pop10 := queue.PopRequest{Queue: "ahead", Batch: 10}

	// The first cycle is no loop yet: its ack claims nothing ahead.
	first := tb.pop(t, pop10)
	require.Equal(t, ids[0:10], txids(first.Messages))
	ackAll(t, tb, first)
	require.Equal(t, broker.ClaimsAhead{}, tb.b.ClaimsAhead())

	// The consumer came back at once: the ack of its second batch claims the third.
	second := tb.pop(t, pop10)
	require.Equal(t, ids[10:20], txids(second.Messages))
	ackAll(t, tb, second)
	require.Equal(t, broker.ClaimsAhead{}, tb.b.ClaimsAhead(), "nothing taken or given back yet")

	third := tb.pop(t, pop10)
	require.Equal(t, ids[20:30], txids(third.Messages), "the batch claimed ahead, in order")
	require.Equal(t, broker.ClaimsAhead{Taken: 1}, tb.b.ClaimsAhead())
	require.NotEqual(t, second.LeaseID, third.LeaseID)
	require.Equal(t, 1, third.PartitionsClaimed)
	ackAll(t, tb, third) // its lease is a real one; and this ack claims m31–m40 ahead

	// A pop of the queue and group with other parameters gets them back first, and
	// then claims the partition itself: nothing is held for no one.
	fourth := tb.pop(t, queue.PopRequest{Queue: "ahead", Batch: 5})
	require.Equal(t, ids[30:35], txids(fourth.Messages))
	require.Equal(t, broker.ClaimsAhead{Taken: 1, GivenBack: 1}, tb.b.ClaimsAhead())
	ackAll(t, tb, fourth) // no loop for pops of 5 yet: nothing claimed ahead
	fifth := tb.pop(t, queue.PopRequest{Queue: "ahead", Batch: 5})
	require.Equal(t, ids[35:40], txids(fifth.Messages))
	require.Equal(t, broker.ClaimsAhead{Taken: 1, GivenBack: 1}, tb.b.ClaimsAhead())
	ackAll(t, tb, fifth)
	require.Empty(t, tb.pop(t, pop10).Messages, "every message delivered once")
}

func TestABatchClaimedAheadThatNoPopTakesIsGivenBack(t *testing.T) {
	t.Parallel()
	tb := setup(t, claimAheadFor(300*time.Millisecond))
	t.Cleanup(tb.b.Close)
	ids := pushSeq(t, tb, "unclaimed", 30)
	pop10 := queue.PopRequest{Queue: "unclaimed", Batch: 10}
	ackAll(t, tb, tb.pop(t, pop10))
	ackAll(t, tb, tb.pop(t, pop10)) // claims m21–m30 ahead

	require.Eventually(t, func() bool { return tb.b.ClaimsAhead().GivenBack == 1 },
		10*time.Second, 5*time.Millisecond, "the held batch is given back once the window passed")
	// Its lease is cleared: a pop finds the messages claimable at once.
	res := tb.pop(t, pop10)
	require.Equal(t, ids[20:30], txids(res.Messages))
	require.Zero(t, res.Messages[0].RetryCount, "giving back is no failed delivery")
	require.Equal(t, broker.ClaimsAhead{GivenBack: 1}, tb.b.ClaimsAhead())
}

func TestClosingGivesBackTheBatchesClaimedAhead(t *testing.T) {
	t.Parallel()
	tb := setup(t, claimAheadFor(time.Hour))
	ids := pushSeq(t, tb, "closing", 30)
	pop10 := queue.PopRequest{Queue: "closing", Batch: 10}
	ackAll(t, tb, tb.pop(t, pop10))
	ackAll(t, tb, tb.pop(t, pop10)) // claims m21–m30 ahead, held for an hour

	tb.b.Close()
	require.Equal(t, broker.ClaimsAhead{GivenBack: 1}, tb.b.ClaimsAhead())
	res := tb.pop(t, pop10) // pops still run after Close; the partition is free
	require.Equal(t, ids[20:30], txids(res.Messages))
	require.Equal(t, broker.ClaimsAhead{GivenBack: 1}, tb.b.ClaimsAhead())
}

func TestNoClaimAheadWithoutTheSettingAFullBatchALeaseOrAnyPartition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		window    time.Duration
		batch     int
		autoAck   bool
		partition string
	}{
		{name: "off", window: 0, batch: 10},
		{name: "partial batches", window: time.Minute, batch: 50},
		{name: "autoAck", window: time.Minute, batch: 10, autoAck: true},
		{name: "named partition", window: time.Minute, batch: 10, partition: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, claimAheadFor(tc.window))
			t.Cleanup(tb.b.Close)
			ids := pushSeq(t, tb, "plain", 40)
			req := queue.PopRequest{Queue: "plain", Partition: tc.partition, Batch: tc.batch, AutoAck: tc.autoAck}
			var got []string
			for range 3 {
				res := tb.pop(t, req)
				got = append(got, txids(res.Messages)...)
				if len(res.Messages) > 0 && !tc.autoAck {
					ackAll(t, tb, res)
				}
			}
			require.Equal(t, ids[:min(3*tc.batch, 40)], got)
			require.Equal(t, broker.ClaimsAhead{}, tb.b.ClaimsAhead())
		})
	}
}

// loopTwice runs two pop-and-ack cycles of req (whose group is group) on a queue of 30
// messages, so that the second ack claims m21–m30 ahead.
func loopTwice(t *testing.T, tb *testBundle, sc queue.Scope, group string, req queue.PopRequest) {
	t.Helper()
	for range 2 {
		res := tb.pop(t, req)
		require.Len(t, res.Messages, req.Batch)
		acks := make([]queue.Ack, len(res.Messages))
		for i, m := range res.Messages {
			acks[i] = ackOf(m, res.LeaseID, "completed")
		}
		got, err := tb.b.Ack(context.Background(), sc, group, acks)
		require.NoError(t, err)
		require.True(t, got[len(got)-1].Success)
	}
}

func TestAPopThatCannotTakeAHeldBatchGetsItBackFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		req  queue.PopRequest
	}{
		{"named partition", queue.PopRequest{Queue: "other", Partition: "a", Batch: 10}},
		{"autoAck", queue.PopRequest{Queue: "other", Batch: 10, AutoAck: true}},
		{"other batch", queue.PopRequest{Queue: "other", Batch: 10, LeaseSeconds: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, claimAheadFor(time.Minute))
			t.Cleanup(tb.b.Close)
			ids := pushSeq(t, tb, "other", 30)
			loopTwice(t, tb, queue.Scope{}, "", queue.PopRequest{Queue: "other", Batch: 10})
			res := tb.pop(t, tc.req)
			require.Equal(t, ids[20:30], txids(res.Messages), "no partition held for no one")
			require.Equal(t, broker.ClaimsAhead{GivenBack: 1}, tb.b.ClaimsAhead())
		})
	}
}

func TestASeekOrADeleteDropsTheBatchesClaimedAhead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*testing.T, *broker.Broker, string)
	}{
		{"seek to the end", func(t *testing.T, b *broker.Broker, q string) {
			_, err := b.ConsumerGroupSeek(context.Background(), "g", q, queue.ConsumerGroupSeek{ToEnd: true})
			require.NoError(t, err)
		}},
		{"partition seek", func(t *testing.T, b *broker.Broker, q string) {
			_, err := b.ConsumerGroupPartitionSeek(context.Background(), "g", q, "a")
			require.NoError(t, err)
		}},
		{"group delete", func(t *testing.T, b *broker.Broker, q string) {
			_, err := b.ConsumerGroupDelete(context.Background(), queue.Scope{}, "g", q, true)
			require.NoError(t, err)
			// Started over, the group would read the queue again: seek it to the end.
			_, err = b.ConsumerGroupSeek(context.Background(), "g", q, queue.ConsumerGroupSeek{ToEnd: true})
			require.NoError(t, err)
		}},
		{"queue delete", func(t *testing.T, b *broker.Broker, q string) {
			ok, err := b.QueueDelete(context.Background(), q)
			require.NoError(t, err)
			require.True(t, ok)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, claimAheadFor(time.Minute))
			t.Cleanup(tb.b.Close)
			pushSeq(t, tb, "changed", 30)
			req := queue.PopRequest{Queue: "changed", ConsumerGroup: "g", Batch: 10}
			loopTwice(t, tb, queue.Scope{}, "g", req)
			tc.change(t, tb.b, "changed")
			require.Empty(t, tb.pop(t, req).Messages, "the batch claimed before the change is gone")
			require.Equal(t, broker.ClaimsAhead{GivenBack: 1}, tb.b.ClaimsAhead())
		})
	}
}

func TestATenantsConsumerClaimsAhead(t *testing.T) {
	t.Parallel()
	tb := setup(t, claimAheadFor(time.Minute))
	t.Cleanup(tb.b.Close)
	ids := pushSeq(t, tb, "acme:orders", 30) // a tenant's queue, by its stored name
	req := queue.PopRequest{Queue: "acme:orders", Batch: 10}
	loopTwice(t, tb, queue.Scope{Tenant: "acme"}, "", req)
	require.Equal(t, ids[20:30], txids(tb.pop(t, req).Messages))
	require.Equal(t, broker.ClaimsAhead{Taken: 1}, tb.b.ClaimsAhead())
}

func TestNoClaimAheadWhileAPopOfTheGroupIsParked(t *testing.T) {
	t.Parallel()
	tb := setup(t, slowPolls(time.Hour), claimAheadFor(time.Minute))
	t.Cleanup(tb.b.Close)
	ids := pushSeq(t, tb, "idle", 30)
	req := queue.PopRequest{Queue: "idle", Batch: 10}
	ackAll(t, tb, tb.pop(t, req))
	second := tb.pop(t, req) // a loop now; its partition leased
	got := parkPops(t, tb, "idle", 1)

	ackAll(t, tb, second) // the parked pop can take the next batch: nothing claimed ahead
	select {
	case res := <-got:
		require.Equal(t, ids[20:21], txids(res.Messages), "a parked pop takes one message")
	case <-time.After(20 * time.Second):
		t.Fatal("the parked pop was not woken for the partition the ack freed")
	}
	require.Equal(t, broker.ClaimsAhead{}, tb.b.ClaimsAhead())
}

// The window counts from when the ack was sent: the claim's lease starts in the ack's
// transaction, so an ack that waited longer than the window (here for the lock every
// ack of the partition takes) holds nothing, and the next pop claims a lease of its own.
func TestAnAckSlowerThanTheWindowHoldsNothing(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond
	st, db := combineStore(t)
	cb := combineBroker(st, db, claimAheadFor(window))
	t.Cleanup(cb.b.Close)
	tb := &cb.testBundle
	ids := pushSeq(t, tb, "slowack", 30)
	req := queue.PopRequest{Queue: "slowack", Batch: 10, LeaseSeconds: 60}
	ackAll(t, tb, tb.pop(t, req))
	second := tb.pop(t, req) // a loop now: its ack claims ahead
	pid := second.Messages[0].PartitionID

	holder, err := db.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.WithoutCancel(t.Context())) }()
	_, err = holder.Exec(t.Context(), `SELECT pg_advisory_xact_lock(queen.ack_lock_key($1::uuid, $2))`,
		pid, queue.QueueModeGroup)
	require.NoError(t, err)
	acked := make(chan error, 1)
	go func() {
		acks := make([]queue.Ack, len(second.Messages))
		for i, m := range second.Messages {
			acks[i] = ackOf(m, second.LeaseID, "completed")
		}
		_, err := cb.b.Ack(context.Background(), queue.Scope{}, "", acks)
		acked <- err
	}()
	// The ack waits for the lock until its transaction is twice the window old.
	require.Eventually(t, func() bool {
		var old bool
		err := db.QueryRow(t.Context(), `
			SELECT coalesce(bool_or(clock_timestamp() - xact_start > $1::int * interval '1 millisecond'), false)
			FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
			(2 * window).Milliseconds()).Scan(&old)
		return err == nil && old
	}, 20*time.Second, 5*time.Millisecond, "the ack waits for the lock")
	require.NoError(t, holder.Commit(t.Context()))
	select {
	case err := <-acked:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the ack did not end once the lock was free")
	}

	var before time.Time
	require.NoError(t, db.QueryRow(t.Context(), `SELECT clock_timestamp()`).Scan(&before))
	third := tb.pop(t, req)
	require.Equal(t, ids[20:30], txids(third.Messages))
	require.Equal(t, broker.ClaimsAhead{GivenBack: 1}, tb.b.ClaimsAhead(), "given back, not taken")
	var holderID string
	var expires time.Time
	require.NoError(t, db.QueryRow(t.Context(), `
		SELECT worker_id, lease_expires_at FROM queen.partition_consumers
		WHERE partition_id = $1 AND consumer_group = $2`, pid, queue.QueueModeGroup).Scan(&holderID, &expires))
	require.Equal(t, third.LeaseID, holderID)
	require.False(t, expires.Before(before.Add(60*time.Second)),
		"the pop's lease starts with its own claim (expires %s, pop at %s)", expires, before)
}

// An ack whose claim ahead leased again the partition it released wakes no pop for it,
// on this replica or another: none could take it. The test listens for the replicas'
// wake-ups itself; a push to a fence queue after each step marks where that step's
// wake-ups end (one replica sends them in order).
func TestAnAckThatClaimedAheadAnnouncesNothingForItsPartition(t *testing.T) {
	t.Parallel()
	url, a, _ := notifyingPair(t, claimAheadFor(time.Minute), func(*broker.Config) {})
	ctx := context.Background()
	listener, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close(context.Background()) })
	_, err = listener.Exec(ctx, "LISTEN "+pgx.Identifier{store.WakeChannel}.Sanitize())
	require.NoError(t, err)
	fences := 0
	// announced returns the queues announced since it last returned. What a step
	// announced is sent at the latest with the first fence's wake-up (one statement
	// may carry several queues, in any order); the second fence, pushed once the
	// first's wake-up came, is sent after all of them.
	announced := func() []string {
		var got []string
		for range 2 {
			fences++
			fence := fmt.Sprintf("fence%d", fences)
			_, err := a.Push(ctx, []queue.PushItem{{Queue: fence, Payload: []byte(`0`)}})
			require.NoError(t, err)
			for {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				n, err := listener.WaitForNotification(wctx)
				cancel()
				require.NoError(t, err, "the fence's wake-up never came")
				if n.Payload == fence {
					break
				}
				if !strings.HasPrefix(n.Payload, "fence") {
					got = append(got, n.Payload)
				}
			}
		}
		return got
	}

	items := make([]queue.PushItem, 30)
	for i := range items {
		items[i] = item("xa", "a", fmt.Sprintf("m%02d", i+1), fmt.Sprint(i+1))
	}
	_, err = a.Push(ctx, items)
	require.NoError(t, err)
	req := queue.PopRequest{Queue: "xa", Batch: 10}
	require.NoError(t, a.NormalizePop(&req))
	ackBatch := func(res queue.PopResult) {
		acks := make([]queue.Ack, len(res.Messages))
		for i, m := range res.Messages {
			acks[i] = ackOf(m, res.LeaseID, "completed")
		}
		got, err := a.Ack(ctx, queue.Scope{}, "", acks)
		require.NoError(t, err)
		require.True(t, got[len(got)-1].Success)
	}
	first, err := a.Pop(ctx, req)
	require.NoError(t, err)
	ackBatch(first) // no loop yet: messages are left, so it announces the queue
	second, err := a.Pop(ctx, req)
	require.NoError(t, err)
	require.Contains(t, announced(), "xa")

	ackBatch(second) // claims m21–m30 ahead
	require.NotContains(t, announced(), "xa")
	third, err := a.Pop(ctx, req)
	require.NoError(t, err)
	require.Equal(t, []string{"m21", "m22", "m23", "m24", "m25", "m26", "m27", "m28", "m29", "m30"}, txids(third.Messages))
	require.Equal(t, broker.ClaimsAhead{Taken: 1}, a.ClaimsAhead())
}
