package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// Partitions whose messages were deleted before a group consumed them (retention,
// eviction, an admin's delete) hold nothing for it: the first pop that looks at one
// drops its ready row, and a message waiting elsewhere is delivered by that same pop,
// however many such partitions there are.
func TestPopsPassPartitionsWhoseMessagesWereDeleted(t *testing.T) {
	t.Parallel()
	cb := setupCombine(t, time.Millisecond)
	const q = "emptied"
	var items []queue.PushItem
	for i := range 100 {
		items = append(items, item(q, fmt.Sprintf("p%03d", i), fmt.Sprintf("m%03d", i), `1`))
	}
	cb.push(t, items...)
	// Both groups register (their wildcard pops seed a ready row per partition) and
	// take nothing yet.
	for _, g := range []string{"", "g"} {
		first := cb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
		require.Len(t, first.Messages, 1)
		r := cb.ack(t, g, ackOf(first.Messages[0], first.LeaseID, queue.AckRetry))[0]
		require.True(t, r.Success, r.Error)
	}
	_, err := cb.db.Exec(t.Context(), `DELETE FROM queen.messages`) // as the retention job would
	require.NoError(t, err)

	cb.push(t, item(q, "fresh", "waiting", `2`))
	for _, g := range []string{"", "g"} {
		got := cb.pop(t, queue.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, AutoAck: true})
		require.Equal(t, []string{"waiting"}, txids(got.Messages), "group %q", g)
		var stale int
		require.NoError(t, cb.db.QueryRow(t.Context(), `SELECT count(*) FROM queen.partition_ready r
			JOIN queen.partitions p ON p.id = r.partition_id WHERE r.consumer_group = coalesce(nullif($1, ''), '__QUEUE_MODE__')
			AND p.name <> 'fresh'`, g).Scan(&stale))
		require.Zero(t, stale, "the emptied partitions' ready rows are gone")
	}
}
