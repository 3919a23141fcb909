package daemon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// leasedBatch pushes n messages (payloads "m-0" …) to q/partition in one request and
// pops them all under one lease.
func leasedBatch(t *testing.T, tb *testBundle, q, partition string, n int) *api.PopResponse {
	t.Helper()
	push(t, tb, q, partition, strs("m", 0, n)...)
	got, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: partition, Batch: n})
	require.NoError(t, err)
	require.Equal(t, strs("m", 0, n), payloads(t, got.Messages))
	require.NotEmpty(t, got.LeaseID)
	return got
}

func ackItem(lease *api.PopResponse, i int, status string) api.AckItem {
	m := lease.Messages[i]
	return api.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease.LeaseID, Status: status}
}

func ackOne(t *testing.T, tb *testBundle, lease *api.PopResponse, i int, status string) api.AckResult {
	t.Helper()
	it := ackItem(lease, i, status)
	res, err := tb.client.Ack(ctxT(t), api.AckRequest{TransactionID: it.TransactionID, PartitionID: it.PartitionID,
		LeaseID: it.LeaseID, Status: it.Status})
	require.NoError(t, err)
	return res
}

// TestHazardMixedBatchAckSkipsMessage: upstream checks the lease
// once, before applying a batch ack, so [m0 completed, m1 failed, m2 completed]
// moves the cursor to m2 after m1's retry released the lease: m1 is never
// redelivered nor dead-lettered. The acks after the failure must be refused and m1,
// m2 come back, whether the acks travel in one call or one per request.
func TestHazardMixedBatchAckSkipsMessage(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q = "mixed"
	configure(t, tb, q, api.QueueOptions{RetryLimit: api.Int(3), RetryDelay: api.Int(0)})

	check := func(t *testing.T, partition string, results []api.AckResult) {
		t.Helper()
		require.Len(t, results, 3)
		require.True(t, results[0].Success, "m-0 completed: %+v", results[0])
		require.True(t, results[1].Success, "m-1 failed: %+v", results[1])
		require.False(t, results[1].DLQ, "m-1 has retries left")
		require.NotNil(t, results[1].LeaseReleased)
		require.True(t, *results[1].LeaseReleased, "a retry releases the lease")
		require.False(t, results[2].Success, "m-2 completed after the lease was released: %+v", results[2])

		again := popEventually(t, tb, client.PopOptions{Queue: q, Partition: partition, Batch: 10}, 15*time.Second, "redelivery")
		require.Equal(t, strs("m", 1, 3), payloads(t, again.Messages), "redelivery restarts at the failed message")
	}

	t.Run("OneBatchCall", func(t *testing.T) {
		t.Parallel()
		lease := leasedBatch(t, tb, q, "batch", 3)
		res, err := tb.client.AckBatch(ctxT(t), api.AckBatchRequest{Acknowledgments: []api.AckItem{
			ackItem(lease, 0, api.AckStatusCompleted), ackItem(lease, 1, api.AckStatusFailed), ackItem(lease, 2, api.AckStatusCompleted),
		}})
		require.NoError(t, err)
		check(t, "batch", res)
		require.NotNil(t, res[2].Error)
		require.Contains(t, *res[2].Error, "lease released")
	})

	t.Run("OneAckPerRequest", func(t *testing.T) {
		t.Parallel()
		lease := leasedBatch(t, tb, q, "single", 3)
		res := []api.AckResult{
			ackOne(t, tb, lease, 0, api.AckStatusCompleted),
			ackOne(t, tb, lease, 1, api.AckStatusFailed),
			ackOne(t, tb, lease, 2, api.AckStatusCompleted),
		}
		check(t, "single", res)
		require.NotNil(t, res[2].Error)
		require.Contains(t, *res[2].Error, "Invalid or expired lease")
	})
}

// TestHazardCursorMovesBackwards: upstream sets the cursor to
// whatever message is acked, so acking m0 after m2 rewinds it and m1, m2 come back.
// The cursor must only move forward, with or without a leaseId.
func TestHazardCursorMovesBackwards(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q, partition = "backwards", "P"
	lease := leasedBatch(t, tb, q, partition, 3)
	for i, idx := range []int{2, 0, 1} {
		res := ackOne(t, tb, lease, idx, api.AckStatusCompleted)
		require.True(t, res.Success, "ack %d of m-%d: %+v", i, idx, res)
	}

	// Without a leaseId any client may ack: an old message still must not rewind.
	old, err := tb.client.Ack(ctxT(t), api.AckRequest{TransactionID: lease.Messages[0].TransactionID,
		PartitionID: lease.Messages[0].PartitionID})
	require.NoError(t, err)
	require.True(t, old.Success, "%+v", old)

	push(t, tb, q, partition, `"m-3"`)
	next, err := tb.client.Pop(ctxT(t), client.PopOptions{Queue: q, Partition: partition, Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{`"m-3"`}, payloads(t, next.Messages), "nothing already acked comes back")
}

// TestHazardImmediateDLQAfterEarlierDLQ: upstream's retry counter
// belongs to (partition, group) and is not reset by a dead-letter, so once one
// message has been dead-lettered the next failure on the partition is dead-lettered
// at once. Each message must get its retryLimit retries.
func TestHazardImmediateDLQAfterEarlierDLQ(t *testing.T) {
	t.Parallel()

	tb := startBroker(t)
	const q, partition = "dlq-reset", "P"
	configure(t, tb, q, api.QueueOptions{RetryLimit: api.Int(1), RetryDelay: api.Int(0)})
	push(t, tb, q, partition, `"m-0"`, `"m-1"`)

	for _, want := range []string{`"m-0"`, `"m-1"`} {
		for attempt, dlq := range []bool{false, true} {
			got := popEventually(t, tb, client.PopOptions{Queue: q, Partition: partition}, 15*time.Second, "delivery of "+want)
			require.Equal(t, []string{want}, payloads(t, got.Messages))
			res := ackOne(t, tb, got, 0, api.AckStatusFailed)
			require.True(t, res.Success, "%+v", res)
			require.Equal(t, dlq, res.DLQ, "failure %d of %s (retryLimit 1)", attempt+1, want)
		}
	}
	require.Equal(t, 2, sqlInt(t, tb, `SELECT count(*) FROM queen.dead_letter_queue WHERE retry_count = 1`),
		"both messages dead-lettered after one retry each")
}
