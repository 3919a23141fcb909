package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/queue"
)

// TestLongPollsListsParkedPops parks pops by queue, group and partition and by
// namespace, and reads them back grouped while they wait; once answered they are gone.
func TestLongPollsListsParkedPops(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, name := range []string{"lp-a", "lp-b"} {
		_, _, err := tb.b.Configure(context.Background(), queue.Queue{Name: name, Namespace: "lp",
			Options: queue.DefaultOptions()})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	before := time.Now()
	popped := make(chan error, 4)
	park := func(req queue.PopRequest) {
		req.Wait, req.Timeout = true, time.Minute
		require.NoError(t, tb.b.NormalizePop(&req))
		go func() {
			_, err := tb.b.Pop(ctx, req)
			popped <- err
		}()
	}
	park(queue.PopRequest{Queue: "lp-a", ConsumerGroup: "g"})
	park(queue.PopRequest{Queue: "lp-a", ConsumerGroup: "g"})
	park(queue.PopRequest{Queue: "lp-a", Partition: "p1"})
	// The namespace pop waits for both queues and counts on each.
	park(queue.PopRequest{Namespace: "lp", ConsumerGroup: "ns"})

	require.Eventually(t, func() bool { return tb.b.ParkedPolls() == 4 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		groups, _ := tb.b.LongPolls("")
		return len(groups) == 4
	}, 10*time.Second, 5*time.Millisecond, "the namespace pop is parked on both queues")
	groups, truncated := tb.b.LongPolls("")
	require.False(t, truncated)
	type row struct {
		queue, group, partition string
		count                   int
	}
	var rows []row
	for _, g := range groups {
		rows = append(rows, row{g.Queue, g.ConsumerGroup, g.Partition, g.Count})
		require.False(t, g.OldestParkedAt.Before(before))
		require.False(t, g.OldestParkedAt.After(time.Now()))
	}
	require.Equal(t, []row{
		{"lp-a", queue.QueueModeGroup, "p1", 1},
		{"lp-a", "g", broker.AnyPartition, 2},
		{"lp-a", "ns", broker.AnyPartition, 1},
		{"lp-b", "ns", broker.AnyPartition, 1},
	}, rows)

	onlyB, _ := tb.b.LongPolls("lp-b")
	require.Len(t, onlyB, 1)
	require.Equal(t, "ns", onlyB[0].ConsumerGroup)

	tb.push(t, queue.PushItem{Queue: "lp-b", Payload: json.RawMessage(`{}`)})
	require.NoError(t, <-popped, "the push to lp-b answers the namespace pop")
	require.Eventually(t, func() bool {
		groups, _ := tb.b.LongPolls("lp-b")
		return len(groups) == 0
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	for range 3 {
		require.ErrorIs(t, <-popped, context.Canceled)
	}
	require.Zero(t, tb.b.ParkedPolls())
	groups, _ = tb.b.LongPolls("")
	require.Empty(t, groups)
}
