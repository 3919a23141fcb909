package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

type testBundle struct {
	b *broker.Broker
}

// withConfig is broker.DefaultConfig() changed by each of opts in turn.
func withConfig(opts ...func(*broker.Config)) broker.Config {
	cfg := broker.DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// slowPolls makes a parked long-poll re-check only after an hour (and allows
// timeouts up to maxPop): only a wake-up can answer it sooner.
func slowPolls(maxPop time.Duration) func(*broker.Config) {
	return func(c *broker.Config) {
		c.PopWaitInitialInterval, c.PopWaitMaxInterval, c.MaxPopTimeout = time.Hour, time.Hour, maxPop
	}
}

func setup(t *testing.T, opts ...func(*broker.Config)) *testBundle {
	t.Helper()
	cfg := withConfig(opts...)
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return &testBundle{b: broker.New(cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

func (tb *testBundle) push(t *testing.T, items ...queue.PushItem) []queue.PushResult {
	t.Helper()
	res, err := tb.b.Push(context.Background(), items)
	require.NoError(t, err)
	return res
}

func (tb *testBundle) pop(t *testing.T, req queue.PopRequest) queue.PopResult {
	t.Helper()
	require.NoError(t, tb.b.NormalizePop(&req))
	res, err := tb.b.Pop(context.Background(), req)
	require.NoError(t, err)
	return res
}

func (tb *testBundle) ack(t *testing.T, group string, acks ...queue.Ack) []queue.AckResult {
	t.Helper()
	res, err := tb.b.Ack(context.Background(), queue.Scope{}, group, acks)
	require.NoError(t, err)
	return res
}

func (tb *testBundle) configure(t *testing.T, name string, mutate func(*queue.Options)) {
	t.Helper()
	opts := queue.DefaultOptions()
	if mutate != nil {
		mutate(&opts)
	}
	_, _, err := tb.b.Configure(context.Background(), queue.Queue{Name: name, Options: opts})
	require.NoError(t, err)
}

func item(q, partition, txid, payload string) queue.PushItem {
	return queue.PushItem{Queue: q, Partition: partition, TransactionID: txid, Payload: json.RawMessage(payload)}
}

func ackOf(m queue.Message, lease, status string) queue.Ack {
	return queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease, Status: status}
}

func txids(msgs []queue.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.TransactionID
	}
	return out
}

func TestQuickstartPushPopAutoAck(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	res := tb.push(t, queue.PushItem{Queue: "demo", Payload: json.RawMessage(`{"hello":"world"}`)})
	require.Len(t, res, 1)
	require.Equal(t, queue.StatusQueued, res[0].Status)
	require.True(t, queue.IsUUID(res[0].MessageID))

	got := tb.pop(t, queue.PopRequest{Queue: "demo", AutoAck: true})
	require.Len(t, got.Messages, 1)
	require.JSONEq(t, `{"hello":"world"}`, string(got.Messages[0].Payload))
	require.Equal(t, "Default", got.Messages[0].Partition)
	require.Equal(t, res[0].MessageID, got.Messages[0].ID)
	require.Empty(t, got.LeaseID, "autoAck pops return no lease")

	again := tb.pop(t, queue.PopRequest{Queue: "demo", AutoAck: true})
	require.Empty(t, again.Messages, "an auto-acked message is not delivered twice")
}

func TestFIFOWithinPartition(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var want []string
	for batch := 0; batch < 3; batch++ {
		var items []queue.PushItem
		for i := 0; i < 4; i++ {
			id := string(rune('a'+batch)) + string(rune('0'+i))
			want = append(want, id)
			items = append(items, item("fifo", "p", id, `1`))
		}
		tb.push(t, items...)
	}
	var got []string
	for len(got) < len(want) {
		res := tb.pop(t, queue.PopRequest{Queue: "fifo", Partition: "p", Batch: 5})
		require.NotEmpty(t, res.Messages)
		for _, m := range res.Messages {
			got = append(got, m.TransactionID)
		}
		var batch []queue.Ack
		for _, m := range res.Messages {
			batch = append(batch, ackOf(m, res.LeaseID, queue.AckCompleted))
		}
		acks := tb.ack(t, "", batch...)
		for i, a := range acks {
			require.True(t, a.Success, a.Error)
			require.Equal(t, batch[i].TransactionID, a.TransactionID)
			require.Equal(t, "fifo", a.QueueName)
			require.Equal(t, "p", a.PartitionName)
			require.NotNil(t, a.LeaseReleased)
			if i < len(acks)-1 {
				require.False(t, *a.LeaseReleased, "only the ack that completes the leased batch releases it")
			}
		}
		require.True(t, *acks[len(acks)-1].LeaseReleased, "the lease auto-releases once every delivered message is acked")
	}
	require.Equal(t, want, got)
}

func TestPartitionsAreIndependent(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.push(t, item("indep", "p1", "a", `1`), item("indep", "p2", "b", `2`))

	first := tb.pop(t, queue.PopRequest{Queue: "indep", Partition: "p1"})
	require.Equal(t, []string{"a"}, txids(first.Messages))
	held := tb.pop(t, queue.PopRequest{Queue: "indep", Partition: "p1"})
	require.Empty(t, held.Messages, "p1 is leased by the first consumer")
	other := tb.pop(t, queue.PopRequest{Queue: "indep"})
	require.Equal(t, []string{"b"}, txids(other.Messages), "a held lease on p1 does not block p2")
	require.NotEqual(t, first.LeaseID, other.LeaseID)
}

func TestConsumerGroupsEachSeeEveryMessage(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.push(t, item("fan", "", "m1", `1`), item("fan", "", "m2", `2`))

	for _, g := range []string{"g1", "g2"} {
		res := tb.pop(t, queue.PopRequest{Queue: "fan", ConsumerGroup: g, Batch: 10, AutoAck: true})
		require.Equal(t, []string{"m1", "m2"}, txids(res.Messages), "group %s", g)
	}
	q1 := tb.pop(t, queue.PopRequest{Queue: "fan", Batch: 10, AutoAck: true})
	require.Equal(t, []string{"m1", "m2"}, txids(q1.Messages))
	q2 := tb.pop(t, queue.PopRequest{Queue: "fan", Batch: 10, AutoAck: true})
	require.Empty(t, q2.Messages, "queue mode delivers each message once")
}

func TestDedupByTransactionID(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	first := tb.push(t, item("dedup", "", "tx-1", `{"v":1}`))
	require.Equal(t, queue.StatusQueued, first[0].Status)
	second := tb.push(t, item("dedup", "", "tx-1", `{"v":2}`), item("dedup", "", "tx-1", `{"v":3}`), item("dedup", "other", "tx-1", `{"v":4}`))
	require.Equal(t, queue.StatusDuplicate, second[0].Status)
	require.Equal(t, first[0].MessageID, second[0].MessageID, "a duplicate carries the stored message id")
	require.Equal(t, queue.StatusDuplicate, second[1].Status)
	require.Equal(t, first[0].MessageID, second[1].MessageID)
	require.Equal(t, queue.StatusQueued, second[2].Status, "dedup is per partition")

	qi, err := tb.b.QueueGet(context.Background(), "dedup")
	require.NoError(t, err)
	require.EqualValues(t, 2, qi.Totals.Total, "one row per (partition, transactionId)")

	res := tb.pop(t, queue.PopRequest{Queue: "dedup", Partition: "Default", Batch: 10})
	require.Len(t, res.Messages, 1)
	require.JSONEq(t, `{"v":1}`, string(res.Messages[0].Payload), "a duplicate never changes the stored message")
}

func TestIntraBatchDuplicatesShareTheWinnerID(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	res := tb.push(t, item("intra", "", "same", `1`), item("intra", "", "same", `2`))
	require.Equal(t, queue.StatusQueued, res[0].Status)
	require.Equal(t, queue.StatusDuplicate, res[1].Status)
	require.Equal(t, res[0].MessageID, res[1].MessageID)
}

func TestLeaseExpiryRedelivers(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.configure(t, "expiry", func(o *queue.Options) { o.LeaseTime = 1 })
	tb.push(t, item("expiry", "", "m1", `1`))

	first := tb.pop(t, queue.PopRequest{Queue: "expiry"})
	require.Len(t, first.Messages, 1)
	require.Empty(t, tb.pop(t, queue.PopRequest{Queue: "expiry"}).Messages, "leased")

	var again queue.PopResult
	require.Eventually(t, func() bool {
		again = tb.pop(t, queue.PopRequest{Queue: "expiry"})
		return len(again.Messages) == 1
	}, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, "m1", again.Messages[0].TransactionID)
	require.NotEqual(t, first.LeaseID, again.LeaseID)

	stale := tb.ack(t, "", ackOf(first.Messages[0], first.LeaseID, queue.AckCompleted))
	require.False(t, stale[0].Success)
	require.Equal(t, "Invalid or expired lease", stale[0].Error)
	fresh := tb.ack(t, "", ackOf(again.Messages[0], again.LeaseID, queue.AckCompleted))
	require.True(t, fresh[0].Success)
}

func TestFailedAckRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.configure(t, "retry", func(o *queue.Options) { o.RetryLimit = 2 })
	tb.push(t, item("retry", "", "bad", `1`), item("retry", "", "good", `2`))

	for attempt := 0; attempt < 3; attempt++ {
		res := tb.pop(t, queue.PopRequest{Queue: "retry"})
		require.Equal(t, []string{"bad"}, txids(res.Messages), "attempt %d", attempt)
		acks := tb.ack(t, "", ackOf(res.Messages[0], res.LeaseID, queue.AckFailed))
		require.True(t, acks[0].Success)
		require.Equal(t, attempt == 2, acks[0].DLQ, "attempt %d: dead-lettered only after retryLimit retries", attempt)
	}
	next := tb.pop(t, queue.PopRequest{Queue: "retry"})
	require.Equal(t, []string{"good"}, txids(next.Messages), "the cursor moved past the dead-lettered message")

	qi, err := tb.b.QueueGet(context.Background(), "retry")
	require.NoError(t, err)
	require.EqualValues(t, 1, qi.Totals.DeadLetter)
}

func TestMixedBatchAckNeverSkipsAMessage(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.push(t, item("mixed", "", "m1", `1`), item("mixed", "", "m2", `2`), item("mixed", "", "m3", `3`))
	res := tb.pop(t, queue.PopRequest{Queue: "mixed", Batch: 3})
	require.Len(t, res.Messages, 3)
	acks := tb.ack(t, "",
		ackOf(res.Messages[0], "", queue.AckCompleted),
		ackOf(res.Messages[1], "", queue.AckFailed),
		ackOf(res.Messages[2], "", queue.AckCompleted))
	require.True(t, acks[0].Success)
	require.True(t, acks[1].Success)
	require.False(t, acks[2].Success, "m3 must not move the cursor past the failed m2")
	require.Equal(t, "lease released by earlier failure", acks[2].Error)

	again := tb.pop(t, queue.PopRequest{Queue: "mixed", Batch: 3})
	require.Equal(t, []string{"m2", "m3"}, txids(again.Messages), "m2 is redelivered, not skipped")
}

func TestAckNeverMovesTheCursorBackwards(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.push(t, item("mono", "", "m1", `1`), item("mono", "", "m2", `2`), item("mono", "", "m3", `3`))
	res := tb.pop(t, queue.PopRequest{Queue: "mono", Batch: 2})
	require.Len(t, res.Messages, 2)
	tb.ack(t, "", ackOf(res.Messages[1], "", queue.AckCompleted))
	tb.ack(t, "", ackOf(res.Messages[0], "", queue.AckCompleted))
	next := tb.pop(t, queue.PopRequest{Queue: "mono", Batch: 5})
	require.Equal(t, []string{"m3"}, txids(next.Messages))
}

func TestTransactionIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("FailedPushUndoesTheAck", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, item("in", "", "in-1", `1`), item("out", "", "taken", `0`))
		popped := tb.pop(t, queue.PopRequest{Queue: "in"})
		require.Len(t, popped.Messages, 1)
		m := popped.Messages[0]

		res, err := tb.b.Transaction(ctx, queue.Scope{}, []queue.TxOp{
			{Type: "ack", Ack: queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, Status: "completed"}},
			{Type: "push", Push: []queue.PushItem{item("out", "", "taken", `1`)}},
		})
		require.NoError(t, err)
		require.False(t, res.Success)
		require.Contains(t, res.Error, "duplicate")

		qi, err := tb.b.QueueGet(ctx, "in")
		require.NoError(t, err)
		require.EqualValues(t, 0, qi.Totals.Completed, "the ack was rolled back")
		require.EqualValues(t, 1, qi.Totals.Pending+qi.Totals.Processing)
	})

	t.Run("FailedAckUndoesThePush", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		res, err := tb.b.Transaction(ctx, queue.Scope{}, []queue.TxOp{
			{Type: "push", Push: []queue.PushItem{item("out2", "", "new", `1`)}},
			{Type: "ack", Ack: queue.Ack{TransactionID: "missing", PartitionID: "0190a000-0000-7000-8000-000000000001"}},
		})
		require.NoError(t, err)
		require.False(t, res.Success)
		require.Equal(t, queue.TxAckUnresolvable, res.Error)
		require.Equal(t, queue.TxReasonAckRejected, res.Reason)
		require.Empty(t, tb.pop(t, queue.PopRequest{Queue: "out2"}).Messages, "the push was rolled back")
	})

	t.Run("CommitsBoth", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, item("in3", "", "in-1", `1`))
		popped := tb.pop(t, queue.PopRequest{Queue: "in3"})
		m := popped.Messages[0]
		res, err := tb.b.Transaction(ctx, queue.Scope{}, []queue.TxOp{
			{Type: "ack", Ack: queue.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID}},
			{Type: "push", Push: []queue.PushItem{item("out3", "", "o-1", `{"x":1}`)}},
		})
		require.NoError(t, err)
		require.True(t, res.Success, res.Error)
		require.Len(t, res.Results, 2)
		require.Empty(t, tb.pop(t, queue.PopRequest{Queue: "in3"}).Messages)
		require.Equal(t, []string{"o-1"}, txids(tb.pop(t, queue.PopRequest{Queue: "out3"}).Messages))
	})
}

