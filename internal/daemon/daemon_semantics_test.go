package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// strs returns `"prefix-from"` … `"prefix-(to-1)"` as JSON string payloads.
func strs(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%q", fmt.Sprintf("%s-%d", prefix, i)))
	}
	return out
}

func TestDaemonFIFOWithinPartition(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "fifo"

	// Three push requests, each interleaving the two partitions.
	for r := range 3 {
		res, err := tb.client.Push(ctxT(t),
			api.PushItem{Queue: q, Partition: "p1", Payload: json.RawMessage(fmt.Sprintf(`"p1-%d"`, 2*r))},
			api.PushItem{Queue: q, Partition: "p2", Payload: json.RawMessage(fmt.Sprintf(`"p2-%d"`, r))},
			api.PushItem{Queue: q, Partition: "p1", Payload: json.RawMessage(fmt.Sprintf(`"p1-%d"`, 2*r+1))},
		)
		require.NoError(t, err)
		for _, it := range res {
			require.Equal(t, api.PushStatusQueued, it.Status)
		}
	}

	first, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p1", Batch: 4})
	require.NoError(t, err)
	require.Equal(t, strs("p1", 0, 4), payloads(t, first.Messages))
	require.NotEmpty(t, first.LeaseID)

	acks := make([]api.AckItem, len(first.Messages))
	for i, m := range first.Messages {
		acks[i] = api.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: first.LeaseID, Status: api.AckStatusCompleted}
	}
	ackRes, err := tb.client.AckBatch(ctxT(t), api.AckBatchRequest{Acknowledgments: acks})
	require.NoError(t, err)
	require.Len(t, ackRes, len(acks))
	for i, r := range ackRes {
		require.True(t, r.Success, "ack %d: %+v", i, r)
	}

	rest, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p1", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, strs("p1", 4, 6), payloads(t, rest.Messages), "the rest of p1, in push order")

	p2, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p2", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, strs("p2", 0, 3), payloads(t, p2.Messages))
}

func TestDaemonPartitionsIndependent(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "parts"
	push(t, tb, q, "p1", strs("a", 1, 3)...)
	push(t, tb, q, "p2", strs("b", 1, 2)...)

	held, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p1"})
	require.NoError(t, err)
	require.Equal(t, []string{`"a-1"`}, payloads(t, held.Messages))
	require.NotEmpty(t, held.LeaseID)

	again, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p1"})
	require.NoError(t, err)
	require.Empty(t, again.Messages, "p1 is leased: its next message waits for the lease")

	other, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q})
	require.NoError(t, err)
	require.Equal(t, []string{`"b-1"`}, payloads(t, other.Messages), "a wildcard pop skips the held partition")

	none, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p2"})
	require.NoError(t, err)
	require.Empty(t, none.Messages, "p2 is now leased too")

	ack, err := tb.client.Ack(ctxT(t), api.AckRequest{
		TransactionID: held.Messages[0].TransactionID, PartitionID: held.Messages[0].PartitionID,
		LeaseID: held.LeaseID, Status: api.AckStatusCompleted,
	})
	require.NoError(t, err)
	require.True(t, ack.Success, "%+v", ack)

	next, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: "p1"})
	require.NoError(t, err)
	require.Equal(t, []string{`"a-2"`}, payloads(t, next.Messages), "acking the batch released p1")
}

func TestDaemonConsumerGroupsFanOut(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "fanout"
	push(t, tb, q, "", strs("m", 0, 4)...)

	for _, group := range []string{"analytics", "billing", ""} {
		got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, ConsumerGroup: group, Batch: 10, AutoAck: true})
		require.NoError(t, err)
		require.Equal(t, strs("m", 0, 4), payloads(t, got.Messages), "group %q gets every message", group)

		again, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, ConsumerGroup: group, Batch: 10, AutoAck: true})
		require.NoError(t, err)
		require.Empty(t, again.Messages, "group %q has consumed everything", group)
	}
}

