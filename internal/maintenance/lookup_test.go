package maintenance_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/maintenance"
	"github.com/queenmq/queen/internal/queue"
)

// TestLookupReconcile breaks the partition lookup the ways an upstream broker leaves it
// (a row missing after a crash between its commit and its lookup update, a row behind
// its partition's head) and checks that the job repairs both on its first cycle, that
// wildcard pops then find the partitions, and that a later miss is repaired by the
// next cycle (the incremental check after the full pass).
func TestLookupReconcile(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := t.Context()
	s := tb.settings()
	s.LookupReconcileInterval, s.LookupReconcileLookback = 5*time.Second, time.Minute
	j := job(t, maintenance.Jobs(tb.st, s), maintenance.JobLookupReconcile)

	// Five partitions of two messages each; the batch size is 2, so the full pass takes
	// three statements.
	var items []queue.PushItem
	for p := range 5 {
		for m := range 2 {
			items = append(items, queue.PushItem{Queue: "lk", Partition: fmt.Sprint("p", p),
				TransactionID: fmt.Sprintf("p%d-m%d", p, m), Payload: json.RawMessage(`1`)})
		}
	}
	_, err := tb.b.Push(ctx, items)
	require.NoError(t, err)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := tb.pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	pid := func(name string) string {
		var id string
		require.NoError(t, tb.pool.QueryRow(ctx, `SELECT p.id::text FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = 'lk' AND p.name = $1`, name).Scan(&id))
		return id
	}
	exec(`DELETE FROM queen.partition_lookup WHERE partition_id = $1`, pid("p1"))
	exec(`UPDATE queen.partition_lookup pl SET (last_message_id, last_message_created_at, updated_at) =
		(m.id, m.created_at, now() - interval '1 day')
		FROM queen.messages m WHERE pl.partition_id = $1 AND m.partition_id = $1 AND m.transaction_id = 'p3-m0'`, pid("p3"))

	res, err := j.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Rows, "one row added, one moved forward")
	require.Equal(t, 4, res.Batches, "three batches of the full pass, then the incremental check")
	var stale int
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT count(*) FROM queen.partitions p
		LEFT JOIN queen.partition_lookup pl ON pl.partition_id = p.id
		LEFT JOIN LATERAL (SELECT m.id FROM queen.messages m WHERE m.partition_id = p.id
		                   ORDER BY m.created_at DESC, m.id DESC LIMIT 1) h ON true
		WHERE pl.last_message_id IS DISTINCT FROM h.id`).Scan(&stale))
	require.Zero(t, stale, "every lookup row holds its partition's head")

	// Wildcard pops now deliver every message of the broken partitions.
	got := map[string]bool{}
	for range 10 {
		req := queue.PopRequest{Queue: "lk", Batch: 10, AutoAck: true}
		require.NoError(t, tb.b.NormalizePop(&req))
		r, err := tb.b.Pop(ctx, req)
		require.NoError(t, err)
		for _, m := range r.Messages {
			got[m.TransactionID] = true
		}
	}
	require.True(t, got["p1-m0"] && got["p1-m1"] && got["p3-m1"], "delivered: %v", got)

	// After the full pass, a new miss is found by the next cycle.
	_, err = tb.b.Push(ctx, []queue.PushItem{{Queue: "lk", Partition: "late", TransactionID: "late-1", Payload: json.RawMessage(`1`)}})
	require.NoError(t, err)
	exec(`DELETE FROM queen.partition_lookup WHERE partition_id = $1`, pid("late"))
	res, err = j.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Rows)
	res, err = j.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Rows, "nothing left to repair: an exact row is not rewritten")
}