func TestLongPollWakesOnPush(t *testing.T) {
	t.Parallel()
	// A re-check interval far beyond the test's life: only a wake-up can deliver.
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "wake", nil)

	got := make(chan queue.PopResult, 1)
	go func() {
		req := queue.PopRequest{Queue: "wake", Wait: true, Timeout: 30 * time.Minute}
		if err := tb.b.NormalizePop(&req); err != nil {
			panic(err)
		}
		res, err := tb.b.Pop(context.Background(), req)
		if err != nil {
			panic(err)
		}
		got <- res
	}()
	require.Eventually(t, func() bool { return tb.b.ParkedPolls() == 1 }, 10*time.Second, 5*time.Millisecond)
	select {
	case <-got:
		t.Fatal("the long-poll answered before anything was pushed")
	default:
	}
	tb.push(t, item("wake", "", "late", `1`))
	select {
	case res := <-got:
		require.Equal(t, []string{"late"}, txids(res.Messages))
	case <-time.After(20 * time.Second):
		t.Fatal("the parked long-poll was not woken by the push")
	}
}

func TestLongPollAnswersEmptyByItsTimeout(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	req := queue.PopRequest{Queue: "quiet", Wait: true, Timeout: 300 * time.Millisecond}
	start := time.Now()
	res := tb.pop(t, req)
	require.Empty(t, res.Messages)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "it waited for its timeout")
}

