package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueueDepth: the backlog against a group's cursor or the lowest cursor, with
// leased messages as processing.
func TestQueueDepth(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	for _, tx := range []string{"a1", "a2", "a3"} {
		b.pushed(t, "dp-q", "pa", tx, `1`)
	}
	b.pushed(t, "dp-q", "pb", "b1", `1`)
	b.pushed(t, "dp-q", "pb", "b2", `1`)
	// g: completes a1 in pa, then leases a2 and a3.
	b.ack(t, b.popPartition(t, "dp-q", "pa", "g", 1)[0], "g", "completed", "")
	b.popPartition(t, "dp-q", "pa", "g", 2)

	depth := func(t *testing.T, query string) map[string]any {
		t.Helper()
		return b.list(t, "/api/v1/resources/queues/dp-q/depth"+query)
	}
	part := func(d map[string]any, name string) map[string]any {
		for _, p := range d["partitions"].([]any) {
			if pm := p.(map[string]any); pm["partition"] == name {
				return pm
			}
		}
		return nil
	}

	g := depth(t, "?group=g")
	require.Equal(t, map[string]any{"partition": "pa", "pending": 2.0, "processing": 2.0, "ready": 0.0}, part(g, "pa"))
	require.Equal(t, map[string]any{"partition": "pb", "pending": 2.0, "processing": 0.0, "ready": 2.0}, part(g, "pb"),
		"no cursor in pb: the whole range")
	require.Equal(t, "g", g["group"])
	for k, v := range map[string]any{"queue": "dp-q", "pending": 4.0, "processing": 2.0, "ready": 2.0, "partitionsPending": 2.0,
		"partitionsReady": 1.0, "conflation": false, "effectivePending": 4.0, "effectiveReady": 2.0} {
		require.Equal(t, v, g[k], k)
	}

	// Without a group: the lowest cursor of the groups that consumed the partition.
	all := depth(t, "")
	require.Nil(t, all["group"])
	require.Equal(t, 2.0, part(all, "pa")["pending"])
	require.Equal(t, 4.0, all["pending"])

	// Queue mode starts on pa: its cursor, before a1, is now the lowest.
	first := b.popPartition(t, "dp-q", "pa", "", 1)[0]
	require.Equal(t, map[string]any{"partition": "pa", "pending": 3.0, "processing": 1.0, "ready": 2.0}, part(depth(t, ""), "pa"))
	b.ack(t, first, "", "completed", "")
	require.Equal(t, 2.0, part(depth(t, ""), "pa")["pending"], "once every group is past a1")

	requireStatus(t, http.StatusOK, b.get(t, "/api/v1/resources/queues/dp-q/depth?group=fresh"))
	require.Equal(t, 5.0, depth(t, "?group=fresh")["pending"], "a group without cursors owes everything")

	// A subscribed group owes what came after its subscription where it has no cursor,
	// as its pops and its lag count.
	b.pushed(t, "dp-sub", "pa", "old-a", `1`)
	b.pushed(t, "dp-sub", "pb", "old-b", `1`)
	requireStatus(t, http.StatusNoContent, b.get(t, "/api/v1/pop/queue/dp-sub?consumerGroup=gs&subscriptionMode=new"))
	b.pushed(t, "dp-sub", "pa", "new-a", `1`)
	b.pushed(t, "dp-sub", "pb", "new-b", `1`)
	// Its cursors go, its subscription stays (as after a group delete keeping metadata).
	requireStatus(t, http.StatusOK, b.do(t, http.MethodDelete, "/api/v1/consumer-groups/gs/queues/dp-sub?deleteMetadata=false", ""))
	sub := b.list(t, "/api/v1/resources/queues/dp-sub/depth?group=gs")
	require.Equal(t, 2.0, sub["pending"], "only what came after the subscription: %v", sub)
	require.Equal(t, 4.0, b.list(t, "/api/v1/resources/queues/dp-sub/depth?group=other")["pending"])

	// Messages past the queue's ttl are never delivered: the group owes nothing.
	b.configure(t, "dp-ttl", `{"ttl":1}`)
	b.pushed(t, "dp-ttl", "pa", "t1", `1`)
	require.Eventually(t, func() bool {
		return b.list(t, "/api/v1/resources/queues/dp-ttl/depth?group=gt")["pending"] == 0.0
	}, 20*time.Second, 50*time.Millisecond, "the expired message stays counted")

	r := b.get(t, "/api/v1/resources/queues/dp-none/depth")
	requireStatus(t, http.StatusNotFound, r)
	require.Equal(t, "Queue not found", r.object(t)["error"])
}
