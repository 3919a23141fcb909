package httpapi

import (
	"net/http"
	"testing"

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

	r := b.get(t, "/api/v1/resources/queues/dp-none/depth")
	requireStatus(t, http.StatusNotFound, r)
	require.Equal(t, "Queue not found", r.object(t)["error"])
}