func TestLongPollCancelledByClient(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	req := queue.PopRequest{Queue: "gone", Wait: true, Timeout: time.Minute}
	require.NoError(t, tb.b.NormalizePop(&req))
	done := make(chan error, 1)
	go func() {
		_, err := tb.b.Pop(ctx, req)
		done <- err
	}()
	require.Eventually(t, func() bool { return tb.b.ParkedPolls() == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled long-poll did not return")
	}
	require.Zero(t, tb.b.ParkedPolls())
}

func TestPopValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(c *broker.Config) { c.MaxPopBatch = 50 })
	for _, tc := range []struct {
		name  string
		req   queue.PopRequest
		field string
	}{
		{"NegativeBatch", queue.PopRequest{Queue: "q", Batch: -1}, "batch"},
		{"BatchOverLimit", queue.PopRequest{Queue: "q", Batch: 51}, "batch"},
		{"EmptyQueue", queue.PopRequest{Queue: ""}, "queue"},
		{"NegativeTimeout", queue.PopRequest{Queue: "q", Timeout: -time.Second}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tb.b.NormalizePop(&tc.req)
			var ve *queue.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.field, ve.Field)
		})
	}
}

func TestSubscriptionModeNewSkipsHistory(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.push(t, item("subs", "", "old", `1`))
	for _, mode := range []string{"new", "new-only", "new_only", "NewOnly"} {
		group := "g-" + mode
		res := tb.pop(t, queue.PopRequest{Queue: "subs", ConsumerGroup: group, SubscriptionMode: mode, AutoAck: true})
		require.Empty(t, res.Messages, "mode %s skips messages from before the group's first pop", mode)
	}
	all := tb.pop(t, queue.PopRequest{Queue: "subs", ConsumerGroup: "g-all", AutoAck: true})
	require.Equal(t, []string{"old"}, txids(all.Messages), "the default mode reads history")

	tb.push(t, item("subs", "", "fresh", `2`))
	for _, mode := range []string{"new", "new-only", "new_only", "NewOnly"} {
		res := tb.pop(t, queue.PopRequest{Queue: "subs", ConsumerGroup: "g-" + mode, AutoAck: true})
		require.Equal(t, []string{"fresh"}, txids(res.Messages), "mode %s", mode)
	}
}

