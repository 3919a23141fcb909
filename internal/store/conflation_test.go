package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestConflation holds the store's last-value delivery to its rules: a conflating
// group gets the newest visible message of each claimed partition under a lease that
// spans every message from its cursor, whose ack moves the cursor past them all and
// counts the ones skipped; a nack redelivers the newest (a newer one if one came), a
// dead letter files the delivered message and moves past it; the claim width is the
// caller's partitions, else its batch, within 1..64; subscriptionMode all gives one
// message per partition from history; queue mode has no policy.
func TestConflation(t *testing.T) {
	t.Parallel()
	st, db := openStore(t, 8)
	ctx := t.Context()
	ids := queue.NewIDGenerator()
	push := func(t *testing.T, q, partition string, payloads ...int) {
		t.Helper()
		for _, p := range payloads { // one push each: each message its own timestamp
			_, err := st.MessageInsertBatch(ctx, []queue.PushItem{{Queue: q, Partition: partition,
				TransactionID: ids.New(), MessageID: ids.New(), Payload: fmt.Appendf(nil, "%d", p)}})
			require.NoError(t, err)
		}
	}
	on := true
	claim := func(t *testing.T, q, group string, batch int, lease string) queue.Claim {
		t.Helper()
		c, err := st.Claim(ctx, queue.PopRequest{Queue: q, ConsumerGroup: group, Batch: batch, Partitions: 1,
			SubscriptionMode: "all", Conflation: &on}, lease)
		require.NoError(t, err)
		return c
	}
	ack := func(t *testing.T, group, lease, status string, m queue.Message) queue.AckResult {
		t.Helper()
		res, err := st.MessageAckBatch(ctx, group, []queue.Ack{{TransactionID: m.TransactionID,
			PartitionID: m.PartitionID, LeaseID: lease, Status: status}})
		require.NoError(t, err)
		require.Len(t, res, 1)
		return res[0]
	}
	payloads := func(c queue.Claim) map[string]string {
		out := map[string]string{}
		for _, m := range c.Messages {
			out[m.Partition] = string(m.Payload)
		}
		return out
	}

	t.Run("TheNewestUnderALeaseSpanningTheRest", func(t *testing.T) {
		t.Parallel()
		push(t, "cf-span", "a", 1, 2, 3, 4, 5)
		push(t, "cf-span", "b", 11, 12)
		c := claim(t, "cf-span", "g", 10, "L1")
		require.True(t, c.Conflation)
		require.False(t, c.ConflationConflict)
		require.Equal(t, map[string]string{"a": "5", "b": "12"}, payloads(c))
		require.Equal(t, map[string]int{"a": 5, "b": 2}, leasedBatches(t, db, "cf-span", "g"))

		for _, m := range c.Messages {
			r := ack(t, "g", "L1", queue.AckCompleted, m)
			require.True(t, r.Success, r.Error)
			require.True(t, *r.LeaseReleased)
			require.NotNil(t, r.Conflated)
			require.Equal(t, map[string]int{"a": 4, "b": 1}[m.Partition], *r.Conflated)
		}
		require.Equal(t, map[string]int{"a": 0, "b": 0}, leasedBatches(t, db, "cf-span", "g"))
		require.Empty(t, claim(t, "cf-span", "g", 10, "L2").Messages, "everything before the newest was skipped")

		// The group's own policy goes for every consumer: one that does not ask is
		// served conflated, one that asks for none too (and is told).
		push(t, "cf-span", "a", 6, 7)
		off := false
		c, err := st.Claim(ctx, queue.PopRequest{Queue: "cf-span", ConsumerGroup: "g", Batch: 10, Partitions: 1,
			Conflation: &off}, "L3")
		require.NoError(t, err)
		require.True(t, c.Conflation)
		require.True(t, c.ConflationConflict)
		require.Equal(t, map[string]string{"a": "7"}, payloads(c))
	})

	t.Run("MessagesAfterTheClaimStayPending", func(t *testing.T) {
		t.Parallel()
		push(t, "cf-later", "p", 1, 2, 3)
		c := claim(t, "cf-later", "g", 1, "L1")
		require.Equal(t, map[string]string{"p": "3"}, payloads(c))
		push(t, "cf-later", "p", 4)
		r := ack(t, "g", "L1", queue.AckCompleted, c.Messages[0])
		require.Equal(t, 2, *r.Conflated)
		c = claim(t, "cf-later", "g", 1, "L2")
		require.Equal(t, map[string]string{"p": "4"}, payloads(c))
		r = ack(t, "g", "L2", queue.AckCompleted, c.Messages[0])
		require.Equal(t, 0, *r.Conflated, "the message right after the cursor: nothing skipped")
	})

	t.Run("ANackRedeliversTheNewest", func(t *testing.T) {
		t.Parallel()
		push(t, "cf-nack", "p", 1, 2, 3)
		c := claim(t, "cf-nack", "g", 1, "L1")
		require.Equal(t, map[string]string{"p": "3"}, payloads(c))
		r := ack(t, "g", "L1", queue.AckFailed, c.Messages[0])
		require.True(t, r.Success, r.Error)
		require.Nil(t, r.Conflated, "a nack skips nothing")
		push(t, "cf-nack", "p", 4)
		c = claim(t, "cf-nack", "g", 1, "L2")
		require.Equal(t, map[string]string{"p": "4"}, payloads(c))
		require.Equal(t, 1, c.Messages[0].RetryCount, "the partition's retry budget is charged")
		require.Equal(t, map[string]int{"p": 4}, leasedBatches(t, db, "cf-nack", "g"))
	})

	t.Run("ADeadLetterFilesTheDeliveredMessage", func(t *testing.T) {
		t.Parallel()
		push(t, "cf-dlq", "p", 1, 2, 3)
		c := claim(t, "cf-dlq", "g", 1, "L1")
		r := ack(t, "g", "L1", queue.AckDLQ, c.Messages[0])
		require.True(t, r.Success, r.Error)
		require.True(t, r.DLQ)
		var dead []string
		rows, err := db.Query(ctx, `SELECT message_id::text FROM queen.dead_letter_queue d
			JOIN queen.partitions p ON p.id = d.partition_id JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = 'cf-dlq'`)
		require.NoError(t, err)
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			dead = append(dead, id)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{c.Messages[0].ID}, dead)
		require.Empty(t, claim(t, "cf-dlq", "g", 1, "L2").Messages, "the cursor moved past it")
	})

	t.Run("Width", func(t *testing.T) {
		t.Parallel()
		for p := range 70 {
			push(t, "cf-wide", fmt.Sprintf("p%02d", p), p, 100+p)
		}
		c := claim(t, "cf-wide", "g", 200, "L1")
		require.Len(t, c.Messages, queue.MaxConflatePartitions, "the batch, at most 64")
		for _, m := range c.Messages {
			var n int
			_, err := fmt.Sscan(string(m.Payload), &n)
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, 100, "the newest of %s", m.Partition)
		}
		c, err := st.Claim(ctx, queue.PopRequest{Queue: "cf-wide", ConsumerGroup: "h", Batch: 200, Partitions: 3,
			PartitionsSet: true, SubscriptionMode: "all", Conflation: &on}, "L2")
		require.NoError(t, err)
		require.Len(t, c.Messages, 3, "the partitions asked for")
		c, err = st.Claim(ctx, queue.PopRequest{Queue: "cf-wide", ConsumerGroup: "k", Batch: 2, Partitions: 1,
			SubscriptionMode: "all", Conflation: &on}, "L3")
		require.NoError(t, err)
		require.Len(t, c.Messages, 2, "partitions not set: the batch")
	})

	t.Run("QueueModeHasNoPolicy", func(t *testing.T) {
		t.Parallel()
		push(t, "cf-qmode", "p", 1, 2)
		c, err := st.Claim(ctx, queue.PopRequest{Queue: "cf-qmode", ConsumerGroup: queue.QueueModeGroup, Batch: 5,
			Partitions: 1}, "L1")
		require.NoError(t, err)
		require.False(t, c.Conflation)
		require.Len(t, c.Messages, 2)
		var n int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM queen.consumer_group_policies gp
			JOIN queen.queues q ON q.id = gp.queue_id WHERE q.name = 'cf-qmode'`).Scan(&n))
		require.Zero(t, n)
	})

	t.Run("AGroupsFirstPopStoresItsPolicy", func(t *testing.T) {
		t.Parallel()
		push(t, "cf-first", "p", 1)
		for _, g := range []string{"asked", "silent"} {
			var c *bool
			if g == "asked" {
				c = &on
			}
			_, err := st.Claim(ctx, queue.PopRequest{Queue: "cf-first", ConsumerGroup: g, Batch: 1, Partitions: 1,
				Conflation: c}, ids.New())
			require.NoError(t, err)
		}
		got, err := st.ConflatingGroups(ctx, queue.Scope{}, "asked")
		require.NoError(t, err)
		require.True(t, got[queue.GroupQueue{Group: "asked", Queue: "cf-first"}])
		got, err = st.ConflatingGroups(ctx, queue.Scope{}, "silent")
		require.NoError(t, err)
		require.False(t, got[queue.GroupQueue{Group: "silent", Queue: "cf-first"}])
		stored := policies(t, ctx, db, "cf-first")
		require.Equal(t, map[string]bool{"asked": true, "silent": false}, stored)
		_, err = st.ConsumerGroupDelete(ctx, queue.Scope{}, "asked", "cf-first", false)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"silent": false}, policies(t, ctx, db, "cf-first"))
	})
}

// leasedBatches returns, by partition, the batch size of group's cursor rows on q (0
// when not leased).
func leasedBatches(t *testing.T, db *pgxpool.Pool, q, group string) map[string]int {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT p.name::text, coalesce(c.batch_size, 0)
		FROM queen.partition_consumers c JOIN queen.partitions p ON p.id = c.partition_id
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND c.consumer_group = $2`, q, group)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		require.NoError(t, rows.Scan(&name, &n))
		out[name] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// policies returns the stored conflation policies of q's groups.
func policies(t *testing.T, ctx context.Context, db *pgxpool.Pool, q string) map[string]bool {
	t.Helper()
	rows, err := db.Query(ctx, `SELECT gp.consumer_group::text, gp.conflation FROM queen.consumer_group_policies gp
		JOIN queen.queues q ON q.id = gp.queue_id WHERE q.name = $1`, q)
	require.NoError(t, err)
	out := map[string]bool{}
	for rows.Next() {
		var g string
		var c bool
		require.NoError(t, rows.Scan(&g, &c))
		out[g] = c
	}
	require.NoError(t, rows.Err())
	return out
}
