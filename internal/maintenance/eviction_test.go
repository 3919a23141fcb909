package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/queue"
)

// Eviction never deletes what a consumer holds: a partition a pop is claiming (its
// claim key held, as a pop holds it until it commits) is skipped, and so is one with a
// live lease; the same partition is evicted once neither holds.
func TestEvictionSkipsPartitionsBeingClaimedOrLeased(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, q := range []string{"ev-claimed", "ev-leased"} {
		tb.configure(t, q, func(o *queue.Options) { o.MaxWaitTimeSeconds = 60 })
		tb.push(t, q, 3)
	}
	leased := tb.consume(t, "ev-leased", "g", 1, "") // leased for 300 s, not acked
	jobs := maintenance.Jobs(tb.st, tb.settings())
	tb.advance(2 * time.Minute)

	// A pop in the middle of its claim on ev-claimed's partition (which it holds in share
	// mode, as every pop does).
	conn, err := tb.pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
	var locked bool
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT pg_try_advisory_xact_lock_shared(queen.pop_claim_key(p.id))
		FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'ev-claimed'`).Scan(&locked))
	require.True(t, locked)

	require.Zero(t, run(t, job(t, jobs, maintenance.JobEviction)).Rows, "nothing is evicted under a claim or a lease")
	require.Equal(t, 3, tb.messages(t, "ev-claimed"))
	require.Equal(t, 3, tb.messages(t, "ev-leased"))

	require.NoError(t, tx.Commit(t.Context())) // the claim is over
	require.EqualValues(t, 3, run(t, job(t, jobs, maintenance.JobEviction)).Rows)
	require.Zero(t, tb.messages(t, "ev-claimed"))
	require.Equal(t, 3, tb.messages(t, "ev-leased"), "the lease still protects its partition")

	// The leased message can still be acked.
	out, err := tb.b.Ack(t.Context(), queue.Scope{}, "g", []queue.Ack{{TransactionID: leased[0].TransactionID,
		PartitionID: leased[0].PartitionID, Status: queue.AckCompleted}})
	require.NoError(t, err)
	require.True(t, out[0].Success, out[0].Error)
}