// A group's first pop fixes where "new" starts: when that pop arrived, even if it
// parked on a queue or partition that did not exist yet and claims only when a push
// wakes it. The message that woke it is new to the group.
func TestSubscriptionNewStartsWhenThePopArrived(t *testing.T) {
	t.Parallel()
	// A re-check interval far beyond the test's life: only a wake-up can deliver.
	tb := setup(t, slowPolls(time.Hour))
	tb.configure(t, "subs-arrived-p", nil) // the queue exists, the partition not yet
	for _, tc := range []struct {
		name string
		req  queue.PopRequest
	}{
		{"ModeNewQueueMissing", queue.PopRequest{Queue: "subs-arrived-new", SubscriptionMode: "new"}},
		{"FromNowQueueMissing", queue.PopRequest{Queue: "subs-arrived-now", SubscriptionFrom: "now"}},
		{"ModeNewPartitionMissing", queue.PopRequest{Queue: "subs-arrived-p", Partition: "later", SubscriptionMode: "new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.ConsumerGroup, req.Wait, req.Timeout, req.AutoAck = "g-"+tc.name, true, 30*time.Minute, true
			require.NoError(t, tb.b.NormalizePop(&req))
			got := make(chan queue.PopResult, 1)
			go func() {
				res, err := tb.b.Pop(context.Background(), req)
				if err != nil {
					panic(err)
				}
				got <- res
			}()
			require.Eventually(t, func() bool { return tb.b.ParkedPolls() == 1 }, 10*time.Second, 5*time.Millisecond)
			tb.push(t, item(req.Queue, req.Partition, "woke-"+tc.name, `1`))
			select {
			case res := <-got:
				require.Equal(t, []string{"woke-" + tc.name}, txids(res.Messages))
			case <-time.After(20 * time.Second):
				t.Fatal("the parked pop did not deliver the message that woke it")
			}
		})
	}
}

