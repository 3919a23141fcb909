package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// A group that starts from its subscription (a timestamp, or "new" after its cursors
// were deleted) on a partition with older messages acks its batches under the pop's
// lease like any other group: the older messages are not part of the leased batch.
func TestASubscribedGroupAcksItsBatchesUnderTheLease(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	const q = "subs-ack"
	tb.push(t, item(q, "p", "old-1", `1`), item(q, "p", "old-2", `2`))
	peek := tb.pop(t, queue.PopRequest{Queue: q, Partition: "p", ConsumerGroup: "peek", Batch: 10, AutoAck: true})
	require.Equal(t, []string{"old-1", "old-2"}, txids(peek.Messages))
	from := peek.Messages[1].CreatedAt.Add(time.Microsecond).UTC().Format(time.RFC3339Nano)
	tb.push(t, item(q, "p", "new-1", `3`), item(q, "p", "new-2", `4`), item(q, "p", "new-3", `5`))

	popFrom := func(t *testing.T, group string, batch int) queue.PopResult {
		t.Helper()
		res := tb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: group, SubscriptionFrom: from, Batch: batch})
		require.Equal(t, []string{"new-1", "new-2", "new-3"}[:batch], txids(res.Messages))
		return res
	}

	t.Run("TheBatch", func(t *testing.T) {
		res := popFrom(t, "g-batch", 3)
		var acks []queue.Ack
		for _, m := range res.Messages {
			acks = append(acks, ackOf(m, res.LeaseID, queue.AckCompleted))
		}
		for _, r := range tb.ack(t, "g-batch", acks...) {
			require.True(t, r.Success, r.Error)
		}
		require.Empty(t, tb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g-batch"}).Messages,
			"the batch is consumed and the older messages stay behind the subscription")
	})

	t.Run("OneAtATimeKeepsTheLeaseUntilTheLast", func(t *testing.T) {
		res := popFrom(t, "g-single", 3)
		for i, m := range res.Messages {
			r := tb.ack(t, "g-single", ackOf(m, res.LeaseID, queue.AckCompleted))[0]
			require.True(t, r.Success, r.Error)
			if i < 2 {
				require.Empty(t, tb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g-single"}).Messages,
					"the lease is kept after %d of 3 acks", i+1)
			}
		}
		tb.push(t, item(q, "p", "new-4", `6`))
		next := tb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g-single", AutoAck: true})
		require.Equal(t, []string{"new-4"}, txids(next.Messages))
	})

	t.Run("ADeadLetter", func(t *testing.T) {
		res := popFrom(t, "g-dlq", 1)
		r := tb.ack(t, "g-dlq", ackOf(res.Messages[0], res.LeaseID, queue.AckDLQ))[0]
		require.True(t, r.Success, r.Error)
		require.True(t, r.DLQ)
	})

	t.Run("AfterItsCursorsWereDeleted", func(t *testing.T) {
		first := tb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g-new", SubscriptionMode: "new", AutoAck: true})
		require.Empty(t, first.Messages, "a new group skips what is there")
		tb.push(t, item(q, "p", "after-new", `7`))
		_, err := tb.b.ConsumerGroupDelete(ctx, queue.Scope{}, "g-new", q, false)
		require.NoError(t, err)
		res := tb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g-new", Batch: 10})
		require.Equal(t, []string{"after-new"}, txids(res.Messages), "the kept subscription still holds")
		r := tb.ack(t, "g-new", ackOf(res.Messages[0], res.LeaseID, queue.AckCompleted))[0]
		require.True(t, r.Success, r.Error)
	})
}

// A subscription from a message's own timestamp includes that message, also when the
// group's first claim finds it not yet due (delayedProcessing) and stores the
// subscription as its cursor.
func TestASubscriptionAtAMessagesTimestampKeepsIt(t *testing.T) {
	t.Parallel()
	cb := setupCombine(t, time.Millisecond)
	ctx := context.Background()
	const q = "subs-at"
	set := func(delay int) {
		_, _, err := cb.b.ConfigureEdit(ctx, queue.ConfigureEdit{Name: q,
			ApplyFunc: func(o *queue.Options) { o.DelayedProcessing = delay }, Keys: []string{"delayedProcessing"}})
		require.NoError(t, err)
	}
	set(600)
	cb.push(t, item(q, "", "before", `1`))
	cb.push(t, item(q, "", "at", `2`))
	var at time.Time
	require.NoError(t, cb.db.QueryRow(t.Context(), `SELECT created_at FROM queen.messages WHERE transaction_id = 'at'`).Scan(&at))
	from := at.UTC().Format(time.RFC3339Nano)
	require.Empty(t, cb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g", SubscriptionFrom: from}).Messages, "not due yet")
	set(0)
	got := cb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: "g", Batch: 10, AutoAck: true})
	require.Equal(t, []string{"at"}, txids(got.Messages))
}