// TestDaemonQueueModeDeliversOnce runs two concurrent queue-mode consumers that pop
// and ack until every message has been delivered, and requires that each message was
// delivered exactly once in all.
func TestDaemonQueueModeDeliversOnce(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const (
		q          = "work"
		partitions = 6
		perPart    = 10
		total      = partitions * perPart
	)
	var items []api.PushItem
	for i := range total {
		items = append(items, api.PushItem{
			Queue: q, Partition: fmt.Sprintf("p%d", i%partitions),
			TransactionID: fmt.Sprintf("tx-%02d", i), Payload: json.RawMessage(`{}`),
		})
	}
	res, err := tb.client.Push(ctxT(t), items...)
	require.NoError(t, err)
	require.Len(t, res, total)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		delivered atomic.Int64
		wg        sync.WaitGroup
		got       [2][]string
		errs      [2]error
	)
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[c], errs[c] = consume(ctx, tb.client, q, &delivered, total)
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])

	count := make(map[string]int)
	for _, ids := range got {
		for _, id := range ids {
			count[id]++
		}
	}
	require.Len(t, count, total, "every message delivered")
	for id, n := range count {
		require.Equal(t, 1, n, "message %s delivered %d times", id, n)
	}

	left, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Batch: 10})
	require.NoError(t, err)
	require.Empty(t, left.Messages)
	require.Equal(t, total, queueTotals(t, tb, q).Completed)
}

// consume pops (batch 4, short long-polls) and acks in queue mode until delivered
// reaches total, returning the transaction ids it received.
func consume(ctx context.Context, c *client.Client, q string, delivered *atomic.Int64, total int64) ([]string, error) {
	var ids []string
	for delivered.Load() < total {
		if err := ctx.Err(); err != nil {
			return ids, fmt.Errorf("gave up after %d of %d deliveries: %w", delivered.Load(), total, err)
		}
		resp, err := c.Pop(ctx, client.PopOptions{Queue: q, Batch: 4, Wait: true, Timeout: 200 * time.Millisecond})
		if err != nil {
			return ids, fmt.Errorf("pop: %w", err)
		}
		if len(resp.Messages) == 0 {
			continue
		}
		acks := make([]api.AckItem, len(resp.Messages))
		for i, m := range resp.Messages {
			ids = append(ids, m.TransactionID)
			acks[i] = api.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: resp.LeaseID}
		}
		delivered.Add(int64(len(resp.Messages)))
		res, err := c.AckBatch(ctx, api.AckBatchRequest{Acknowledgments: acks})
		if err != nil {
			return ids, fmt.Errorf("ack: %w", err)
		}
		for i, r := range res {
			if !r.Success {
				return ids, fmt.Errorf("ack %s failed: %+v", acks[i].TransactionID, r)
			}
		}
	}
	return ids, nil
}

func TestDaemonPushDeduplicates(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "dedup"

	first, err := tb.client.Push(ctxT(t), api.PushItem{Queue: q, TransactionID: "order-1", Payload: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Equal(t, api.PushStatusQueued, first[0].Status)

	second, err := tb.client.Push(ctxT(t), api.PushItem{Queue: q, TransactionID: "order-1", Payload: json.RawMessage(`{"n":2}`)})
	require.NoError(t, err)
	require.Len(t, second, 1)
	require.Equal(t, api.PushStatusDuplicate, second[0].Status)
	require.Equal(t, first[0].MessageID, second[0].MessageID, "a duplicate carries the stored message's id")

	// Within one request the first occurrence wins.
	same, err := tb.client.Push(ctxT(t),
		api.PushItem{Queue: q, TransactionID: "order-2", Payload: json.RawMessage(`{"n":3}`)},
		api.PushItem{Queue: q, TransactionID: "order-2", Payload: json.RawMessage(`{"n":4}`)},
	)
	require.NoError(t, err)
	require.Len(t, same, 2)
	require.Equal(t, api.PushStatusQueued, same[0].Status)
	require.Equal(t, api.PushStatusDuplicate, same[1].Status)
	require.Equal(t, same[0].MessageID, same[1].MessageID)

	require.Equal(t, 2, queueTotals(t, tb, q).Total, "duplicates are not stored")
	all, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{`{"n":1}`, `{"n":3}`}, payloads(t, all.Messages), "the first write is kept")
	require.Equal(t, "order-1", all.Messages[0].TransactionID)
	require.Equal(t, first[0].MessageID, all.Messages[0].ID)
}