func TestMultiPartitionPopSharesOneLeaseAndCapsTheBatch(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, p := range []string{"p1", "p2", "p3"} {
		tb.push(t, item("multi", p, p+"-a", `1`), item("multi", p, p+"-b", `2`))
	}
	res := tb.pop(t, queue.PopRequest{Queue: "multi", Partitions: 3, Batch: 5})
	require.Len(t, res.Messages, 5, "batch caps the total across partitions")
	require.Equal(t, 3, res.PartitionsClaimed)
	seen := map[string]bool{}
	for _, m := range res.Messages {
		seen[m.Partition] = true
	}
	require.Len(t, seen, 3)

	ext, err := tb.b.ExtendLease(context.Background(), queue.Scope{}, res.LeaseID, 120)
	require.NoError(t, err)
	require.True(t, ext.Success, ext.Error)

	var acks []queue.Ack
	for _, m := range res.Messages {
		acks = append(acks, ackOf(m, res.LeaseID, queue.AckCompleted))
	}
	for _, r := range tb.ack(t, "", acks...) {
		require.True(t, r.Success, r.Error)
	}
	rest := tb.pop(t, queue.PopRequest{Queue: "multi", Partitions: 3, Batch: 10})
	require.Len(t, rest.Messages, 1, "every partition's lease was released by its acks; one message is left")

	gone, err := tb.b.ExtendLease(context.Background(), queue.Scope{}, res.LeaseID, 60)
	require.NoError(t, err)
	require.False(t, gone.Success)
	require.Equal(t, "Lease not found", gone.Error)
}

func TestQueueOptionsAreEnforced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("RetryDelayHoldsBackRedelivery", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.configure(t, "rdelay", func(o *queue.Options) { o.RetryDelay = 1500 })
		tb.push(t, item("rdelay", "", "m1", `1`))
		res := tb.pop(t, queue.PopRequest{Queue: "rdelay"})
		failedAt := time.Now()
		acks := tb.ack(t, "", ackOf(res.Messages[0], res.LeaseID, queue.AckFailed))
		require.True(t, acks[0].Success)
		require.Empty(t, tb.pop(t, queue.PopRequest{Queue: "rdelay"}).Messages, "not redelivered before retryDelay")
		var again queue.PopResult
		require.Eventually(t, func() bool {
			again = tb.pop(t, queue.PopRequest{Queue: "rdelay"})
			return len(again.Messages) == 1
		}, 10*time.Second, 50*time.Millisecond)
		require.GreaterOrEqual(t, time.Since(failedAt), 1500*time.Millisecond)
	})

	t.Run("DefaultRetryHasNoDelay", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.push(t, item("rnow", "", "m1", `1`))
		res := tb.pop(t, queue.PopRequest{Queue: "rnow"})
		tb.ack(t, "", ackOf(res.Messages[0], res.LeaseID, queue.AckFailed))
		require.Len(t, tb.pop(t, queue.PopRequest{Queue: "rnow"}).Messages, 1, "upstream behaviour: immediate redelivery")
	})

	t.Run("MaxSizeRefusesItemsBeyondCapacity", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.configure(t, "small", func(o *queue.Options) { o.MaxSize = 2 })
		res := tb.push(t, item("small", "", "a", `1`), item("small", "p2", "b", `2`), item("small", "", "c", `3`), item("small", "", "a", `4`))
		require.Equal(t, queue.StatusQueued, res[0].Status)
		require.Equal(t, queue.StatusQueued, res[1].Status)
		require.Equal(t, queue.StatusFailed, res[2].Status)
		require.Contains(t, res[2].Error, "maxSize")
		require.Equal(t, queue.StatusDuplicate, res[3].Status, "a duplicate of a stored message is still a duplicate")
		qi, err := tb.b.QueueGet(ctx, "small")
		require.NoError(t, err)
		require.EqualValues(t, 2, qi.Totals.Total)
	})

	t.Run("TTLExpiresOldMessages", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.configure(t, "ttl", func(o *queue.Options) { o.TTL = 1 })
		tb.push(t, item("ttl", "", "old", `1`))
		probe := 0
		require.Eventually(t, func() bool {
			probe++ // a fresh group each time: it would read "old" while it is alive
			group := fmt.Sprintf("probe-%d", probe)
			return len(tb.pop(t, queue.PopRequest{Queue: "ttl", ConsumerGroup: group, AutoAck: true}).Messages) == 0
		}, 10*time.Second, 100*time.Millisecond, "the message expires after its ttl")
		tb.push(t, item("ttl", "", "new", `2`))
		res := tb.pop(t, queue.PopRequest{Queue: "ttl", Batch: 10})
		require.Equal(t, []string{"new"}, txids(res.Messages), "expired messages are skipped, order kept")
	})

	t.Run("EncryptionNeedsAKey", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		opts := queue.DefaultOptions()
		opts.EncryptionEnabled = true
		_, _, err := tb.b.Configure(ctx, queue.Queue{Name: "secret", Options: opts})
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "options.encryptionEnabled", ve.Field)
	})
}

func TestEncryptionAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sealer, err := encryption.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	url := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: url, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	b := broker.New(withConfig(func(c *broker.Config) { c.Sealer = sealer }), st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tb := &testBundle{b: b}

	opts := queue.DefaultOptions()
	opts.EncryptionEnabled = true
	_, _, err = b.Configure(ctx, queue.Queue{Name: "vault", Options: opts})
	require.NoError(t, err)
	tb.push(t, item("vault", "", "s1", `{"card":"4111"}`))
	tb.push(t, item("plain", "", "p1", `{"card":"4111"}`))

	raw := rawPayloads(t, url)
	require.NotContains(t, raw["s1"], "4111", "stored encrypted")
	require.Contains(t, raw["s1"], "authTag")
	require.Contains(t, raw["p1"], "4111", "other queues stay plaintext")

	res := tb.pop(t, queue.PopRequest{Queue: "vault", AutoAck: true})
	require.JSONEq(t, `{"card":"4111"}`, string(res.Messages[0].Payload), "decrypted on pop")
}
